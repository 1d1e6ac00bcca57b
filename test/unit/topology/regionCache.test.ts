import assert from "node:assert/strict";
import { captureAzureLogs } from "../../support/logCapture.js";
import type { LogCapture } from "../../support/logCapture.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { PipelineResponse, PipelineRequest } from "@azure/core-rest-pipeline";
import type { AccountTopologyInit, RegionEndpoint } from "../../../src/topology/regionCache.js";
import {
  databaseAccountBody,
  databaseAccountResponse,
  makeRequest,
  makeResponse,
} from "../../support/requests.js";
import type { LocationFixture } from "../../support/requests.js";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import * as fixtures from "../../support/hedgingFixtures.js";

const westUs: LocationFixture = ["West US", "https://acct-westus.documents.azure.com:443/"];
const eastUs: LocationFixture = ["East US", "https://acct-eastus.documents.azure.com:443/"];
const northEurope: LocationFixture = ["North Europe", "https://acct-northeurope.documents.azure.com:443/"];
const globalEndpoint = "https://acct.documents.azure.com:443/";

function region([name, endpoint]: LocationFixture): RegionEndpoint {
  return { name, endpoint: new URL(endpoint).href };
}

function names(regions: readonly RegionEndpoint[]): string[] {
  return regions.map((r) => r.name);
}

/** A cache that has learned West US, East US, North Europe (read) and West US, East US (write). */
function learnedCache(fields: Record<string, unknown> = {}): RegionCache {
  const cache = new RegionCache();
  const body = databaseAccountBody({ read: [westUs, eastUs, northEurope], write: [westUs, eastUs], fields });
  assert.equal(observe(cache, databaseAccountResponse(globalEndpoint, body)), true);
  return cache;
}

function observe(cache: RegionCache, response: PipelineResponse): boolean {
  return cache.observe(response.request, response);
}


