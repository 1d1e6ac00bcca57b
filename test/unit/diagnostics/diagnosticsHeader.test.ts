import assert from "node:assert/strict";
import { diagnosticsHeader } from "../../../src/diagnostics/diagnosticsHeader.js";
import { eastUs } from "../../support/hedgingFixtures.js";

describe("diagnosticsHeader", () => {
  it("names the policy, the operation and the region the request addresses", () => {
    assert.deepEqual(diagnosticsHeader("metadata", "collectionRead", eastUs, {}), { policy: "metadata", operation: "collectionRead", primaryRegion: "East US" });
  });

  it("leaves out a region it does not know, and carries what routing did", () => {
    const routing = { sdkRegion: "West US", rerouteReason: "excludedRegion" as const };
    assert.deepEqual(diagnosticsHeader("crossRegion", "pointRead", undefined, { routing }), { policy: "crossRegion", operation: "pointRead", routing });
  });

  it("is a fresh object for each request, as it becomes that request's record", () => {
    assert.notEqual(diagnosticsHeader("crossRegion", "pointRead", eastUs, {}), diagnosticsHeader("crossRegion", "pointRead", eastUs, {}));
  });
});
