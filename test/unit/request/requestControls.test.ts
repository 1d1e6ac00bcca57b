import assert from "node:assert/strict";
import { captureAzureLogs } from "../../support/logCapture.js";
import type { LogCapture } from "../../support/logCapture.js";
import { setImmediate as nextMacrotask } from "node:timers/promises";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { cloneRequestFor } from "../../../src/race/cloneRequest.js";
import { pluginHeaderValue, requestControlHeaders } from "../../../src/cosmos/headers.js";
import {
  requestControlsOf,
  runWithRequestControls,
  setRequestControls,
} from "../../../src/request/requestControls.js";
import { eastUs, pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";

const { excludedRegions: excludedHeader, region: regionHeader, hedging: hedgingHeader } = requestControlHeaders;

function withHeaders(headers: Record<string, string>): PipelineRequest {
  return requestTo(westUs, "GET", "dbs/db/colls/c/docs/1", { headers });
}

function controlHeadersLeft(request: PipelineRequest): string[] {
  return Object.keys(request.headers.toJSON()).filter((name) => name.startsWith("x-cosmos-hedging"));
}


describe("requestControlsOf", function () {
  let warnings: LogCapture;

  beforeEach(function () {
    warnings = captureAzureLogs("warning");
  });

  afterEach(function () {
    warnings.restore();
  });

  it("returns empty controls for a request without control headers or scope", function () {
    const request = pointRead(westUs);
    const controls = requestControlsOf(request);
    assert.deepEqual(controls, {});
    assert.equal(requestControlsOf(request), controls, "the result is remembered");
  });

  it("parses every control header, removes them all and leaves other headers alone", function () {
    const request = withHeaders({
      [excludedHeader]: '["East US","North Europe"]',
      [regionHeader]: '"West US"',
      [hedgingHeader]: '{"threshold":50,"thresholdStep":20}',
      "x-ms-session-token": "0:1#2",
    });
    assert.deepEqual(requestControlsOf(request), {
      excludedRegions: ["East US", "North Europe"],
      region: "West US",
      hedging: { threshold: 50, thresholdStep: 20 },
    });
    assert.deepEqual(controlHeadersLeft(request), []);
    assert.equal(request.headers.get("x-ms-session-token"), "0:1#2");
  });

  it("reads header names in any case", function () {
    const request = withHeaders({ "X-Cosmos-Hedging-Region": '"East US"' });
    assert.deepEqual(requestControlsOf(request), { region: "East US" });
    assert.deepEqual(controlHeadersLeft(request), []);
  });

  it("reads hedging=off in any case and spacing as false", function () {
    assert.deepEqual(requestControlsOf(withHeaders({ [hedgingHeader]: " OFF " })), { hedging: false });
  });

  it("parses a request once: later calls return the first result", function () {
    const request = withHeaders({ [regionHeader]: '"East US"' });
    const first = requestControlsOf(request);
    request.headers.set(regionHeader, '"North Europe"');
    assert.equal(requestControlsOf(request), first);
  });

  it("decodes escaped non-ASCII region names", function () {
    const request = withHeaders({ [excludedHeader]: '["Sud-\\u00c9st \\u6771\\u4eac"]' });
    assert.deepEqual(requestControlsOf(request).excludedRegions, ["Sud-Ést 東京"]);
  });

  type Field = "excludedRegions" | "region" | "hedging";
  const garbage: Array<[string, Field, string, RegExp]> = [
    ["excluded regions that are not JSON", "excludedRegions", "[East US]", /not valid JSON/],
    ["excluded regions that are not an array", "excludedRegions", '"East US"', /not a JSON array/],
    ["an excluded region that is blank", "excludedRegions", '["East US", " "]', /an entry is not a region name/],
    ["too many excluded regions", "excludedRegions", JSON.stringify(Array.from({ length: 257 }, (_, i) => `r${i}`)), /more than 256/],
    ["a region that is not a string", "region", "42", /not a JSON string naming a region/],
    ["hedging that is neither off nor an object", "hedging", "on", /neither "off" nor a JSON object/],
    ["hedging with an unknown field", "hedging", '{"threshold":5,"budget":1}', /other than threshold and thresholdStep/],
    ["hedging with a threshold that is not positive", "hedging", '{"threshold":0}', /threshold is not a positive number/],
    ["hedging with a step that is not a number", "hedging", '{"thresholdStep":"9"}', /thresholdStep is not a positive number/],
  ];
  /** A valid control header to send alongside a bad one, to show that it still applies. */
  const companion: Record<Field, [string, string]> = {
    excludedRegions: [regionHeader, '"East US"'],
    region: [excludedHeader, '["North Europe"]'],
    hedging: [regionHeader, '"East US"'],
  };

  // Warnings are deduplicated for the whole process; the root hooks empty that memory before each test.
  for (const [what, field, value, problem] of garbage) {
    it(`ignores ${what}, removes the header and warns without its value`, function () {
      const header = requestControlHeaders[field];
      const [validHeader, validValue] = companion[field];
      const request = withHeaders({ [header]: value, [validHeader]: validValue });
      const controls = requestControlsOf(request);
      assert.equal(field in controls, false);
      assert.equal(Object.keys(controls).length, 1, "the valid control header still applies");
      assert.deepEqual(controlHeadersLeft(request), []);
      const lines = warnings.lines.filter((line) => line.includes(header));
      assert.equal(lines.length, 1, `one warning: ${warnings.lines.join(" | ")}`);
      assert.match(lines[0]!, problem);
      assert.ok(!lines[0]!.includes(value), "the warning does not repeat the header's value");
    });
  }

  it("warns once per header and problem, however many requests carry it", function () {
    for (let i = 0; i < 3; i++) requestControlsOf(withHeaders({ [regionHeader]: "East US" }));
    const lines = warnings.lines.filter((line) => line.includes(regionHeader));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /not valid JSON/);
  });

  it("never throws, whatever the headers hold", function () {
    for (const value of ["", "{", "[]", "{}", "\"\"", "[null]", "true", "\u00ff\u00fe", "1e309"]) {
      for (const header of [excludedHeader, regionHeader, hedgingHeader]) {
        const request = withHeaders({ [header]: value });
        assert.doesNotThrow(() => requestControlsOf(request));
        assert.deepEqual(controlHeadersLeft(request), []);
      }
    }
  });

  it("gives a hedge arm its original request's controls", function () {
    const original = withHeaders({ [excludedHeader]: '["North Europe"]', [hedgingHeader]: "off" });
    const controls = requestControlsOf(original);
    setRequestControls(original, { ...controls, routing: { exclusionsIgnored: true } });
    const arm = cloneRequestFor(original, eastUs, new AbortController().signal);
    assert.deepEqual(requestControlsOf(arm), { excludedRegions: ["North Europe"], hedging: false, routing: { exclusionsIgnored: true } });
  });

  it("reads a copy's own control headers when it has them", function () {
    const original = withHeaders({ [regionHeader]: '"West US"' });
    const arm = cloneRequestFor(original, eastUs, new AbortController().signal);
    assert.deepEqual(requestControlsOf(arm), { region: "West US" });
    assert.deepEqual(controlHeadersLeft(arm), []);
  });

  describe("setRequestControls", function () {
    it("records controls that requestControlsOf returns", function () {
      const request = pointRead(westUs);
      const controls = { region: "East US" };
      setRequestControls(request, controls);
      assert.equal(requestControlsOf(request), controls);
    });

    it("removes control headers so that they never leave the process", function () {
      const request = withHeaders({ [regionHeader]: '"North Europe"', [hedgingHeader]: "off" });
      setRequestControls(request, { excludedRegions: ["East US"] });
      assert.deepEqual(controlHeadersLeft(request), []);
      assert.deepEqual(requestControlsOf(request), { excludedRegions: ["East US"] });
    });
  });

  describe("the scope of runWithRequestControls", function () {
    it("applies to requests made inside it, across awaits, and not outside", async function () {
      const inside = await runWithRequestControls({ excludedRegions: ["East US"] }, async () => {
        await nextMacrotask();
        return requestControlsOf(pointRead(westUs));
      });
      assert.deepEqual(inside, { excludedRegions: ["East US"] });
      assert.deepEqual(requestControlsOf(pointRead(westUs)), {});
    });

    it("loses to the request's own headers, field by field", function () {
      const controls = runWithRequestControls({ excludedRegions: ["East US"], hedging: false }, () =>
        requestControlsOf(withHeaders({ [hedgingHeader]: '{"threshold":10}', [regionHeader]: '"West US"' })),
      );
      assert.deepEqual(controls, { excludedRegions: ["East US"], hedging: { threshold: 10 }, region: "West US" });
    });

    it("nests: the inner scope adds to the outer one and wins on conflicts", function () {
      const controls = runWithRequestControls({ excludedRegions: ["East US"], hedging: false }, () =>
        runWithRequestControls({ hedging: { thresholdStep: 5 } }, () => requestControlsOf(pointRead(westUs))),
      );
      assert.deepEqual(controls, { excludedRegions: ["East US"], hedging: { thresholdStep: 5 } });
    });

    it("does not reach into a request whose controls were already read", function () {
      const request = pointRead(westUs);
      requestControlsOf(request);
      const controls = runWithRequestControls({ region: "East US" }, () => requestControlsOf(request));
      assert.deepEqual(controls, {});
    });
  });
});

