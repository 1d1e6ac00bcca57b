import assert from "node:assert/strict";
import type { AccountTopology } from "../../../src/topology/regionCache.js";
import { metadataHedgingEnvironmentVariable } from "../../../src/cosmos/environment.js";
import { resolveAdaptiveThreshold } from "../../../src/planning/adaptiveThreshold.js";
import type { Timing } from "../../../src/planning/planner.js";
import { CrossRegionTiming, MetadataTiming, crossRegionTimings } from "../../../src/planning/timing.js";
import type { CrossRegionTimingSettings } from "../../../src/planning/timing.js";
import { eastUs, westUs } from "../../support/hedgingFixtures.js";

function account(fields: Partial<AccountTopology> = {}): AccountTopology {
  return { readRegions: [eastUs, westUs], writeRegions: [eastUs], multipleWriteLocations: false, perPartitionFailover: false, crossRegionalHedgingDisabled: false, ...fields };
}

const explicit: Timing = { kind: "fixed", thresholdMs: 100, thresholdStepMs: 50, thresholdSource: "options" };
const followingAccount: Timing = { kind: "fixed", thresholdMs: 300, thresholdStepMs: 150, thresholdSource: "ppafDefault" };

function crossRegion(settings: Partial<CrossRegionTimingSettings> = {}): CrossRegionTiming {
  return new CrossRegionTiming({ enabled: true, explicit, followingAccount, enableMultiWriteRegionHedge: false, ...settings });
}

describe("CrossRegionTiming", () => {
  it("plans as many arms as there are regions", () => {
    assert.equal(crossRegion().policy, "crossRegion");
    assert.equal(crossRegion().maxArms, Number.POSITIVE_INFINITY);
  });

  it("on: the explicit timing, with or without a topology", () => {
    assert.equal(crossRegion().timing(undefined, undefined), explicit);
    assert.equal(crossRegion().timing(account({ perPartitionFailover: true }), undefined), explicit);
  });

  it("off: disabled, whatever the account's PPAF state", () => {
    assert.equal(crossRegion({ enabled: false }).timing(account({ perPartitionFailover: true }), undefined), "disabled");
  });

  it('"followAccount": the PPAF timing while the account reports PPAF, disabled otherwise and before the account is known', () => {
    const timing = crossRegion({ enabled: "followAccount" });
    assert.equal(timing.timing(account({ perPartitionFailover: true }), undefined), followingAccount);
    assert.equal(timing.timing(account(), undefined), "disabled");
    assert.equal(timing.timing(undefined, undefined), "disabled");
  });

  it("the account operator's switch wins over every mode and over a request that turns hedging on", () => {
    const disabled = account({ crossRegionalHedgingDisabled: true, perPartitionFailover: true });
    assert.equal(crossRegion().timing(disabled, undefined), "accountSwitch");
    assert.equal(crossRegion().timing(disabled, { threshold: 20 }), "accountSwitch");
  });

  it("a request's false turns hedging off before the account's switch is read", () => {
    assert.equal(crossRegion().timing(account({ crossRegionalHedgingDisabled: true }), false), "disabled");
  });

  it("a request's threshold is a fixed timing from the request, keeping the mode's step unless it sets its own", () => {
    assert.deepEqual(crossRegion().timing(account(), { threshold: 20 }), { kind: "fixed", thresholdMs: 20, thresholdStepMs: 50, thresholdSource: "request" });
    assert.deepEqual(crossRegion().timing(account(), { threshold: 20, thresholdStep: 5 }), { kind: "fixed", thresholdMs: 20, thresholdStepMs: 5, thresholdSource: "request" });
  });

  it("a request's step alone keeps the mode's timing, with the request's step", () => {
    assert.deepEqual(crossRegion().timing(account(), { thresholdStep: 7 }), { ...explicit, thresholdStepMs: 7 });
    assert.deepEqual(crossRegion().timing(account(), {}), explicit);
  });

  it("a request's settings turn hedging on where the mode has it off, from the explicit defaults", () => {
    assert.deepEqual(crossRegion({ enabled: false }).timing(account(), {}), explicit);
    assert.deepEqual(crossRegion({ enabled: "followAccount" }).timing(account(), { thresholdStep: 9 }), { ...explicit, thresholdStepMs: 9 });
    assert.deepEqual(crossRegion({ enabled: "followAccount" }).timing(account({ perPartitionFailover: true }), { thresholdStep: 9 }), { ...followingAccount, thresholdStepMs: 9 });
  });

  it("hedges writes only when enableMultiWriteRegionHedge is set and the account accepts writes in every region", () => {
    assert.equal(crossRegion({ enableMultiWriteRegionHedge: true }).writesAllowed(account({ multipleWriteLocations: true })), true);
    assert.equal(crossRegion({ enableMultiWriteRegionHedge: true }).writesAllowed(account()), false);
    assert.equal(crossRegion({ enableMultiWriteRegionHedge: true }).writesAllowed(undefined), false);
    assert.equal(crossRegion().writesAllowed(account({ multipleWriteLocations: true })), false);
  });
});

