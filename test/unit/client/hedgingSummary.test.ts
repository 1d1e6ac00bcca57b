import assert from "node:assert/strict";
import { hedgingClientSummary } from "../../../src/client/hedgingSummary.js";

describe("hedgingClientSummary", () => {
  it("the defaults: data-plane reads after 500 ms then every 100 ms, metadata reads after 1500 ms", () => {
    assert.equal(hedgingClientSummary({}), "Hedging client created: data-plane reads hedged after 500 ms, then every 100 ms; metadata reads hedged after 1500 ms.");
    assert.equal(hedgingClientSummary({ crossRegion: true, metadata: true }), hedgingClientSummary({}));
  });

  it("a fixed threshold and step, and hedged writes", () => {
    assert.equal(
      hedgingClientSummary({ crossRegion: { threshold: 40, thresholdStep: 20, enableMultiWriteRegionHedge: true }, metadata: { threshold: 700 } }),
      "Hedging client created: data-plane reads hedged after 40 ms, then every 20 ms, writes too on multi-write accounts; metadata reads hedged after 700 ms.",
    );
    assert.ok(!hedgingClientSummary({ crossRegion: { enableMultiWriteRegionHedge: false } }).includes("writes"));
  });

  it("an adaptive threshold, whatever its options", () => {
    assert.ok(hedgingClientSummary({ crossRegion: { threshold: { mode: "adaptive" } } }).includes("data-plane reads hedged after an adaptive threshold, then every 100 ms"));
  });

  it('"followAccount" and off, for each policy', () => {
    assert.equal(
      hedgingClientSummary({ crossRegion: "followAccount", metadata: false }),
      "Hedging client created: data-plane reads hedged while the account reports per-partition automatic failover; metadata hedging off.",
    );
    assert.equal(
      hedgingClientSummary({ crossRegion: false, metadata: "followAccount" }),
      "Hedging client created: data-plane hedging off; metadata reads hedged while the account reports per-partition automatic failover.",
    );
  });

  it("default thresholds of half a short requestTimeout", () => {
    assert.equal(hedgingClientSummary({ requestTimeout: 400 }), "Hedging client created: data-plane reads hedged after 200 ms, then every 100 ms; metadata reads hedged after 200 ms.");
    assert.equal(hedgingClientSummary({ requestTimeout: 400, metadata: {} }), hedgingClientSummary({ requestTimeout: 400 }));
  });
});
