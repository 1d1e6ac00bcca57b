import assert from "node:assert/strict";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineResponse } from "@azure/core-rest-pipeline";
import type { SinonFakeTimers } from "sinon";
import { breakerCounts, endpointDiscoveryMarks, SdkBreakerWatch, sdkBreakerDeferralMs } from "../../../src/learning/sdkBreakerWatch.js";
import type { SdkBookkeeper, SdkBreakerSettings } from "../../../src/learning/sdkBreakerWatch.js";
import type { SdkAttemptFacts, SdkPartitionAttempt } from "../../../src/cosmos/sdkBookkeeping.js";
import { useFakeClock } from "../../support/leakCheck.js";

function answer(status: number, subStatus?: number): { response: PipelineResponse } {
  const headers = createHttpHeaders(subStatus === undefined ? {} : { "x-ms-substatus": String(subStatus) });
  return { response: { request: createPipelineRequest({ url: "https://account-westus.documents.azure.com/" }), status, headers } };
}

const on: SdkBreakerSettings = { active: () => true, readTimeoutMs: 2000 };

/** What the SDK's breaker is told of a point read of partition 0 in West US. */
const partition: SdkPartitionAttempt = {
  manager: { tryPartitionLevelFailover: async () => false },
  context: { operationType: "read", resourceType: "docs", partitionKeyRangeId: "0", endpoint: "https://account-westus.documents.azure.com:443/" },
};

/** The facts of that read as its request context gave them. */
const attempt: SdkAttemptFacts = { endpointManager: undefined, partition };

/** A bookkeeper that records what it is told, and answers for the SDK when the test says. */
function fakeBookkeeper(): SdkBookkeeper & {
  can: boolean;
  readonly marked: string[];
  readonly counted: SdkPartitionAttempt[];
  /** The attempt facts each mark was told with. */
  readonly markedWith: Array<SdkAttemptFacts | undefined>;
  markFailed(): void;
  answer(outcome: "moved" | "counted" | "failed"): void;
} {
  let unmarked: (() => void) | undefined;
  let pending: ((outcome: "moved" | "counted" | "failed") => void) | undefined;
  const fake = {
    can: true,
    marked: [] as string[],
    counted: [] as SdkPartitionAttempt[],
    markedWith: [] as Array<SdkAttemptFacts | undefined>,
    markForReads(region: string, failed: () => void, facts?: SdkAttemptFacts): boolean {
      if (!fake.can) return false;
      fake.marked.push(region);
      fake.markedWith.push(facts);
      unmarked = failed;
      return true;
    },
    countFailure(sdk: SdkPartitionAttempt, counted: (outcome: "moved" | "counted" | "failed") => void): boolean {
      if (!fake.can) return false;
      fake.counted.push(sdk);
      pending = counted;
      return true;
    },
    attemptOf: () => undefined,
    partitionMovedOff: (): readonly string[] => [],
    markFailed: () => unmarked?.(),
    answer: (outcome: "moved" | "counted" | "failed") => pending?.(outcome),
  };
  return fake;
}