describe("RegionCache", function () {
  let warnings: LogCapture;

  beforeEach(function () {
    warnings = captureAzureLogs("warning");
  });

  afterEach(function () {
    warnings.restore();
  });

  describe("learning from the database account", function () {
    it("has no topology and no applicable regions before the account is read", function () {
      const cache = new RegionCache();
      assert.equal(cache.topology, undefined);
      assert.deepEqual(cache.applicableRegions("read"), []);
      assert.deepEqual(cache.applicableRegions("write"), []);
      assert.equal(cache.regionOf(westUs[1]), undefined);
    });

    it("learns read and write regions from a GET / response", function () {
      const cache = learnedCache();
      assert.deepEqual(cache.topology, {
        readRegions: [region(westUs), region(eastUs), region(northEurope)],
        writeRegions: [region(westUs), region(eastUs)],
        multipleWriteLocations: false,
        perPartitionFailover: false,
        crossRegionalHedgingDisabled: false,
      });
      assert.deepEqual(warnings.lines, []);
    });

    it("reads the account flags", function () {
      const cache = learnedCache({
        enableMultipleWriteLocations: true,
        enablePerPartitionFailoverBehavior: true,
        disableCrossRegionalHedging: true,
      });
      assert.equal(cache.topology?.multipleWriteLocations, true);
      assert.equal(cache.topology?.perPartitionFailover, true);
      assert.equal(cache.topology?.crossRegionalHedgingDisabled, true);
    });

    it("treats explicit false and null flags as false", function () {
      const cache = learnedCache({ enableMultipleWriteLocations: false, enablePerPartitionFailoverBehavior: null });
      assert.equal(cache.topology?.multipleWriteLocations, false);
      assert.equal(cache.topology?.perPartitionFailover, false);
      assert.deepEqual(warnings.lines, []);
    });

    it("accepts locations keyed `endpoint` as well as `databaseAccountEndpoint`", function () {
      const cache = new RegionCache();
      const body = { readableLocations: [{ name: "West US", endpoint: westUs[1] }], writableLocations: [{ name: "West US", endpoint: westUs[1] }] };
      assert.equal(observe(cache, databaseAccountResponse(globalEndpoint, body)), true);
      assert.deepEqual(cache.topology?.readRegions, [region(westUs)]);
    });

    it("replaces the whole topology with a later response, flags included", function () {
      const cache = learnedCache({ enablePerPartitionFailoverBehavior: true, disableCrossRegionalHedging: true });
      const later = databaseAccountBody({ read: [northEurope, eastUs], write: [northEurope] });
      assert.equal(observe(cache, databaseAccountResponse(globalEndpoint, later)), true);
      assert.deepEqual(names(cache.topology?.readRegions ?? []), ["North Europe", "East US"]);
      assert.deepEqual(names(cache.topology?.writeRegions ?? []), ["North Europe"]);
      assert.equal(cache.topology?.perPartitionFailover, false);
      assert.equal(cache.topology?.crossRegionalHedgingDisabled, false);
      assert.equal(cache.regionOf(`${westUs[1]}dbs/db`), undefined, "a region that left the account is forgotten");
      assert.equal(cache.regionOf(`${eastUs[1]}dbs/db`)?.name, "East US");
    });

    it("learns from the account read of a regional endpoint too", function () {
      const cache = new RegionCache();
      const body = databaseAccountBody({ read: [westUs, eastUs] });
      assert.equal(observe(cache, databaseAccountResponse(eastUs[1], body)), true);
      assert.deepEqual(names(cache.topology?.readRegions ?? []), ["West US", "East US"]);
    });

    const ignored: Array<[string, () => PipelineResponse]> = [
      [
        "a point read whose body looks like an account",
        () => makeResponse(makeRequest(`${globalEndpoint}dbs/db/colls/c/docs/1`), 200, { body: databaseAccountBody({ read: [eastUs] }) }),
      ],
      [
        "a POST on the account root",
        () => makeResponse(makeRequest(globalEndpoint, { method: "POST" }), 200, { body: databaseAccountBody({ read: [eastUs] }) }),
      ],
      [
        "a collection read",
        () => makeResponse(makeRequest(`${globalEndpoint}dbs/db/colls/c`), 200, { body: databaseAccountBody({ read: [eastUs] }) }),
      ],
      [
        "a 500 on the account root",
        () => makeResponse(makeRequest(globalEndpoint), 500, { body: databaseAccountBody({ read: [eastUs] }) }),
      ],
      [
        "a 304 on the account root",
        () => makeResponse(makeRequest(globalEndpoint), 304, { body: databaseAccountBody({ read: [eastUs] }) }),
      ],
      ["a 200 on the account root without a body", () => makeResponse(makeRequest(globalEndpoint), 200)],
    ];
    for (const [name, build] of ignored) {
      it(`ignores ${name}`, function () {
        const cache = learnedCache();
        const before = cache.topology;
        const response = build();
        assert.equal(cache.observe(response.request, response), false);
        assert.equal(cache.topology, before);
        assert.deepEqual(warnings.lines, []);
      });
    }

    const location = (name: unknown, endpoint: unknown) => ({ name, databaseAccountEndpoint: endpoint });
    const good = { readableLocations: [location(...westUs)], writableLocations: [location(...westUs)] };
    const malformed: Array<[string, unknown, string]> = [
      ["a body that is not JSON", "{ not json", "not JSON"],
      ["a JSON array", "[]", "not a JSON object"],
      ["JSON null", "null", "not a JSON object"],
      ["a JSON string", '"account"', "not a JSON object"],
      ["missing readableLocations", { writableLocations: good.writableLocations }, "readableLocations"],
      ["missing writableLocations", { readableLocations: good.readableLocations }, "writableLocations"],
      ["readableLocations that is a string", { ...good, readableLocations: "West US" }, "readableLocations"],
      ["writableLocations that is an object", { ...good, writableLocations: { name: "West US" } }, "writableLocations"],
      ["empty readableLocations", { ...good, readableLocations: [] }, "readableLocations is empty"],
      ["empty writableLocations", { ...good, writableLocations: [] }, "writableLocations is empty"],
      ["a location that is null", { ...good, readableLocations: [null] }, "readableLocations[0]"],
      ["a location without a name", { ...good, readableLocations: [{ databaseAccountEndpoint: westUs[1] }] }, "readableLocations[0].name"],
      ["a location with a blank name", { ...good, readableLocations: [location("  ", westUs[1])] }, "readableLocations[0].name"],
      ["a location with a numeric name", { ...good, writableLocations: [location(7, westUs[1])] }, "writableLocations[0].name"],
      ["a location without an endpoint", { ...good, readableLocations: [{ name: "West US" }] }, "readableLocations[0].endpoint"],
      ["an endpoint that is not a URL", { ...good, readableLocations: [location(...westUs), location("East US", "not a url")] }, "readableLocations[1].endpoint"],
      ["an ftp:// endpoint", { ...good, readableLocations: [location("East US", "ftp://acct-eastus.documents.azure.com/")] }, "readableLocations[0].endpoint"],
      ["a javascript: endpoint", { ...good, readableLocations: [location("East US", "javascript:alert(1)")] }, "readableLocations[0].endpoint"],
      ["an endpoint carrying credentials", { ...good, readableLocations: [location("East US", "https://user:secret@acct-eastus.documents.azure.com/")] }, "readableLocations[0].endpoint"],
      [
        "more than 256 locations",
        {
          ...good,
          readableLocations: Array.from({ length: 257 }, (_, i) => location(`Region ${i}`, `https://acct-r${i}.documents.azure.com/`)),
        },
        "257",
      ],
    ];
    for (const [name, body, reason] of malformed) {
      it(`keeps the previous topology and warns once on ${name}`, function () {
        const cache = learnedCache({ enablePerPartitionFailoverBehavior: true });
        const before = cache.topology;
        const response = databaseAccountResponse(globalEndpoint, body);
        let replaced: boolean | undefined;
        assert.doesNotThrow(() => {
          replaced = cache.observe(response.request, response);
        });
        assert.equal(replaced, false);
        assert.equal(cache.topology, before);
        assert.equal(warnings.lines.length, 1, warnings.lines.join("\n"));
        assert.match(warnings.lines[0] ?? "", /malformed database-account response/);
        assert.ok(warnings.lines[0]?.includes(reason), `${warnings.lines[0]} should mention ${reason}`);
        assert.equal(cache.regionOf(westUs[1])?.name, "West US");
      });
    }

    it("does not learn a topology from a malformed first response", function () {
      const cache = new RegionCache();
      const response = databaseAccountResponse(globalEndpoint, "<html>");
      assert.equal(cache.observe(response.request, response), false);
      assert.equal(cache.topology, undefined);
      assert.equal(warnings.lines.length, 1);
    });

    it("accepts exactly 256 locations", function () {
      const cache = new RegionCache();
      const many = Array.from({ length: 256 }, (_, i): LocationFixture => [`Region ${i}`, `https://acct-r${i}.documents.azure.com/`]);
      assert.equal(observe(cache, databaseAccountResponse(globalEndpoint, databaseAccountBody({ read: many }))), true);
      assert.equal(cache.topology?.readRegions.length, 256);
    });

    for (const flag of ["enableMultipleWriteLocations", "enablePerPartitionFailoverBehavior", "disableCrossRegionalHedging"]) {
      it(`treats a non-boolean ${flag} as false and warns naming it`, function () {
        const cache = new RegionCache();
        const body = databaseAccountBody({ read: [westUs, eastUs], fields: { [flag]: "true" } });
        assert.equal(observe(cache, databaseAccountResponse(globalEndpoint, body)), true);
        const topology = cache.topology;
        assert.ok(topology !== undefined);
        assert.equal(topology.multipleWriteLocations || topology.perPartitionFailover || topology.crossRegionalHedgingDisabled, false);
        assert.equal(warnings.lines.length, 1, warnings.lines.join("\n"));
        assert.ok(warnings.lines[0]?.includes(flag));
        assert.ok(warnings.lines[0]?.includes('"true"'));
      });
    }
  });

  describe("regionOf", function () {
    it("finds the region by the origin of a request URL", function () {
      const cache = learnedCache();
      assert.equal(cache.regionOf("https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1?x=1")?.name, "East US");
    });

    it("treats the default port and host case as the same origin", function () {
      const cache = learnedCache();
      assert.equal(cache.regionOf("https://ACCT-WESTUS.documents.azure.com:443/")?.name, "West US");
      assert.equal(cache.regionOf("https://acct-westus.documents.azure.com/")?.name, "West US");
    });

    it("matches http endpoints on their own default port", function () {
      const cache = new RegionCache({
        topology: { readRegions: [{ name: "Local", endpoint: "http://127.0.0.1:80/" }, { name: "Other", endpoint: "http://127.0.0.1:8081/" }] },
      });
      assert.equal(cache.regionOf("http://127.0.0.1/dbs")?.name, "Local");
      assert.equal(cache.regionOf("http://127.0.0.1:8081/dbs")?.name, "Other");
      assert.equal(cache.regionOf("http://127.0.0.1:8082/dbs"), undefined);
      assert.equal(cache.regionOf("https://127.0.0.1:8081/dbs"), undefined, "another scheme is another origin");
    });

    it("is undefined for an unknown host, the global endpoint and a bad URL", function () {
      const cache = learnedCache();
      assert.equal(cache.regionOf("https://acct-westeurope.documents.azure.com/"), undefined);
      assert.equal(cache.regionOf(globalEndpoint), undefined);
      assert.equal(cache.regionOf("https://acct-westus.documents.azure.com:444/"), undefined);
      assert.equal(cache.regionOf("not a url"), undefined);
      assert.equal(cache.regionOf(""), undefined);
    });

    it("answers the same, remembered or not, for URLs on many hosts and for prefixes of one another", function () {
      const cache = learnedCache();
      const urls = [
        ...Array.from({ length: 40 }, (_, index) => `https://host-${index}.example/dbs/db`),
        "https://acct-westus.documents.azure.com/dbs/db",
        "https://acct-westus.documents.azure.com:443/dbs/db",
        "https://acct-westus.documents.azure.com.evil.example/dbs/db",
        "https://acct-westus.documents.azure.com:4430/dbs/db",
        "https://acct-westus.documents.azure.com?x=/dbs/db",
        "https://acct-eastus.documents.azure.com/",
      ];
      const first = urls.map((url) => cache.regionOf(url)?.name);
      assert.deepEqual(first.slice(40), ["West US", "West US", undefined, undefined, "West US", "East US"]);
      for (let pass = 0; pass < 3; pass++) {
        assert.deepEqual(
          urls.map((url) => cache.regionOf(url)?.name),
          first,
        );
        assert.deepEqual(
          [...urls].reverse().map((url) => cache.regionOf(url)?.name),
          [...first].reverse(),
        );
      }
    });

    it("finds a region that is only a write region", function () {
      const cache = new RegionCache({ topology: { readRegions: [region(westUs)], writeRegions: [region(eastUs)] } });
      assert.equal(cache.regionOf(eastUs[1])?.name, "East US");
    });
  });

  describe("explicit topology", function () {
    it("takes a topology option, with the write regions defaulting to the first read region", function () {
      const cache = new RegionCache({ topology: { readRegions: [region(westUs), region(eastUs)] } });
      assert.deepEqual(cache.topology, {
        readRegions: [region(westUs), region(eastUs)],
        writeRegions: [region(westUs)],
        multipleWriteLocations: false,
        perPartitionFailover: false,
        crossRegionalHedgingDisabled: false,
      });
    });

    it("normalizes endpoints and keeps flags", function () {
      const cache = new RegionCache({
        topology: {
          readRegions: [{ name: "West US", endpoint: "HTTPS://Acct-WestUS.documents.azure.com:443" }],
          writeRegions: [{ name: "West US", endpoint: westUs[1] }],
          multipleWriteLocations: true,
          perPartitionFailover: true,
          crossRegionalHedgingDisabled: false,
        },
      });
      assert.equal(cache.topology?.readRegions[0]?.endpoint, "https://acct-westus.documents.azure.com/");
      assert.equal(cache.topology?.multipleWriteLocations, true);
      assert.equal(cache.topology?.perPartitionFailover, true);
    });

    it("setTopology replaces a learned topology, and the next account response replaces it again", function () {
      const cache = learnedCache();
      cache.setTopology({ readRegions: [region(northEurope)] });
      assert.deepEqual(names(cache.topology?.readRegions ?? []), ["North Europe"]);
      assert.equal(cache.regionOf(westUs[1]), undefined);
      observe(cache, databaseAccountResponse(globalEndpoint, databaseAccountBody({ read: [eastUs] })));
      assert.deepEqual(names(cache.topology?.readRegions ?? []), ["East US"]);
    });

    const bad: Array<[string, unknown, RegExp]> = [
      ["null", null, /^topology must be an object; got null/],
      ["a string", "West US", /^topology must be an object; got "West US"/],
      ["no readRegions", {}, /^topology\.readRegions must be an array; got undefined/],
      ["readRegions not an array", { readRegions: "West US" }, /^topology\.readRegions must be an array; got "West US"/],
      ["empty readRegions", { readRegions: [] }, /^topology\.readRegions must list at least one region/],
      ["a read region without a name", { readRegions: [{ endpoint: westUs[1] }] }, /^topology\.readRegions\[0\]\.name .*got undefined/],
      [
        "a read region whose name holds a line break",
        { readRegions: [{ name: "West\nUS", endpoint: westUs[1] }] },
        /^topology\.readRegions\[0\]\.name must be at most 128 characters with no control character; got "West\\nUS"/,
      ],
      ["a read region with a bad endpoint", { readRegions: [{ name: "West US", endpoint: "nope" }] }, /^topology\.readRegions\[0\]\.endpoint is not a URL: "nope"/],
      [
        "a read region with an ftp endpoint",
        { readRegions: [region(westUs), { name: "X", endpoint: "ftp://x/" }] },
        /^topology\.readRegions\[1\]\.endpoint must be an http\(s\) URL; got scheme "ftp:"/,
      ],
      ["writeRegions not an array", { readRegions: [region(westUs)], writeRegions: 3 }, /^topology\.writeRegions must be an array; got 3/],
      ["a non-boolean multipleWriteLocations", { readRegions: [region(westUs)], multipleWriteLocations: "yes" }, /^topology\.multipleWriteLocations must be a boolean; got "yes"/],
      ["a non-boolean perPartitionFailover", { readRegions: [region(westUs)], perPartitionFailover: 1 }, /^topology\.perPartitionFailover must be a boolean; got 1/],
      ["a non-boolean crossRegionalHedgingDisabled", { readRegions: [region(westUs)], crossRegionalHedgingDisabled: null }, /^topology\.crossRegionalHedgingDisabled must be a boolean; got null/],
    ];
    for (const [name, topology, message] of bad) {
      it(`rejects ${name} with a TypeError naming the option, in the constructor and in setTopology`, function () {
        assert.throws(() => new RegionCache({ topology: topology as AccountTopologyInit }), (error: unknown) => {
          assert.ok(error instanceof TypeError);
          assert.match(error.message, message);
          return true;
        });
        const cache = learnedCache();
        const before = cache.topology;
        assert.throws(() => cache.setTopology(topology as AccountTopologyInit), (error: unknown) => {
          assert.ok(error instanceof TypeError);
          assert.match(error.message, message);
          return true;
        });
        assert.equal(cache.topology, before, "a rejected topology leaves the previous one in place");
      });
    }

    it("rejects options that are not an object", function () {
      assert.throws(() => new RegionCache(null as never), { name: "TypeError", message: /^RegionCache options must be an object; got null/ });
      assert.throws(() => new RegionCache("x" as never), { name: "TypeError", message: /^RegionCache options must be an object; got "x"/ });
    });

    it("rejects a misspelt option, naming it and the options there are, instead of ignoring it", function () {
      assert.throws(() => new RegionCache({ preferedRegions: ["East US"] } as never), {
        name: "TypeError",
        message: 'RegionCache options has no option "preferedRegions"; the options are topology, preferredRegions, excludedRegions, accountEndpoint.',
      });
    });
  });

  describe("preferred and excluded regions", function () {
    it("uses the account's order without preferences", function () {
      const cache = learnedCache();
      assert.deepEqual(names(cache.applicableRegions("read")), ["West US", "East US", "North Europe"]);
      assert.deepEqual(names(cache.applicableRegions("write")), ["West US", "East US"]);
    });

    it("orders by preference, keeping only account regions, case- and space-insensitively", function () {
      const cache = learnedCache();
      cache.setPreferredRegions(["northeurope", "Central US", " West  US ", "WESTUS"]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["North Europe", "West US"]);
      assert.deepEqual(names(cache.applicableRegions("write")), ["West US"]);
      assert.deepEqual(cache.preferredRegions, ["northeurope", "Central US", " West  US ", "WESTUS"]);
    });

    it("returns the account's region objects, not the preferred spelling", function () {
      const cache = learnedCache();
      cache.setPreferredRegions(["EASTUS"]);
      assert.deepEqual(cache.applicableRegions("read"), [region(eastUs)]);
    });

    it("subtracts client-level exclusions", function () {
      const cache = new RegionCache({ excludedRegions: ["east us"] });
      observe(cache, databaseAccountResponse(globalEndpoint, databaseAccountBody({ read: [westUs, eastUs, northEurope], write: [westUs, eastUs] })));
      assert.deepEqual(names(cache.applicableRegions("read")), ["West US", "North Europe"]);
      assert.deepEqual(names(cache.applicableRegions("write")), ["West US"]);
      assert.deepEqual(cache.excludedRegions, ["east us"]);
    });

    it("subtracts per-request exclusions on top of the client's", function () {
      const cache = learnedCache();
      cache.setPreferredRegions(["North Europe", "East US", "West US"]);
      cache.setExcludedRegions(["NorthEurope"]);
      assert.deepEqual(names(cache.applicableRegions("read", [" EAST us "])), ["West US"]);
      assert.deepEqual(names(cache.applicableRegions("read", [])), ["East US", "West US"]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["East US", "West US"]);
      assert.equal(cache.isExcluded(region(northEurope)), true);
      assert.equal(cache.isExcluded(region(eastUs)), false);
      assert.equal(cache.isExcluded(region(eastUs), ["eastus"]), true);
    });

    it("can exclude every region", function () {
      const cache = learnedCache();
      cache.setExcludedRegions(["West US", "East US", "North Europe"]);
      assert.deepEqual(cache.applicableRegions("read"), []);
    });

    it("applies changes at runtime", function () {
      const cache = learnedCache();
      cache.setPreferredRegions(["East US", "West US"]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["East US", "West US"]);
      cache.setPreferredRegions([]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["West US", "East US", "North Europe"]);
      cache.setExcludedRegions(["West US"]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["East US", "North Europe"]);
      cache.setExcludedRegions([]);
      assert.deepEqual(names(cache.applicableRegions("read")), ["West US", "East US", "North Europe"]);
    });

    it("copies the lists it is given and the lists it returns", function () {
      const cache = learnedCache();
      const preferred = ["East US"];
      const excluded = ["West US"];
      cache.setPreferredRegions(preferred);
      cache.setExcludedRegions(excluded);
      preferred.push("West US");
      excluded.length = 0;
      assert.deepEqual(names(cache.applicableRegions("read")), ["East US"]);
      cache.applicableRegions("read").pop();
      assert.deepEqual(names(cache.applicableRegions("read")), ["East US"]);
    });

    const badLists: Array<[string, unknown, RegExp]> = [
      ["a string", "West US", / must be an array of region names; got "West US"/],
      ["null", null, / must be an array of region names; got null/],
      ["a number entry", ["West US", 3], /\[1\] must be a non-empty region name; got 3/],
      ["an empty entry", [""], /\[0\] must be a non-empty region name; got ""/],
      ["a null entry", ["West US", "East US", null], /\[2\] must be a non-empty region name; got null/],
    ];
    for (const option of ["preferredRegions", "excludedRegions"] as const) {
      for (const [name, value, message] of badLists) {
        it(`rejects ${option} that is ${name} with a TypeError naming the option`, function () {
          const full = new RegExp(`^${option}${message.source}`);
          assert.throws(() => new RegionCache({ [option]: value as string[] }), { name: "TypeError", message: full });
          const cache = learnedCache();
          cache.setPreferredRegions(["East US"]);
          cache.setExcludedRegions(["North Europe"]);
          const setter = option === "preferredRegions" ? cache.setPreferredRegions : cache.setExcludedRegions;
          assert.throws(() => setter.call(cache, value as string[]), { name: "TypeError", message: full });
          assert.deepEqual(names(cache.applicableRegions("read")), ["East US"], "a rejected list leaves the previous one in place");
        });
      }
    }
  });

  describe("regionNamed", function () {
    it("finds a read region by any spelling of its name", function () {
      const cache = learnedCache();
      assert.deepEqual(cache.regionNamed("northeurope"), region(northEurope));
      assert.deepEqual(cache.regionNamed(" North  EUROPE "), region(northEurope));
    });

    it("looks among write regions for write access", function () {
      const cache = learnedCache();
      assert.equal(cache.regionNamed("North Europe", "write"), undefined);
      assert.deepEqual(cache.regionNamed("east us", "write"), region(eastUs));
    });

    it("ignores preferences and exclusions", function () {
      const cache = learnedCache();
      cache.setPreferredRegions(["West US"]);
      cache.setExcludedRegions(["East US"]);
      assert.deepEqual(cache.regionNamed("East US"), region(eastUs));
    });

    it("is undefined for an unknown name or before the account is read", function () {
      assert.equal(learnedCache().regionNamed("Central US"), undefined);
      assert.equal(new RegionCache().regionNamed("West US"), undefined);
    });
  });
});

