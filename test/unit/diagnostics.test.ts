import assert from "node:assert/strict";
import { RestError, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineResponse } from "@azure/core-rest-pipeline";
import { hedgeDiagnosticsHeaderName } from "../../src/cosmos/headers.js";
import { attachHedgeDiagnostics, getHedgeDiagnostics } from "../../src/hedging/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/hedging/diagnostics.js";

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
};

function response(headers: Record<string, string> = {}): PipelineResponse {
  const request = createPipelineRequest({ url: "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1" });
  return { request, status: 200, headers: createHttpHeaders(headers) };
}

const serialized = JSON.stringify(diagnostics);

describe("hedge diagnostics", () => {
  describe("attachHedgeDiagnostics", () => {
    it("attaches the record to a response and writes it to the response header", () => {
      const target = response();
      attachHedgeDiagnostics(target, diagnostics);
      assert.equal(getHedgeDiagnostics(target), diagnostics);
      assert.deepEqual(JSON.parse(target.headers.get(hedgeDiagnosticsHeaderName) ?? "null"), diagnostics);
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
