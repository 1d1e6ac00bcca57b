import assert from "node:assert/strict";
import {
  SubStatus,
  classifyMetadataResult,
  classifyMetadataStatus,
  isFinalResult,
  isFinalStatus,
  subStatusOf,
} from "../../../src/cosmos/statusTables.js";
import type { ArmResult, MetadataOutcome } from "../../../src/cosmos/statusTables.js";
import { makeRequest, makeResponse } from "../../support/requests.js";

const url = "https://account-westus.documents.azure.com/dbs/db/colls/items/docs/1";

function responseResult(status: number, subStatus?: number): ArmResult {
  const headers: Record<string, string> = subStatus === undefined ? {} : { "x-ms-substatus": String(subStatus) };
  return { response: makeResponse(makeRequest(url), status, { headers }) };
}

const transportError: ArmResult = {
  error: Object.assign(new Error("socket hang up"), { code: "ECONNRESET", name: "RestError" }),
};

function label(status: number, subStatus: number | undefined): string {
  return subStatus === undefined ? `${status}` : `${status}/${subStatus}`;
}

describe("status tables", function () {
  describe("subStatusOf", function () {
    it("reads the x-ms-substatus header as a number", function () {
      assert.equal(subStatusOf(makeResponse(makeRequest(url), 404, { headers: { "x-ms-substatus": "1002" } })), 1002);
    });

    it("is 0 without the header", function () {
      assert.equal(subStatusOf(makeResponse(makeRequest(url), 404)), 0);
    });

    for (const raw of ["abc", "", " ", "NaN"]) {
      it(`is 0 for the non-numeric header ${JSON.stringify(raw)}`, function () {
        assert.equal(subStatusOf(makeResponse(makeRequest(url), 404, { headers: { "x-ms-substatus": raw } })), 0);
      });
    }
  });

  // DESIGN section 3: .NET IsFinalResult.
  describe("data-plane final vs transient", function () {
    const finals: Array<[number, number | undefined]> = [
      [200, undefined],
      [201, undefined],
      [204, undefined],
      [304, undefined],
      [399, undefined],
      [400, undefined],
      [400, 1001],
      [401, undefined],
      [405, undefined],
      [409, undefined],
      [412, undefined],
      [413, undefined],
      [404, undefined],
      [404, 0],
    ];
    const transients: Array<[number, number | undefined]> = [
      [403, undefined],
      [403, 3],
      [403, 1008],
      [403, 5300],
      [404, 1002],
      [404, 1003],
      [408, undefined],
      [410, undefined],
      [410, 1022],
      [410, 1002],
      [429, undefined],
      [429, 3200],
      [449, undefined],
      [500, undefined],
      [502, undefined],
      [503, undefined],
      [503, 20001],
    ];

    for (const [status, subStatus] of finals) {
      it(`${label(status, subStatus)} is final`, function () {
        assert.equal(isFinalStatus(status, subStatus ?? 0), true);
        assert.equal(isFinalResult(responseResult(status, subStatus)), true);
      });
    }

    for (const [status, subStatus] of transients) {
      it(`${label(status, subStatus)} is transient`, function () {
        assert.equal(isFinalStatus(status, subStatus ?? 0), false);
        assert.equal(isFinalResult(responseResult(status, subStatus)), false);
      });
    }

    it("a transport error is transient", function () {
      assert.equal(isFinalResult(transportError), false);
    });

    it("a thrown value that is not an Error is transient", function () {
      assert.equal(isFinalResult({ error: "boom" }), false);
    });
  });

  // DESIGN section 4: the primary is authoritative unless it failed regionally.
  describe("metadata outcomes", function () {
    const table: Array<[number, number | undefined, MetadataOutcome]> = [
      [200, undefined, "success"],
      [201, undefined, "success"],
      [304, undefined, "success"],
      [500, undefined, "regionalFailure"],
      [503, undefined, "regionalFailure"],
      [503, 21008, "regionalFailure"],
      [410, SubStatus.leaseNotFound, "regionalFailure"],
      [403, SubStatus.databaseAccountNotFound, "regionalFailure"],
      [401, undefined, "definitive"],
      [403, undefined, "definitive"],
      [403, 3, "definitive"],
      [404, undefined, "definitive"],
      [404, 0, "definitive"],
      [404, SubStatus.readSessionNotAvailable, "definitive"],
      [404, 1013, "definitive"],
      [409, undefined, "definitive"],
      [412, undefined, "definitive"],
      [410, undefined, "definitive"],
      [410, 1002, "definitive"],
      [429, undefined, "definitive"],
      [400, undefined, "definitive"],
      [408, undefined, "definitive"],
    ];

    for (const [status, subStatus, outcome] of table) {
      it(`${label(status, subStatus)} is ${outcome}`, function () {
        assert.equal(classifyMetadataStatus(status, subStatus ?? 0), outcome);
        assert.equal(classifyMetadataResult(responseResult(status, subStatus)), outcome);
      });
    }

    it("a transport error is a regional failure", function () {
      assert.equal(classifyMetadataResult(transportError), "regionalFailure");
    });

    it("the named sub-statuses have their wire values", function () {
      assert.deepEqual(SubStatus, { writeForbidden: 3, readSessionNotAvailable: 1002, databaseAccountNotFound: 1008, leaseNotFound: 1022 });
    });
  });
});

const statuses = Array.from({ length: 500 }, (_, i) => 100 + i);
const subStatuses = [0, 3, 1002, 1008, 1022, 3200];

/**
 * Both status tables over every HTTP status and the sub-statuses they name,
 * against the tables as the README states them: a change to any row shows.
 */
describe("the status tables, exhaustively", () => {
  it("data-plane hedging: below 400, 400, 401, 405, 409, 412, 413 and a plain 404 are final; everything else is transient", () => {
    const finalErrors = new Set([400, 401, 405, 409, 412, 413]);
    const wrong: string[] = [];
    for (const status of statuses) {
      for (const subStatus of subStatuses) {
        const expected = status < 400 || finalErrors.has(status) || (status === 404 && subStatus === 0);
        if (isFinalStatus(status, subStatus) !== expected) wrong.push(`${status}/${subStatus}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("metadata hedging: below 400 is success; 500, 503, 410/1022 and 403/1008 are regional failures; everything else is definitive", () => {
    const wrong: string[] = [];
    for (const status of statuses) {
      for (const subStatus of subStatuses) {
        const expected =
          status < 400
            ? "success"
            : status === 500 || status === 503 || (status === 410 && subStatus === 1022) || (status === 403 && subStatus === 1008)
              ? "regionalFailure"
              : "definitive";
        if (classifyMetadataStatus(status, subStatus) !== expected) wrong.push(`${status}/${subStatus}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