describe("trustworthiness: what users hit", function () {
  // This file's own regions and helpers share the shared fixtures' names; these tests were written against the shared ones.
  const { eastUs, westUs, requestTo } = fixtures;

  function accountRead(region: RegionEndpoint): PipelineRequest {
    return requestTo(region, "GET", "");
  }

  function accountResponse(request: PipelineRequest, regions: readonly RegionEndpoint[]): PipelineResponse {
    const locations = regions.map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint }));
    return {
      request,
      status: 200,
      headers: createHttpHeaders(),
      bodyAsText: JSON.stringify({ readableLocations: locations, writableLocations: locations.slice(0, 1) }),
    };
  }
  describe("one RegionCache, one account", function () {
    const otherAccount: RegionEndpoint[] = [
      { name: "East US", endpoint: "https://other-eastus.documents.azure.com:443/" },
      { name: "West US", endpoint: "https://other-westus.documents.azure.com:443/" },
    ];

    it("learns from the first account's response and ignores another account's, with one warning", function () {
      const logs = captureAzureLogs("warning");
      try {
        const regions = new RegionCache();
        const first = accountRead({ name: "global", endpoint: "https://acct.documents.azure.com:443/" });
        assert.equal(regions.observe(first, accountResponse(first, [eastUs, westUs])), true);
        assert.equal(regions.accountEndpoint, "https://acct.documents.azure.com");
        for (let i = 0; i < 2; i++) {
          const other = accountRead({ name: "global", endpoint: "https://other.documents.azure.com:443/" });
          assert.equal(regions.observe(other, accountResponse(other, otherAccount)), false);
        }
        assert.deepEqual(regions.topology?.readRegions.map((region) => region.name), ["East US", "West US"]);
        assert.equal(regions.regionOf("https://other-westus.documents.azure.com/dbs/db"), undefined);
        assert.equal(logs.packageLines().filter((line) => line.includes("ignoring the database account read from https://other.documents.azure.com")).length, 1);
        // The account's own regional endpoints keep teaching it.
        const regional = accountRead(westUs);
        assert.equal(regions.observe(regional, accountResponse(regional, [westUs, eastUs])), true);
        assert.deepEqual(regions.topology?.readRegions.map((region) => region.name), ["West US", "East US"]);
      } finally {
        logs.restore();
      }
    });

    it("with accountEndpoint, ignores every other account even before it has learned anything", function () {
      const regions = new RegionCache({ accountEndpoint: "https://acct.documents.azure.com:443/" });
      const other = accountRead({ name: "global", endpoint: "https://other.documents.azure.com:443/" });
      const logs = captureAzureLogs("warning");
      try {
        assert.equal(regions.observe(other, accountResponse(other, otherAccount)), false);
      } finally {
        logs.restore();
      }
      assert.equal(regions.topology, undefined);
      const own = accountRead({ name: "global", endpoint: "https://ACCT.documents.azure.com/" });
      assert.equal(regions.observe(own, accountResponse(own, [eastUs])), true);
    });

    it("rejects an accountEndpoint that is not an http(s) URL, naming the option", function () {
      assert.throws(() => new RegionCache({ accountEndpoint: "ftp://acct" }), /^TypeError: accountEndpoint must be an http\(s\) URL/);
    });
  });
});
