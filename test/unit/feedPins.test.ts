import assert from "node:assert/strict";
import sinon from "sinon";
import type { SinonFakeTimers } from "sinon";
import { FeedPins, feedPinDefaults } from "../../src/caches/feedPins.js";
import type { RegionEndpoint } from "../../src/caches/regionCache.js";

const westUs: RegionEndpoint = { name: "West US", endpoint: "https://pins-westus.documents.azure.com:443/" };
const northEurope: RegionEndpoint = { name: "North Europe", endpoint: "https://pins-northeurope.documents.azure.com:443/" };
const link = "dbs/db/colls/c";

describe("FeedPins", () => {
  let clock: SinonFakeTimers;

  beforeEach(() => {
    clock = sinon.useFakeTimers({ toNotFake: ["nextTick", "queueMicrotask"] });
  });

  afterEach(() => {
    try {
      assert.equal(clock.countTimers(), 0, "pins keep no timer");
    } finally {
      clock.restore();
    }
  });

  it("returns the region a page was pinned to, keyed by collection link and token", () => {
    const pins = new FeedPins();
    pins.pin(link, "token-1", westUs);
    assert.equal(pins.regionFor(link, "token-1"), westUs);
    assert.equal(pins.regionFor(link, "token-2"), undefined);
    assert.equal(pins.regionFor("dbs/db/colls/other", "token-1"), undefined);
    pins.pin(link, "token-1", northEurope);
    assert.equal(pins.regionFor(link, "token-1"), northEurope, "a later pin of the same page replaces the earlier one");
    assert.equal(pins.size, 1);
  });

  it("does not confuse keys whose parts run into each other", () => {
    const pins = new FeedPins();
    pins.pin("dbs/db/colls/a", "bc", westUs);
    assert.equal(pins.regionFor("dbs/db/colls/ab", "c"), undefined);
  });

  it("expires a pin after ttlMs", async () => {
    const pins = new FeedPins({ ttlMs: 1000 });
    pins.pin(link, "token", westUs);
    await clock.tickAsync(999);
    assert.equal(pins.regionFor(link, "token"), westUs);
    await clock.tickAsync(1);
    assert.equal(pins.regionFor(link, "token"), undefined);
    assert.equal(pins.size, 0);
  });

  it("expires pins after 5 minutes by default", async () => {
    assert.equal(feedPinDefaults.ttlMs, 300_000);
    const pins = new FeedPins();
    pins.pin(link, "token", westUs);
    await clock.tickAsync(feedPinDefaults.ttlMs - 1);
    assert.equal(pins.regionFor(link, "token"), westUs);
    await clock.tickAsync(1);
    assert.equal(pins.regionFor(link, "token"), undefined);
  });

  it("drops expired pins when a new one is set, oldest first", async () => {
    const pins = new FeedPins({ ttlMs: 1000 });
    pins.pin(link, "a", westUs);
    await clock.tickAsync(500);
    pins.pin(link, "b", westUs);
    await clock.tickAsync(500);
    pins.pin(link, "c", westUs);
    assert.equal(pins.size, 2);
    assert.equal(pins.regionFor(link, "a"), undefined);
    assert.equal(pins.regionFor(link, "b"), westUs);
  });

  it("evicts the oldest pin beyond maxEntries", () => {
    const pins = new FeedPins({ maxEntries: 3 });
    for (const token of ["a", "b", "c"]) pins.pin(link, token, westUs);
    pins.pin(link, "a", northEurope);
    pins.pin(link, "d", westUs);
    assert.equal(pins.size, 3);
    assert.equal(pins.regionFor(link, "b"), undefined, "b was the oldest once a was pinned again");
    assert.equal(pins.regionFor(link, "a"), northEurope);
    assert.equal(pins.regionFor(link, "c"), westUs);
    assert.equal(pins.regionFor(link, "d"), westUs);
  });

  it("holds at most 1000 pins by default", () => {
    assert.equal(feedPinDefaults.maxEntries, 1000);
    const pins = new FeedPins();
    for (let i = 0; i < 1500; i++) pins.pin(link, `token-${i}`, westUs);
    assert.equal(pins.size, 1000);
    assert.equal(pins.regionFor(link, "token-499"), undefined);
    assert.equal(pins.regionFor(link, "token-500"), westUs);
    assert.equal(pins.regionFor(link, "token-1499"), westUs);
  });

  it("clear forgets every pin", () => {
    const pins = new FeedPins();
    pins.pin(link, "a", westUs);
    pins.clear();
    assert.equal(pins.size, 0);
    assert.equal(pins.regionFor(link, "a"), undefined);
  });

  it("rejects bad bounds, naming the option and the value", () => {
    assert.throws(() => new FeedPins({ maxEntries: 0 }), { name: "RangeError", message: "maxEntries must be a whole number of at least 1; got 0." });
    assert.throws(() => new FeedPins({ ttlMs: -5 }), { name: "RangeError", message: /^ttlMs .*got -5\.$/ });
  });
});
