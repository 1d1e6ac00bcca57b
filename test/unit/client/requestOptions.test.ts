import assert from "node:assert/strict";
import { setImmediate as nextMacrotask } from "node:timers/promises";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import { hedgingRequestOptions, withRequestHedgingOptions } from "../../../src/client/requestOptions.js";
import { requestControlHeaders } from "../../../src/cosmos/headers.js";
import { requestControlsOf } from "../../../src/request/requestControls.js";
import { pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";

/** A request carrying `initialHeaders` as `@azure/cosmos` would send them. */
function requestWith(initialHeaders: Record<string, string | number | boolean>): PipelineRequest {
  const headers = Object.fromEntries(Object.entries(initialHeaders).map(([name, value]) => [name, String(value)]));
  return requestTo(westUs, "GET", "dbs/db/colls/c/docs/1", { headers });
}

/** Calls with a value that the types forbid, as JavaScript callers can. */
function untyped(value: unknown): RequestHedgingOptions {
  return value as RequestHedgingOptions;
}

describe("hedgingRequestOptions", function () {
  it("returns only initialHeaders, and none for empty options", function () {
    assert.deepEqual(hedgingRequestOptions({}), { initialHeaders: {} });
  });

  it("encodes each choice in its control header", function () {
    const { initialHeaders } = hedgingRequestOptions({
      excludedRegions: ["West US", "North Europe"],
      region: "East US",
      hedging: { threshold: 50, thresholdStep: 25 },
    });
    assert.deepEqual(initialHeaders, {
      [requestControlHeaders.excludedRegions]: '["West US","North Europe"]',
      [requestControlHeaders.region]: '"East US"',
      [requestControlHeaders.hedging]: '{"threshold":50,"thresholdStep":25}',
    });
    assert.deepEqual(hedgingRequestOptions({ hedging: false }).initialHeaders, { [requestControlHeaders.hedging]: "off" });
  });

  it("round-trips through the request headers to the same controls", function () {
    const options: RequestHedgingOptions[] = [
      { excludedRegions: ["West US"] },
      { excludedRegions: [] },
      { region: "North Europe", hedging: false },
      { hedging: {} },
      { hedging: { thresholdStep: 7.5 } },
      { excludedRegions: ["Sud-Ést 東京", "😀 Region"], hedging: { threshold: 1 } },
    ];
    for (const option of options) {
      assert.deepEqual(requestControlsOf(requestWith(hedgingRequestOptions(option).initialHeaders)), option);
    }
  });

  it("hands excludedRegions to @azure/cosmos as its own excludedLocations too, and nothing for an empty list", function () {
    const { excludedLocations, initialHeaders } = hedgingRequestOptions({ excludedRegions: ["West US", "North Europe"] });
    assert.deepEqual(excludedLocations, ["West US", "North Europe"]);
    assert.deepEqual(requestControlsOf(requestWith(initialHeaders)), { excludedRegions: ["West US", "North Europe"] });
    assert.equal("excludedLocations" in hedgingRequestOptions({ excludedRegions: [] }), false);
    assert.equal("excludedLocations" in hedgingRequestOptions({ region: "East US" }), false);
  });

  it("keeps header values printable ASCII, whatever the region names", function () {
    const { initialHeaders } = hedgingRequestOptions({ excludedRegions: ["Sud-Ést 東京"], region: "Région \u2028" });
    for (const value of Object.values(initialHeaders)) assert.match(value, /^[\x20-\x7e]*$/);
  });

  it("drops options given as undefined", function () {
    assert.deepEqual(hedgingRequestOptions(untyped({ region: undefined, hedging: undefined })), { initialHeaders: {} });
  });

  const typeErrors: Array<[string, unknown, RegExp]> = [
    ["options that are not an object", "West US", /request hedging options must be an object; got "West US"/],
    ["null options", null, /request hedging options must be an object; got null/],
    ["options that are an array", ["West US"], /request hedging options must be an object; got an array of 1/],
    ["an unknown option", { excludeRegions: ["West US"] }, /Unknown request hedging option "excludeRegions"; expected excludedRegions, region or hedging/],
    ["excludedRegions that is not an array", { excludedRegions: "West US" }, /excludedRegions must be an array of region names; got "West US"/],
    ["an excluded region that is not a string", { excludedRegions: ["West US", 7] }, /excludedRegions\[1\] must be a non-empty region name; got 7/],
    ["an excluded region that is blank", { excludedRegions: [" "] }, /excludedRegions\[0\] must be a non-empty region name; got " "/],
    ["an excluded region with LF", { excludedRegions: ["West US\nx-ms-foo: 1"] }, /excludedRegions\[0\] must not contain CR, LF or another control character; got "West US\\nx-ms-foo: 1"/],
    ["too many excluded regions", { excludedRegions: Array.from({ length: 257 }, (_, i) => `r${i}`) }, /excludedRegions lists 257 regions, more than 256/],
    ["a region that is not a string", { region: 1 }, /region must be a non-empty region name; got 1/],
    ["an empty region", { region: "" }, /region must be a non-empty region name; got ""/],
    ["a region with CR", { region: "East US\r" }, /region must not contain CR, LF or another control character; got "East US\\r"/],
    ["a region that is too long", { region: "x".repeat(129) }, /region is longer than 128 characters/],
    ["a region that is also excluded", { region: "East US", excludedRegions: ["eastus"] }, /region "East US" is also in excludedRegions/],
    ["hedging: true", { hedging: true }, /hedging must be false or an object with threshold and thresholdStep; got true/],
    ["hedging as a string", { hedging: "off" }, /hedging must be false or an object with threshold and thresholdStep; got "off"/],
    ["hedging: null", { hedging: null }, /hedging must be false or an object with threshold and thresholdStep; got null/],
    ["an unknown hedging field", { hedging: { threshold: 5, step: 1 } }, /Unknown hedging option "step"; expected threshold or thresholdStep/],
  ];

  for (const [what, options, message] of typeErrors) {
    it(`rejects ${what} with a TypeError`, function () {
      assert.throws(() => hedgingRequestOptions(untyped(options)), (error: unknown) => {
        assert.ok(error instanceof TypeError, `a TypeError: ${String(error)}`);
        assert.match(error.message, message);
        return true;
      });
    });
  }

  for (const [field, value] of [
    ["threshold", 0],
    ["threshold", -5],
    ["threshold", Number.NaN],
    ["thresholdStep", Number.POSITIVE_INFINITY],
    ["thresholdStep", "100"],
  ] as const) {
    it(`rejects hedging.${field} = ${String(value)} with a RangeError`, function () {
      assert.throws(
        () => hedgingRequestOptions(untyped({ hedging: { [field]: value } })),
        (error: unknown) => {
          assert.ok(error instanceof RangeError);
          assert.match(error.message, new RegExp(`^hedging\\.${field} must be a finite number of milliseconds above 0 and below 2147483647; got ${typeof value === "string" ? `"${value}"` : String(value)}\\.$`));
          return true;
        },
      );
    });
  }

  describe("with your own request options", function () {
    it("merges both initialHeaders and keeps your other options, without changing them", function () {
      const mine = { maxItemCount: 10, initialHeaders: { "x-ms-consistency-level": "Eventual", "x-custom": 1 } };
      const merged = hedgingRequestOptions({ hedging: false }, mine);
      assert.deepEqual(merged, {
        maxItemCount: 10,
        initialHeaders: { "x-ms-consistency-level": "Eventual", "x-custom": 1, [requestControlHeaders.hedging]: "off" },
      });
      assert.deepEqual(mine, { maxItemCount: 10, initialHeaders: { "x-ms-consistency-level": "Eventual", "x-custom": 1 } });
    });

    it("works when you have no initialHeaders", function () {
      assert.deepEqual(hedgingRequestOptions({ region: "East US" }, { sessionToken: "0:1" }), {
        sessionToken: "0:1",
        initialHeaders: { [requestControlHeaders.region]: '"East US"' },
      });
    });

    it("replaces your own copy of a control header it sets, in any case, and keeps the others", function () {
      const merged = hedgingRequestOptions(
        { region: "East US" },
        { initialHeaders: { "X-Cosmos-Hedging-Region": '"West US"', "x-cosmos-hedging": "off" } },
      );
      assert.deepEqual(merged.initialHeaders, { "x-cosmos-hedging": "off", [requestControlHeaders.region]: '"East US"' });
      assert.deepEqual(requestControlsOf(requestWith(merged.initialHeaders)), { region: "East US", hedging: false });
    });

    it("adds excludedRegions to your excludedLocations, each region once whatever its case and spaces, without changing yours", function () {
      const mine = { excludedLocations: ["west us", "East US"], maxItemCount: 5 };
      const merged = hedgingRequestOptions({ excludedRegions: ["WestUS", "North Europe"] }, mine);
      assert.deepEqual(merged.excludedLocations, ["west us", "East US", "North Europe"]);
      assert.equal(merged.maxItemCount, 5);
      assert.deepEqual(mine.excludedLocations, ["west us", "East US"]);
      assert.deepEqual(hedgingRequestOptions({ excludedRegions: [] }, mine).excludedLocations, ["west us", "East US"]);
      assert.deepEqual(hedgingRequestOptions({ hedging: false }, mine).excludedLocations, ["west us", "East US"]);
    });

    it("rejects your excludedLocations when it is not a list of region names, naming it and its value", function () {
      assert.throws(() => hedgingRequestOptions({ excludedRegions: ["West US"] }, { excludedLocations: "East US" }), {
        name: "TypeError",
        message: 'requestOptions.excludedLocations must be an array of region names; got "East US".',
      });
      assert.throws(() => hedgingRequestOptions({ excludedRegions: ["West US"] }, { excludedLocations: ["East US", 1] }), {
        name: "TypeError",
        message: "requestOptions.excludedLocations[1] must be a region name; got 1.",
      });
      // @azure/cosmos would fail on these only once the request is under way, so they are refused with nothing excluded too.
      for (const options of [{}, { excludedRegions: [] }, { hedging: false as const }]) {
        assert.throws(() => hedgingRequestOptions(options, { excludedLocations: null }), /requestOptions.excludedLocations must be an array of region names; got null/);
        assert.throws(() => hedgingRequestOptions(options, { excludedLocations: [null] }), /requestOptions.excludedLocations\[0\] must be a region name; got null/);
      }
    });

    it("leaves out the holes of a sparse excludedLocations of yours, which @azure/cosmos skips too", function () {
      const sparse: string[] = [];
      sparse[1] = "East US";
      assert.deepEqual(hedgingRequestOptions({ excludedRegions: ["West US"] }, { excludedLocations: sparse }).excludedLocations, ["East US", "West US"]);
      assert.equal(hedgingRequestOptions({}, { excludedLocations: sparse }).excludedLocations, sparse, "nothing excluded: yours as they are");
    });

    it("reads your excludedLocations as @azure/cosmos does: a value it ignores is no list, a String object is its string, a subclass's own forEach is not used", function () {
      // The SDK maps the list only when its length is not 0: these are ignored by plain, so they are not refused.
      for (const ignored of [{}, new Set(["East US"]), ""]) {
        assert.equal(hedgingRequestOptions({}, { excludedLocations: ignored }).excludedLocations, ignored, "nothing excluded: yours as they are");
        assert.deepEqual(hedgingRequestOptions({ excludedRegions: ["West US"] }, { excludedLocations: ignored }).excludedLocations, ["West US"]);
      }
      // The SDK's replace works on a String object.
      const boxed = [new String("East US")];
      assert.deepEqual(hedgingRequestOptions({ excludedRegions: ["West US"] }, { excludedLocations: boxed }).excludedLocations, ["East US", "West US"]);
      class Quiet<T> extends Array<T> {
        override forEach(): void {}
      }
      const quiet = Quiet.from(["East US"]);
      assert.deepEqual(hedgingRequestOptions({ excludedRegions: ["North Europe"] }, { excludedLocations: quiet }).excludedLocations, ["East US", "North Europe"]);
    });

    it("rejects request options or initialHeaders that are not objects", function () {
      assert.throws(() => hedgingRequestOptions({}, untyped("x") as object), /requestOptions must be an object; got "x"/);
      assert.throws(() => hedgingRequestOptions({}, { initialHeaders: "x" }), /requestOptions.initialHeaders must be an object; got "x"/);
    });

    it("validates the hedging options first", function () {
      assert.throws(() => hedgingRequestOptions(untyped({ bogus: 1 }), {}), TypeError);
    });
  });
});

describe("withRequestHedgingOptions", function () {
  it("applies the choices to requests made in the block, after awaits too, and not outside", async function () {
    const seen = await withRequestHedgingOptions({ excludedRegions: ["West US"], hedging: false }, async () => {
      await nextMacrotask();
      return requestControlsOf(pointRead(westUs));
    });
    assert.deepEqual(seen, { excludedRegions: ["West US"], hedging: false });
    assert.deepEqual(requestControlsOf(pointRead(westUs)), {});
  });

  it("returns what the block returns, synchronously for a synchronous block", function () {
    assert.equal(withRequestHedgingOptions({}, () => 42), 42);
  });

  it("lets a request's own options win, field by field", function () {
    const controls = withRequestHedgingOptions({ excludedRegions: ["West US"], hedging: false }, () =>
      requestControlsOf(requestWith(hedgingRequestOptions({ excludedRegions: [], hedging: { threshold: 9 } }).initialHeaders)),
    );
    assert.deepEqual(controls, { excludedRegions: [], hedging: { threshold: 9 } });
  });

  it("nests, the inner block adding to the outer one", function () {
    const controls = withRequestHedgingOptions({ excludedRegions: ["West US"] }, () =>
      withRequestHedgingOptions({ region: "East US" }, () => requestControlsOf(pointRead(westUs))),
    );
    assert.deepEqual(controls, { excludedRegions: ["West US"], region: "East US" });
  });

  it("validates before running the block", function () {
    let ran = false;
    assert.throws(
      () =>
        withRequestHedgingOptions(untyped({ region: "East\nUS" }), () => {
          ran = true;
        }),
      TypeError,
    );
    assert.throws(() => withRequestHedgingOptions({ hedging: { threshold: -1 } }, () => (ran = true)), RangeError);
    assert.equal(ran, false);
  });

  it("rejects a block that is not a function", function () {
    assert.throws(() => withRequestHedgingOptions({}, untyped("later") as unknown as () => void), /fn must be a function; got "later"/);
  });
});

describe("trustworthiness: what users hit", function () {
  describe("timer values Node.js would fire after 1 ms", function () {
    it("hedgingRequestOptions rejects a per-request threshold at 2^31 - 1 ms", function () {
      assert.throws(() => hedgingRequestOptions({ hedging: { threshold: 2 ** 31 - 1 } }), /^RangeError: hedging\.threshold must be/);
    });
  });
});
