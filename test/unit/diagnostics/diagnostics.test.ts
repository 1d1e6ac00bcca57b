import assert from "node:assert/strict";
import { RestError, createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelinePolicy, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import { RegionCache } from "../../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { hedgeDiagnosticsHeaderName } from "../../../src/cosmos/headers.js";
import { attachHedgeDiagnostics, getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import type { HedgeArmDiagnostics, HedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../../src/policies/metadataHedgingPolicy.js";
import { eastUs, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";

const diagnostics: HedgeDiagnostics = {
  policy: "crossRegion",
  operation: "pointRead",
  thresholdMs: 100,
  thresholdStepMs: 50,
  thresholdSource: "options",
  primaryRegion: "East US",
  arms: [
    { region: "East US", reason: "primary", startOffsetMs: 0, durationMs: 130, outcome: "aborted" },
    {
      region: "West US",
      reason: "threshold",
      startOffsetMs: 100,
      durationMs: 30,
      status: 200,
      activityId: "a1",
      requestCharge: 1,
      outcome: "returned",
    },
  ],
  hedgeFired: true,
  hedgeWon: true,
  winningRegion: "West US",
  winningActivityId: "a1",
  terminalState: "hedgeWon",
  totalRequestCharge: 1,
  final: true,
};

function response(headers: Record<string, string> = {}): PipelineResponse {
  const request = createPipelineRequest({ url: "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1" });
  return { request, status: 200, headers: createHttpHeaders(headers) };
}

const serialized = JSON.stringify(diagnostics);

/** A compact header read alone: without the activity ids, which the SDK's own header beside it gives. */
function withoutActivityIds(record: HedgeDiagnostics | undefined): HedgeDiagnostics | undefined {
  if (record === undefined) return undefined;
  const { winningActivityId: _winner, ...rest } = record;
  return { ...rest, arms: rest.arms.map(({ activityId: _activityId, ...arm }) => arm) };
}

/** A record as its compact header reads back: without the arm's duration, the one measurement the SDK's headers do not carry. */
function withoutDuration(record: HedgeDiagnostics | undefined): HedgeDiagnostics | undefined {
  if (record === undefined) return undefined;
  return { ...record, arms: record.arms.map(({ durationMs: _durationMs, ...arm }) => arm) };
}

describe("hedge diagnostics", () => {
  describe("attachHedgeDiagnostics", () => {
    it("attaches the record to a response and writes it to the response header", () => {
      const target = response();
      attachHedgeDiagnostics(target, diagnostics);
      assert.equal(getHedgeDiagnostics(target), diagnostics);
      assert.deepEqual(JSON.parse(target.headers.get(hedgeDiagnosticsHeaderName) ?? "null"), diagnostics);
    });

    it("gives the record of the latest request a response served, when it was frozen in between (a transport that caches what it returns)", () => {
      const target = response();
      attachHedgeDiagnostics(target, { ...diagnostics, winningActivityId: "first" });
      Object.freeze(target);
      const latest: HedgeDiagnostics = { ...diagnostics, winningActivityId: "latest" };
      attachHedgeDiagnostics(target, latest);
      assert.equal(getHedgeDiagnostics(target), latest);
      assert.equal(getHedgeDiagnostics(target.headers)?.winningActivityId, "latest");
    });

    it("attaches the record to an error and to the response the error carries", () => {
      const carried = response();
      const error = new RestError("Service unavailable", { statusCode: 503, response: carried });
      attachHedgeDiagnostics(error, diagnostics);
      assert.equal(getHedgeDiagnostics(error), diagnostics);
      assert.equal(getHedgeDiagnostics(carried), diagnostics);
      assert.equal(carried.headers.get(hedgeDiagnosticsHeaderName), serialized);
    });

    it("writes each skipped record's own header, whatever its region is called", () => {
      const skipped = (primaryRegion?: string): HedgeDiagnostics => ({
        policy: "crossRegion",
        operation: "pointRead",
        thresholdMs: 100,
        ...(primaryRegion !== undefined ? { primaryRegion } : {}),
        arms: [],
        hedgeFired: false,
        hedgeWon: false,
        ...(primaryRegion !== undefined ? { winningRegion: primaryRegion } : {}),
        terminalState: "skipped",
        totalRequestCharge: 1,
        final: true,
        skipReason: "unknownRegion",
      });
      for (const record of [skipped(), skipped("undefined"), skipped(""), skipped("a|b"), skipped("a"), skipped()]) {
        const target = response();
        attachHedgeDiagnostics(target, record);
        assert.deepEqual(JSON.parse(target.headers.get(hedgeDiagnosticsHeaderName) ?? "null"), record);
      }
    });

    it("attaches the record to an error without a response", () => {
      const error = new Error("socket hang up");
      attachHedgeDiagnostics(error, diagnostics);
      assert.equal(getHedgeDiagnostics(error), diagnostics);
    });
  });

  describe("getHedgeDiagnostics reads the header from", () => {
    it("a PipelineResponse that only has the header", () => {
      assert.deepEqual(getHedgeDiagnostics(response({ [hedgeDiagnosticsHeaderName]: serialized })), diagnostics);
    });

    it("HttpHeaders", () => {
      assert.deepEqual(getHedgeDiagnostics(createHttpHeaders({ [hedgeDiagnosticsHeaderName]: serialized })), diagnostics);
    });

    it("HttpHeaders whose header name was set in another case", () => {
      assert.deepEqual(getHedgeDiagnostics(createHttpHeaders({ "X-Cosmos-Hedging-Diagnostics": serialized })), diagnostics);
    });

    it("the plain headers record @azure/cosmos returns", () => {
      const headers = response({ [hedgeDiagnosticsHeaderName]: serialized, "x-ms-request-charge": "1" }).headers.toJSON();
      assert.deepEqual(getHedgeDiagnostics(headers), diagnostics);
    });

    it("an @azure/cosmos response: anything with plain `headers`", () => {
      const itemResponse = { resource: { id: "1" }, statusCode: 200, headers: { [hedgeDiagnosticsHeaderName]: serialized } };
      assert.deepEqual(getHedgeDiagnostics(itemResponse), diagnostics);
    });

    it("an @azure/cosmos ErrorResponse: an error with plain `headers`", () => {
      const error = Object.assign(new Error("Resource Not Found"), { code: 404, headers: { [hedgeDiagnosticsHeaderName]: serialized } });
      assert.deepEqual(getHedgeDiagnostics(error), diagnostics);
    });

    it("an error whose `response` has the header", () => {
      const error = new RestError("Service unavailable", {
        statusCode: 503,
        response: response({ [hedgeDiagnosticsHeaderName]: serialized }),
      });
      assert.deepEqual(getHedgeDiagnostics(error), diagnostics);
    });
  });

  describe("getHedgeDiagnostics returns undefined for", () => {
    const garbage: ReadonlyArray<readonly [string, unknown]> = [
      ["undefined", undefined],
      ["null", null],
      ["a number", 42],
      ["a string", serialized],
      ["an empty object", {}],
      ["a response without the header", response()],
      ["a malformed JSON header", response({ [hedgeDiagnosticsHeaderName]: "{not json" })],
      ["a JSON header that is not a record", response({ [hedgeDiagnosticsHeaderName]: "null" })],
      ["a JSON header without a policy", response({ [hedgeDiagnosticsHeaderName]: '{"arms":[]}' })],
      ["a JSON array header", response({ [hedgeDiagnosticsHeaderName]: "[1,2]" })],
      ["a plain record with a non-string header", { [hedgeDiagnosticsHeaderName]: 7 }],
      ["an object whose headers are not an object", { headers: "x" }],
      ["an error without diagnostics", new Error("boom")],
      ["an error whose response is not a response", Object.assign(new Error("boom"), { response: { status: 1 } })],
    ];
    for (const [label, value] of garbage) {
      it(label, () => {
        assert.equal(getHedgeDiagnostics(value), undefined);
      });
    }
  });
});

describe("the diagnostics header of races its primary answered alone", () => {
  const topology = { readRegions: [eastUs, westUs], perPartitionFailover: true };

  /** A transport that answers every request at once, with these headers. */
  function answering(headers: Record<string, string>): HttpClient {
    return { sendRequest: async (request) => ({ request, status: 200, headers: createHttpHeaders(headers), bodyAsText: "{}" }) };
  }

  const answers: ReadonlyArray<readonly [string, Record<string, string>]> = [
    ["an activity id and a charge", { "x-ms-activity-id": "6f1c2b0e-0000-4000-8000-000000000001", "x-ms-request-charge": "2.86" }],
    ["neither", {}],
    ["an activity id that needs escaping", { "x-ms-activity-id": 'a"b\\c', "x-ms-request-charge": "1" }],
  ];
  const policies: ReadonlyArray<readonly [string, () => PipelinePolicy, (region: RegionEndpoint) => PipelineRequest]> = [
    ["a fixed threshold", () => crossRegionHedgingPolicy({ regions: new RegionCache({ topology }), threshold: 100 }), (region) => pointRead(region)],
    ["the adaptive threshold", () => crossRegionHedgingPolicy({ regions: new RegionCache({ topology }), threshold: "adaptive" }), (region) => query(region)],
    ["the PPAF default", () => crossRegionHedgingPolicy({ regions: new RegionCache({ topology }), enabled: "followAccount" }), (region) => pointRead(region)],
    [
      "a per-request threshold",
      () => crossRegionHedgingPolicy({ regions: new RegionCache({ topology }) }),
      (region) => {
        const request = pointRead(region);
        setRequestControls(request, { hedging: { threshold: 250 } });
        return request;
      },
    ],
    ["metadata hedging", () => metadataHedgingPolicy({ regions: new RegionCache({ topology }), enabled: true }), (region) => requestTo(region, "GET", "dbs/db/colls/c")],
  ];

  for (const [policyLabel, makePolicy, makeRequest] of policies) {
    for (const [answerLabel, headers] of answers) {
      it(`is one string per kind of request and charge, and reads back as the record but its duration, the activity id from the SDK's header beside it: ${policyLabel}, an answer with ${answerLabel}`, async () => {
        const pipeline = createEmptyPipeline();
        pipeline.addPolicy(makePolicy());
        const written: string[] = [];
        // East US twice (the second header from the head the first left cached), then West US (a head of its own).
        for (const region of [eastUs, eastUs, westUs]) {
          const response = await pipeline.sendRequest(answering(headers), makeRequest(region));
          const record = getHedgeDiagnostics(response);
          assert.equal(record?.terminalState, "primaryWon");
          const header = response.headers.get(hedgeDiagnosticsHeaderName) ?? "null";
          written.push(header);
          const written0 = JSON.parse(header);
          assert.equal("durationMs" in written0.arms[0] || "activityId" in written0.arms[0] || "winningActivityId" in written0, false, "nothing that differs from one read to the next");
          assert.equal(written0.totalRequestCharge, record?.totalRequestCharge, "the charge is in the header itself");
          assert.deepEqual(getHedgeDiagnostics(response.headers.toJSON()), withoutDuration(record), "as @azure/cosmos copies the headers");
          assert.deepEqual(getHedgeDiagnostics({ [hedgeDiagnosticsHeaderName]: header }), withoutActivityIds(withoutDuration(record)), "the header alone");
        }
        assert.equal(written[1], written[0], "the same string for the same kind of request");
        assert.notEqual(written[2], written[0]);
      });
    }
  }

  it("reads back as each record when more kinds of records come than are remembered", () => {
    const records = Array.from({ length: 40 }, (_, index): HedgeDiagnostics => {
      const region = `Region ${index % 20}`;
      const arm: HedgeArmDiagnostics = { region, reason: "primary", startOffsetMs: 0, outcome: "returned", durationMs: index, status: 200, requestCharge: index };
      return index % 2 === 0
        ? { policy: "crossRegion", operation: "pointRead", primaryRegion: region, thresholdMs: index, thresholdStepMs: 100, thresholdSource: "options", arms: [arm], hedgeFired: false, totalRequestCharge: index, final: true, hedgeWon: false, terminalState: "primaryWon", winningRegion: region }
        : { policy: "metadata", operation: "collectionRead", primaryRegion: region, arms: [], hedgeFired: false, hedgeWon: false, winningRegion: region, terminalState: "skipped", totalRequestCharge: index, final: true, skipReason: "disabled" };
    });
    for (let pass = 0; pass < 3; pass++) {
      for (const record of pass === 1 ? [...records].reverse() : records) {
        const target = response({ "x-ms-request-charge": String(record.totalRequestCharge) });
        attachHedgeDiagnostics(target, record);
        assert.deepEqual(getHedgeDiagnostics(target.headers.toJSON()), withoutDuration(record));
      }
    }
  });

  it("reads back as the record but its duration for any values its fields may hold (property)", () => {
    const text = fc.string({ maxLength: 12, unit: "binary" });
    // A charge as the SDK's header carries it: a finite number, written and read back as text.
    const number = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => (value === 0 ? 0 : value)), fc.integer({ min: 0, max: 100_000 }));
    fc.assert(
      fc.property(
        fc.constantFrom("options", "request", "ppafDefault", "adaptive", "benefit"),
        text,
        fc.option(number, { nil: undefined }),
        fc.option(text, { nil: undefined }),
        fc.option(number, { nil: undefined }),
        fc.integer({ min: 0, max: 20 }),
        (thresholdSource, region, durationMs, activityId, requestCharge, thresholdMs) => {
          const record = {
            policy: "crossRegion",
            operation: "pointRead",
            primaryRegion: region,
            thresholdMs,
            thresholdStepMs: 100,
            thresholdSource,
          } as Partial<HedgeDiagnostics> & Record<string, unknown>;
          // The arm's activity id and charge are the response's own headers, as describeArm reads them.
          const target = response({
            ...(activityId !== undefined ? { "x-ms-activity-id": activityId } : {}),
            ...(requestCharge !== undefined ? { "x-ms-request-charge": String(requestCharge) } : {}),
          });
          const arm: HedgeArmDiagnostics = { region, reason: "primary", startOffsetMs: 0, outcome: "returned" };
          if (durationMs !== undefined) arm.durationMs = durationMs;
          arm.status = 200;
          const sentActivityId = target.headers.get("x-ms-activity-id");
          if (sentActivityId !== undefined) arm.activityId = sentActivityId;
          if (requestCharge !== undefined) arm.requestCharge = requestCharge;
          Object.assign(record, { arms: [arm], hedgeFired: false, totalRequestCharge: requestCharge ?? 0, final: true, hedgeWon: false, terminalState: "primaryWon", winningRegion: region });
          if (sentActivityId !== undefined) record.winningActivityId = sentActivityId;
          attachHedgeDiagnostics(target, record as HedgeDiagnostics);
          assert.deepEqual(getHedgeDiagnostics(target.headers.toJSON()), withoutDuration(record as HedgeDiagnostics));
          const header = target.headers.get(hedgeDiagnosticsHeaderName);
          assert.deepEqual(getHedgeDiagnostics({ [hedgeDiagnosticsHeaderName]: header }), withoutActivityIds(withoutDuration(record as HedgeDiagnostics)), "the header alone");
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("the diagnostics header of skipped requests", () => {
  it("is the record's own JSON, byte for byte, from the first such record on", async () => {
    const topology = { readRegions: [eastUs, westUs] };
    const transport: HttpClient = {
      sendRequest: async (request) => ({ request, status: 200, headers: createHttpHeaders({ "x-ms-request-charge": "1.5" }), bodyAsText: "{}" }),
    };
    const cases: ReadonlyArray<readonly [PipelinePolicy, () => PipelineRequest]> = [
      [crossRegionHedgingPolicy({ regions: new RegionCache({ topology }), enabled: false }), () => pointRead(eastUs)],
      [crossRegionHedgingPolicy({ regions: new RegionCache({ topology }) }), () => requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}" })],
      [crossRegionHedgingPolicy({ regions: new RegionCache({ topology: { readRegions: [eastUs] } }) }), () => pointRead(eastUs)],
      [metadataHedgingPolicy({ regions: new RegionCache({ topology }), enabled: false }), () => requestTo(eastUs, "GET", "dbs/db/colls/c")],
    ];
    for (const [policy, makeRequest] of cases) {
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policy);
      for (let index = 0; index < 2; index++) {
        const response = await pipeline.sendRequest(transport, makeRequest());
        const record = getHedgeDiagnostics(response);
        assert.equal(record?.terminalState, "skipped");
        assert.equal(record?.totalRequestCharge, 1.5);
        assert.equal(response.headers.get(hedgeDiagnosticsHeaderName), JSON.stringify(record));
      }
    }
  });
});