describe("crossRegionTimings", () => {
  const explicitDefaults = { thresholdMs: 100, thresholdStepMs: 50 };
  const ppafDefaults = { thresholdMs: 300, thresholdStepMs: 150 };

  it("without a threshold option: each mode's defaults, the PPAF one marked as such", () => {
    assert.deepEqual(crossRegionTimings(undefined, undefined, explicitDefaults, ppafDefaults), {
      explicit: { kind: "fixed", thresholdMs: 100, thresholdStepMs: 50, thresholdSource: "options" },
      followingAccount: { kind: "fixed", thresholdMs: 300, thresholdStepMs: 150, thresholdSource: "ppafDefault" },
    });
  });

  it("a fixed threshold: that threshold in both modes, from the options, each with its own step", () => {
    assert.deepEqual(crossRegionTimings(undefined, 40, explicitDefaults, ppafDefaults), {
      explicit: { kind: "fixed", thresholdMs: 40, thresholdStepMs: 50, thresholdSource: "options" },
      followingAccount: { kind: "fixed", thresholdMs: 40, thresholdStepMs: 150, thresholdSource: "options" },
    });
  });

  it("the adaptive threshold: adaptive in both modes, with each mode's step, over a fixed threshold", () => {
    const settings = resolveAdaptiveThreshold("adaptive", 500);
    assert.deepEqual(crossRegionTimings(settings, 40, explicitDefaults, ppafDefaults), {
      explicit: { kind: "adaptive", thresholdStepMs: 50, settings },
      followingAccount: { kind: "adaptive", thresholdStepMs: 150, settings },
    });
  });
});

describe("MetadataTiming", () => {
  const saved = process.env[metadataHedgingEnvironmentVariable];
  const configured: Timing = { kind: "fixed", thresholdMs: 1500, thresholdSource: "options" };

  beforeEach(() => {
    delete process.env[metadataHedgingEnvironmentVariable];
  });

  afterEach(() => {
    if (saved === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = saved;
  });

  it("hedges one metadata read at most, never a write", () => {
    const timing = new MetadataTiming(true, 1500, 60_000);
    assert.equal(timing.policy, "metadata");
    assert.equal(timing.maxArms, 2);
    assert.equal(timing.writesAllowed(), false);
  });

  it("enabled: the configured threshold; disabled: off; unset: follows the account's PPAF state", () => {
    assert.deepEqual(new MetadataTiming(true, 1500, 60_000).timing(account(), undefined), configured);
    assert.equal(new MetadataTiming(false, 1500, 60_000).timing(account({ perPartitionFailover: true }), undefined), "disabled");
    assert.deepEqual(new MetadataTiming(undefined, 1500, 60_000).timing(account({ perPartitionFailover: true }), undefined), configured);
    assert.equal(new MetadataTiming(undefined, 1500, 60_000).timing(account(), undefined), "disabled");
    assert.equal(new MetadataTiming(undefined, 1500, 60_000).timing(undefined, undefined), "disabled");
  });

  it("the environment switch: false turns every read off, true turns it on over the policy's enabled: false", () => {
    process.env[metadataHedgingEnvironmentVariable] = "false";
    assert.equal(new MetadataTiming(true, 1500, 60_000).timing(account(), { threshold: 10 }), "disabled");
    process.env[metadataHedgingEnvironmentVariable] = "true";
    assert.deepEqual(new MetadataTiming(false, 1500, 60_000).timing(account(), undefined), configured);
  });

  it("the account operator's switch wins over the policy and the environment", () => {
    process.env[metadataHedgingEnvironmentVariable] = "true";
    assert.equal(new MetadataTiming(true, 1500, 60_000).timing(account({ crossRegionalHedgingDisabled: true }), undefined), "accountSwitch");
  });

  it("a request's settings turn it on; its false turns it off", () => {
    assert.deepEqual(new MetadataTiming(false, 1500, 60_000).timing(account(), {}), configured);
    assert.equal(new MetadataTiming(true, 1500, 60_000).timing(account(), false), "disabled");
  });

  it("a request's threshold is honoured only below the attempt's timeout", () => {
    const timing = new MetadataTiming(true, 1500, 1000);
    assert.deepEqual(timing.timing(account(), { threshold: 999 }), { kind: "fixed", thresholdMs: 999, thresholdSource: "request" });
    assert.deepEqual(timing.timing(account(), { threshold: 1000 }), { kind: "fixed", thresholdMs: 1500, thresholdSource: "options" });
    assert.deepEqual(timing.timing(account(), { thresholdStep: 5 }), { kind: "fixed", thresholdMs: 1500, thresholdSource: "options" });
  });
});
