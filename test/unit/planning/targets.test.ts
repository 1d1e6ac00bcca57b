import assert from "node:assert/strict";
import type { SinonFakeTimers } from "sinon";
import { sameScheme } from "../../../src/planning/targets.js";
import { eastUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";

describe("planning at its edges", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = useFakeClock();
  });

  afterEach(() => {
    clock.restore();
  });

  it("a request URL without a scheme matches no region's scheme", () => {
    assert.equal(sameScheme("dbs/db/colls/c/docs/1", eastUs), false);
    assert.equal(sameScheme("https://acct-eastus.documents.azure.com/dbs/db", eastUs), true);
  });
});