describe("trustworthiness: what users hit", function () {
  describe("the @azure/cosmos request plugin", function () {
    it("adds the SDK's exclusions to the request's own, which an empty SDK list leaves alone", function () {
      const request = pointRead(westUs);
      const own = hedgingRequestOptions({ excludedRegions: ["North Europe"] }).initialHeaders;
      for (const [name, value] of Object.entries(own)) request.headers.set(name, value);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, pluginHeaderValue('["East US"]'));
      assert.deepEqual(requestControlsOf(request).excludedRegions, ["North Europe", "East US"]);
    });

    it("ignores plugin headers the plugin did not write (a caller's initialHeaders): they cannot lift the SDK's exclusions or mark a retry", function () {
      const request = pointRead(westUs);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, "[]");
      request.headers.set(requestControlHeaders.sdkRetry, "retry");
      const controls = requestControlsOf(request);
      assert.equal(controls.sdkOptionsKnown, undefined, "the SDK's options stay unknown, so a withHedging client sends it unhedged");
      assert.equal(controls.sdkRetry, undefined);
      assert.equal(request.headers.has(requestControlHeaders.sdkExcludedRegions), false, "never reaches the wire");
      assert.equal(request.headers.has(requestControlHeaders.sdkRetry), false);
      const forged = pointRead(westUs);
      forged.headers.set(requestControlHeaders.sdkExcludedRegions, `${pluginHeaderValue("[]").slice(0, 10)} []`);
      assert.equal(requestControlsOf(forged).sdkOptionsKnown, undefined, "nor a guess at the plugin's mark");
    });
  });
});
