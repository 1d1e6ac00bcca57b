import assert from "node:assert/strict";
import { classifyMetadataStatus, isFinalStatus } from "../../../src/cosmos/statusTables.js";

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