describe("breakerCounts", () => {
  it("counts what @azure/cosmos 4.10.1 counts against a partition's region: a 503, a 403/3 or 403/1008, a request it could not send, an attempt as long as its read timeout", () => {
    assert.equal(breakerCounts(answer(503), 800, on), true);
    assert.equal(breakerCounts(answer(403, 3), 10, on), true);
    assert.equal(breakerCounts(answer(403, 1008), 10, on), true);
    assert.equal(breakerCounts({ error: Object.assign(new Error("aborted"), { name: "AbortError" }) }, 2000, on), true);
    assert.equal(breakerCounts({ error: Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" }) }, 5, on), true);
    assert.equal(breakerCounts({ error: Object.assign(new Error("send"), { code: "REQUEST_SEND_ERROR" }) }, 5, on), true);
    assert.equal(breakerCounts(answer(200), 2000, on), true, "a success the SDK's timeout would have cut first");
    assert.equal(breakerCounts(undefined, 2500, on), true, "a drain cut at its time bound, past the SDK's timeout");
  });

  it("leaves out what it retries or returns without counting: a success in time, a 404, a 429, a 410, a 403 of another sub-status, an arm cut short with nothing known", () => {
    for (const status of [200, 304, 404, 409, 410, 429, 500]) assert.equal(breakerCounts(answer(status), 1999, on), false, `status ${status}`);
    assert.equal(breakerCounts(answer(403, 5), 10, on), false);
    assert.equal(breakerCounts(answer(404, 3), 10, on), false, "sub-status 3 counts on a 403 only");
    assert.equal(breakerCounts(answer(410, 1008), 10, on), false, "sub-status 1008 counts on a 403 only");
    assert.equal(breakerCounts(undefined, 300, on), false);
    assert.equal(breakerCounts(answer(200), undefined, on), false);
    // helper-25: told to the breaker, a reset moved a partition off a healthy region plain never left.
    assert.equal(breakerCounts({ error: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }, 5, on), false, "the SDK's default policy retries a reset in the same region");
    assert.equal(breakerCounts({ error: "not an object" }, 5, on), false);
    assert.equal(breakerCounts({ error: Object.assign(new Error("timed out"), { code: "ETIMEDOUT" }) }, 5, on), false, "a socket's own timeout is no TimeoutError of the SDK's");
    assert.equal(breakerCounts({ error: Object.assign(new Error("cut"), { name: "AbortError" }) }, 5, on), true, "the SDK's timeout aborts its attempt");
    assert.equal(breakerCounts({ error: Object.assign(new Error("late"), { name: "TimeoutError" }) }, 5, on), true, "and names it so");
    assert.equal(breakerCounts({ error: null }, 5, on), false);
  });
});

describe("endpointDiscoveryMarks", () => {
  it("marks what @azure/cosmos 4.10.1's endpoint discovery acts on: a 403/1008 or 403/3, a request it could not send", () => {
    assert.equal(endpointDiscoveryMarks(answer(403, 1008)), true);
    assert.equal(endpointDiscoveryMarks(answer(403, 3)), true);
    assert.equal(endpointDiscoveryMarks({ error: Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" }) }), true);
    assert.equal(endpointDiscoveryMarks({ error: Object.assign(new Error("send"), { code: "REQUEST_SEND_ERROR" }) }), true);
  });

  it("leaves the rest to the SDK's other policies: a 503, a 403 of another sub-status, a reset, a timeout, nothing known", () => {
    for (const result of [answer(503), answer(403), answer(403, 5), answer(404, 1008), answer(200)]) assert.equal(endpointDiscoveryMarks(result), false);
    assert.equal(endpointDiscoveryMarks({ error: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }), false);
    assert.equal(endpointDiscoveryMarks({ error: Object.assign(new Error("aborted"), { name: "AbortError" }) }), false);
    assert.equal(endpointDiscoveryMarks({ error: "not an object" }), false);
    assert.equal(endpointDiscoveryMarks(undefined), false);
  });
});

describe("SdkBreakerWatch", () => {
  let clock: SinonFakeTimers;
  beforeEach(() => {
    clock = useFakeClock();
  });
  afterEach(() => {
    clock.restore();
  });

  it("defers a region a minute after a failure a hedge hid, by its name in any spelling, and forgets it after", () => {
    const watch = new SdkBreakerWatch(on);
    assert.equal(watch.deferring("West US"), false);
    assert.equal(watch.hidden("West US", answer(503), 800), true);
    assert.equal(watch.deferring("westus"), true);
    assert.equal(watch.deferring("East US"), false);
    clock.tick(sdkBreakerDeferralMs - 1);
    assert.equal(watch.deferring("West US"), true);
    clock.tick(1);
    assert.equal(watch.deferring("West US"), false);
  });

  it("defers nothing for an answer the breaker does not count, or while the breaker is off (PPAF not reported)", () => {
    let active = false;
    const watch = new SdkBreakerWatch({ active: () => active, readTimeoutMs: 2000 });
    assert.equal(watch.hidden("West US", answer(503), 800), false);
    assert.equal(watch.deferring("West US"), false);
    active = true;
    assert.equal(watch.hidden("West US", answer(200), 1500), false);
    assert.equal(watch.hidden("West US", answer(404), 20), false);
    assert.equal(watch.deferring("West US"), false);
    assert.equal(watch.hidden("West US", answer(200), 2100), true);
    assert.equal(watch.deferring("West US"), true);
  });

  it("keeps a region deferred while the failures the SDK sees go on, and lets it go a minute after the last", () => {
    const watch = new SdkBreakerWatch(on);
    watch.hidden("West US", answer(503), 800);
    clock.tick(50_000);
    watch.seen("West US", answer(503));
    clock.tick(50_000);
    assert.equal(watch.deferring("West US"), true, "extended by the failure seen at 50 s");
    watch.seen("West US", answer(200));
    clock.tick(10_000);
    assert.equal(watch.deferring("West US"), false, "a success does not extend it");
  });

  it("defers a region once a primary that lost to a hedge has run as long as the SDK's read timeout, before its drain ends", () => {
    const watch = new SdkBreakerWatch(on);
    const primary = {};
    watch.lost("West US", primary, performance.now());
    clock.tick(1999);
    assert.equal(watch.deferring("West US"), false, "a straggler still within the SDK's timeout");
    clock.tick(1);
    assert.equal(watch.deferring("West US"), true);
    clock.tick(sdkBreakerDeferralMs);
    watch.hidden("West US", undefined, 5000, { primary });
    assert.equal(watch.deferring("West US"), true, "its drain cut at 5 s: a failure the breaker would have counted");
  });

  it("forgets a lost primary that answered in time, and defers nothing for it while the breaker is off", () => {
    const watch = new SdkBreakerWatch(on);
    const primary = {};
    watch.lost("West US", primary, performance.now());
    clock.tick(900);
    assert.equal(watch.hidden("West US", answer(200), 900, { primary }), false);
    clock.tick(5000);
    assert.equal(watch.deferring("West US"), false);
    const off = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000 });
    off.lost("West US", primary, performance.now());
    clock.tick(3000);
    assert.equal(off.deferring("West US"), false);
  });

  it("says when a region starts to go unhedged, once an episode, not at each failure that extends it", () => {
    const started: string[] = [];
    const watch = new SdkBreakerWatch({ ...on, onDeferral: (region) => started.push(region) });
    watch.hidden("West US", answer(503), 800);
    watch.hidden("West US", answer(503), 800);
    watch.seen("West US", answer(503));
    assert.deepEqual(started, ["West US"]);
    clock.tick(sdkBreakerDeferralMs);
    watch.hidden("westus", answer(503), 800);
    assert.deepEqual(started, ["West US", "westus"]);
  });

  it("counts a primary cut by hedging before its answer and the SDK's timeout as a hidden failure, while the breaker is on", () => {
    const watch = new SdkBreakerWatch(on);
    assert.equal(watch.cut("West US"), true);
    assert.equal(watch.deferring("West US"), true);
    const off = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000 });
    assert.equal(off.cut("West US"), false);
    assert.equal(off.deferring("West US"), false);
  });

  it("starts nothing from what the SDK saw itself: only a hidden failure defers a region", () => {
    const watch = new SdkBreakerWatch(on);
    watch.seen("West US", answer(503));
    watch.seen("West US", { error: new Error("timeout") });
    assert.equal(watch.deferring("West US"), false);
  });

  it("tells of a threshold at or past the SDK's read timeout once for each place thresholds come from, and only while the breaker is on", () => {
    const told: string[] = [];
    let active = false;
    const watch = new SdkBreakerWatch({ active: () => active, readTimeoutMs: 2000, onUnreachableThreshold: (ms, source) => void told.push(`${source} ${ms}`) });
    watch.checkThreshold(2500, "options");
    assert.deepEqual(told, []);
    active = true;
    watch.checkThreshold(1999, "options");
    assert.deepEqual(told, []);
    watch.checkThreshold(2000, "options");
    watch.checkThreshold(3000, "options");
    watch.checkThreshold(4000, "request");
    watch.checkThreshold(2000, "ppafDefault");
    watch.checkThreshold(5000, "request");
    assert.deepEqual(told, ["options 2000", "request 4000", "ppafDefault 2000"]);
  });
  it("times a lost primary from when it was sent, not from the clock's origin", () => {
    clock.tick(10_000);
    const watch = new SdkBreakerWatch(on);
    watch.lost("West US", {}, performance.now());
    clock.tick(1_999);
    assert.equal(watch.deferring("West US"), false);
    clock.tick(1);
    assert.equal(watch.deferring("West US"), true);
  });

  it("finds a lost primary past the SDK's timeout among a region's eight oldest, and looks no further", () => {
    clock.tick(10_000);
    const older = new SdkBreakerWatch(on);
    older.lost("West US", {}, performance.now() - 500);
    older.lost("West US", {}, performance.now() - 5_000);
    assert.equal(older.deferring("West US"), true, "the second oldest has run past 2 s");
    const many = new SdkBreakerWatch(on);
    for (let i = 0; i < 8; i++) many.lost("West US", {}, performance.now() - 100);
    many.lost("West US", {}, performance.now() - 5_000);
    assert.equal(many.deferring("West US"), false, "the ninth is not looked at");
  });

  it("keeps every lost primary of a region, and forgets one as it ends without the others", () => {
    clock.tick(10_000);
    const watch = new SdkBreakerWatch(on);
    const old = {};
    const recent = {};
    watch.lost("West US", old, performance.now() - 5_000);
    watch.lost("West US", recent, performance.now());
    assert.equal(watch.deferring("East US"), false);
    const again = new SdkBreakerWatch(on);
    again.lost("West US", old, performance.now() - 5_000);
    again.lost("West US", recent, performance.now());
    again.hidden("West US", answer(200), 100, { primary: recent });
    assert.equal(again.deferring("West US"), true, "the old one still runs");
    assert.equal(watch.deferring("West US"), true);
  });

  it("watches no primary lost while the breaker was off, even once it comes on", () => {
    clock.tick(10_000);
    let active = false;
    const watch = new SdkBreakerWatch({ active: () => active, readTimeoutMs: 2000 });
    watch.lost("West US", {}, performance.now());
    active = true;
    clock.tick(3_000);
    assert.equal(watch.deferring("West US"), false);
  });

  it("watches at most 1024 lost primaries of a region at once", () => {
    clock.tick(10_000);
    const watch = new SdkBreakerWatch(on);
    const primaries = Array.from({ length: 1024 }, () => ({}));
    for (const primary of primaries) watch.lost("West US", primary, performance.now());
    watch.lost("West US", {}, performance.now() - 5_000);
    for (const primary of primaries) watch.hidden("West US", answer(200), 100, { primary });
    assert.equal(watch.deferring("West US"), false, "the 1025th was never watched");
  });

  it("starts no deferral from a failure the SDK saw, even with a lost primary past its timeout: the next read's check does", () => {
    clock.tick(10_000);
    const started: string[] = [];
    const watch = new SdkBreakerWatch({ ...on, onDeferral: (region) => started.push(region) });
    watch.lost("West US", {}, performance.now() - 5_000);
    watch.seen("West US", answer(503));
    assert.deepEqual(started, []);
    assert.equal(watch.deferring("West US"), true);
    assert.deepEqual(started, ["West US"]);
  });
  it("defers a region, breaker off, after a hidden answer the SDK's endpoint discovery acts on, and says why", () => {
    const started: string[] = [];
    const watch = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true, onDeferral: (region, reason) => started.push(`${region} ${reason}`) });
    assert.equal(watch.hidden("West US", answer(503), 800), false, "a 503 is the breaker's alone");
    assert.equal(watch.deferral("West US"), undefined);
    assert.equal(watch.hidden("West US", answer(403, 1008), 800), true);
    assert.equal(watch.deferring("West US"), true);
    assert.equal(watch.deferral("westus"), "sdkEndpointDiscovery");
    assert.deepEqual(started, ["West US sdkEndpointDiscovery"]);
    clock.tick(sdkBreakerDeferralMs);
    assert.equal(watch.deferral("West US"), undefined, "a minute later");
    const off = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: false });
    assert.equal(off.hidden("West US", answer(403, 1008), 800), false, "with endpoint discovery off the SDK marks nothing");
  });

  it("tells the SDK's endpoint discovery of a read's hidden answer, where it can, instead of deferring; defers when it cannot, for writes, and for the breaker", () => {
    const sdk = fakeBookkeeper();
    const started: string[] = [];
    const watch = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true, bookkeeping: sdk, onDeferral: (region, reason) => started.push(`${region} ${reason}`) });
    assert.equal(watch.hidden("West US", answer(403, 1008), 800), true);
    assert.deepEqual(sdk.marked, ["West US"]);
    assert.equal(watch.deferral("West US"), undefined, "the SDK moves its reads itself: nothing to defer");
    clock.tick(5);
    sdk.markFailed();
    assert.equal(watch.deferral("West US"), "sdkEndpointDiscovery", "the SDK could not be told after all");
    assert.deepEqual(started, ["West US sdkEndpointDiscovery"]);
    const writes = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(writes.hidden("East US", answer(403, 3), 800, { kind: "write" }), true);
    assert.deepEqual(sdk.marked, ["West US"], "the SDK marks a write's region for writes, which it cannot be told of");
    assert.equal(writes.deferral("East US"), "sdkEndpointDiscovery");
    sdk.can = false;
    const unknown = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(unknown.hidden("West US", answer(403, 1008), 800), true);
    assert.equal(unknown.deferral("West US"), "sdkEndpointDiscovery", "no manager known: deferred as before");
    sdk.can = true;
    const breaker = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(breaker.hidden("West US", answer(403, 1008), 800), true);
    assert.equal(breaker.deferral("West US"), "sdkCircuitBreaker", "the breaker counts it, and its attempt is not known: the SDK must see the next one itself");
    assert.deepEqual(sdk.marked, ["West US"]);
  });

  it("counts a hidden failure in the SDK's breaker where the attempt is known, instead of deferring; marks a read's region too when the breaker did not move the partition, as the SDK's retry policy does", () => {
    const sdk = fakeBookkeeper();
    const watch = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(watch.hidden("West US", answer(503), 800, { sdk: attempt }), true);
    assert.deepEqual(sdk.counted, [partition]);
    assert.equal(watch.deferral("West US"), undefined, "the region's reads stay hedged");
    sdk.answer("failed");
    assert.equal(watch.deferral("West US"), "sdkCircuitBreaker", "the SDK's call failed: deferred instead");
    const fresh = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(fresh.hidden("West US", answer(503), 800), true);
    assert.equal(fresh.deferral("West US"), "sdkCircuitBreaker", "no attempt known: deferred as before");
    const forbidden = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    forbidden.hidden("West US", answer(403, 1008), 800, { sdk: attempt });
    sdk.answer("counted");
    assert.deepEqual(sdk.marked, ["West US"], "counted without a move: the SDK marks the region for reads");
    assert.deepEqual(sdk.markedWith, [attempt], "in the client that sent the attempt");
    forbidden.hidden("West US", answer(403, 1008), 800, { sdk: attempt });
    sdk.answer("moved");
    forbidden.hidden("West US", answer(403, 3), 800, { sdk: attempt, kind: "write" });
    sdk.answer("counted");
    assert.deepEqual(sdk.marked, ["West US"], "the partition moved, or the attempt wrote: no read mark");
    assert.equal(forbidden.deferral("West US"), undefined);
  });

  it("marks no region for an answer that came after the SDK's own timeout would have cut the attempt, which counts as that timeout", () => {
    const sdk = fakeBookkeeper();
    const breaker = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    // helper-25: a 403/1008 at 2.5 s, past the SDK's 2 s read timeout, marked West US for five minutes.
    assert.equal(breaker.hidden("West US", answer(403, 1008), 2500, { sdk: attempt }), true);
    sdk.answer("counted");
    assert.deepEqual([sdk.counted.length, sdk.marked], [1, []], "counted as the timeout, never marked");
    assert.equal(breaker.hidden("West US", answer(403, 1008), 2000, { sdk: attempt }), true);
    sdk.answer("counted");
    assert.deepEqual([sdk.counted.length, sdk.marked], [2, []], "at the timeout itself, the SDK cut it");
    const off = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, requestTimeoutMs: 60_000, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(off.hidden("West US", answer(403, 1008), 2500, { sdk: attempt }), true);
    assert.deepEqual(sdk.marked, ["West US"], "the breaker off, the SDK waits for its requestTimeout, and sees it");
    const short = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 300, requestTimeoutMs: 300, endpointDiscovery: true, bookkeeping: sdk });
    assert.equal(short.hidden("West US", answer(403, 1008), 400, { sdk: attempt }), false);
    assert.equal(short.deferral("West US"), undefined);
    assert.deepEqual(sdk.marked, ["West US"]);
  });

  it("counts a drained primary once it has run as long as the SDK's read timeout, as the SDK's timeout would, and not again when it ends", () => {
    const sdk = fakeBookkeeper();
    const watch = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    const primary = {};
    watch.lost("West US", primary, performance.now(), attempt);
    clock.tick(1999);
    assert.equal(watch.deferring("West US"), false);
    assert.deepEqual(sdk.counted, []);
    clock.tick(1);
    assert.equal(watch.deferring("West US"), false, "told the SDK instead of deferring");
    assert.deepEqual(sdk.counted, [partition]);
    assert.equal(watch.deferring("West US"), false);
    assert.deepEqual(sdk.counted, [partition], "once");
    clock.tick(1000);
    assert.equal(watch.hidden("West US", answer(503), 3000, { primary }), true);
    assert.deepEqual(sdk.counted, [partition], "its end is not counted again");
    assert.equal(watch.deferral("West US"), undefined, "nor deferred for");
    const unknown = {};
    watch.lost("West US", unknown, performance.now());
    clock.tick(2000);
    assert.equal(watch.deferring("West US"), true, "no attempt known: deferred as before");
  });

  it("leaves to endpoint discovery, and to its requestTimeout, an attempt the SDK resolved no partition for (a query plan), the breaker on", () => {
    const sdk = fakeBookkeeper();
    const watch = new SdkBreakerWatch({ ...on, requestTimeoutMs: 60_000, endpointDiscovery: true, bookkeeping: sdk });
    const queryPlan: SdkAttemptFacts = { endpointManager: undefined, partition: undefined };
    const primary = {};
    watch.lost("West US", primary, performance.now(), queryPlan);
    clock.tick(2000);
    // helper-26: the watch took 2 s for the SDK's timeout of every request, and deferred a query plan the SDK waits a minute for.
    assert.equal(watch.deferring("West US"), false, "the SDK waits its requestTimeout for it, not 2 s");
    clock.tick(500);
    assert.equal(watch.hidden("West US", answer(403, 1008), 2500, { primary }), true);
    assert.deepEqual([sdk.counted.length, sdk.marked], [0, ["West US"]], "marked, as the SDK's endpoint discovery does; nothing for its breaker");
    assert.equal(watch.deferral("West US"), undefined);
    assert.equal(watch.hidden("West US", answer(503), 800, { sdk: queryPlan }), false, "a 503 the breaker does not count, and endpoint discovery ignores");
    const query: SdkAttemptFacts = { endpointManager: undefined, partition: { ...partition, context: { ...partition.context, resourceType: "colls" } } };
    assert.equal(watch.hidden("West US", answer(200), 2500, { sdk: query }), false, "an attempt of another resource waits requestTimeout: a success at 2.5 s is no timeout to it");
    assert.equal(watch.hidden("West US", answer(200), 2500, { sdk: attempt }), true, "a read of documents is cut at 2 s");
    const write: SdkAttemptFacts = { endpointManager: undefined, partition: { ...partition, context: { ...partition.context, operationType: "replace" } } };
    assert.equal(watch.hidden("West US", answer(200), 2500, { sdk: write, kind: "write" }), false, "a write of documents waits requestTimeout");
  });

  it("marks with the drained primary's own client, the breaker off, the facts kept from its decision to its end", () => {
    const sdk = fakeBookkeeper();
    const watch = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true, bookkeeping: sdk });
    const primary = {};
    watch.lost("West US", primary, performance.now(), attempt);
    clock.tick(800);
    assert.equal(watch.hidden("West US", answer(403, 1008), 800, { primary }), true);
    assert.deepEqual(sdk.markedWith, [attempt]);
  });

  it("counts every drained primary past the read timeout, however many readers at once, those counted no longer taking the place of the next", () => {
    const sdk = fakeBookkeeper();
    const watch = new SdkBreakerWatch({ ...on, endpointDiscovery: true, bookkeeping: sdk });
    const primaries = Array.from({ length: 12 }, () => ({}));
    for (const primary of primaries.slice(0, 10)) watch.lost("West US", primary, performance.now(), attempt);
    clock.tick(500);
    for (const primary of primaries.slice(10)) watch.lost("West US", primary, performance.now(), attempt);
    clock.tick(1500);
    assert.equal(watch.deferring("West US"), false);
    // helper-25: eight counted primaries still draining kept the ninth and later from being looked at.
    assert.equal(sdk.counted.length, 10, "the ten sent at once, all of them");
    clock.tick(500);
    assert.equal(watch.deferring("West US"), false);
    assert.equal(sdk.counted.length, 12);
    for (const primary of primaries) watch.hidden("West US", answer(503), 3000, { primary });
    assert.equal(sdk.counted.length, 12, "none counted again at its end");
  });

  it("names the breaker when both would act, as the breaker's deferral began", () => {
    const watch = new SdkBreakerWatch({ ...on, endpointDiscovery: true });
    assert.equal(watch.hidden("West US", answer(403, 1008), 800), true);
    assert.equal(watch.deferral("West US"), "sdkCircuitBreaker");
    watch.lost("East US", {}, performance.now());
    clock.tick(2000);
    assert.equal(watch.deferral("East US"), "sdkCircuitBreaker", "a loser past the read timeout");
  });
  it("ends an endpoint-discovery deferral at the region's first answer the SDK would not act on, and never the breaker's", () => {
    const watch = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true });
    watch.hidden("West US", answer(403, 1008), 800);
    watch.answered("West US", answer(403, 1008).response);
    assert.equal(watch.deferral("West US"), "sdkEndpointDiscovery", "the answer the SDK marks it for");
    watch.answered("East US", answer(200).response);
    assert.equal(watch.deferral("West US"), "sdkEndpointDiscovery", "another region's answer");
    watch.answered("westus", answer(200).response);
    assert.equal(watch.deferral("West US"), undefined, "it answers again: the SDK will not mark it");
    const breaker = new SdkBreakerWatch({ ...on, endpointDiscovery: true });
    breaker.hidden("West US", answer(503), 800);
    breaker.answered("West US", answer(200).response);
    assert.equal(breaker.deferral("West US"), "sdkCircuitBreaker", "the breaker counts failures over a minute, whatever comes between");
    let active = false;
    const later = new SdkBreakerWatch({ active: () => active, readTimeoutMs: 2000, endpointDiscovery: true });
    later.hidden("West US", answer(403, 1008), 800);
    active = true;
    later.hidden("West US", answer(503), 800);
    later.answered("West US", answer(200).response);
    assert.equal(later.deferral("West US"), "sdkCircuitBreaker", "a breaker that came on joins the deferral, and an answer no longer ends it");
  });

  it("ends a deferral a write's 403/3 began only at a write's ordinary answer: the SDK avoids the region for writes alone", () => {
    const watch = new SdkBreakerWatch({ active: () => false, readTimeoutMs: 2000, endpointDiscovery: true });
    watch.hidden("West US", answer(403, 3), 800);
    const read = answer(200).response;
    watch.answered("West US", read);
    assert.equal(watch.deferral("West US"), "sdkEndpointDiscovery", "a read's 200 says nothing of writes");
    const written = { ...answer(201).response, request: createPipelineRequest({ url: "https://account-westus.documents.azure.com/", method: "POST" }) };
    watch.answered("West US", written);
    assert.equal(watch.deferral("West US"), undefined);
  });
});
