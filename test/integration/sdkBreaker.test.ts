import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions, RequestOptions } from "@azure/cosmos";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator, FaultRule, RecordedRequest } from "../emulator/index.js";
import https from "node:https";
import v8 from "node:v8";
import vm from "node:vm";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { useEmulator, useWanEmulator } from "../support/emulatorFixture.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { fetchTransport } from "../support/fetchTransport.js";
import { scoped, settledTag, taggedClientOptions } from "../support/taggedRequests.js";
import { plainAndHedged } from "../support/sideBySide.js";
import type { Side } from "../support/sideBySide.js";
import type { EmulatorFixture } from "../support/emulatorFixture.js";

/**
 * Side-by-side runs that hold SdkBreakerWatch to its promise: the
 * same reads under the same fault, through a plain `CosmosClient` and a
 * `withHedging` one, the SDK's partition-level circuit breaker on (or, for
 * the last angles, on by the SDK's own defaults). Faults are scoped to each
 * client's user-agent tag, so both clients run at once under the same load.
 * Assertions are on outcomes and on the emulator's record; timings only with
 * wide margins.
 *
 * Found by a hostile review of f9dbbc6, each worse than plain there: 8a' and 8f
 * (a loser aborted before the SDK's 2 s read timeout hid the failure from the
 * SDK and from the watch alike), 8e (the SDK's default
 * enablePartitionLevelFailover turns its breaker on with a PPAF account, and
 * withHedging wired no watch unless the option was written out).
 */

const items = Array.from({ length: 12 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));
let tagCounter = 0;
const newTag = (label: string): string => `brk${++tagCounter}-${label}~`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const preferredLocations = ["West US", "East US", "North Europe"];

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The options of a test's client on the emulator (see `taggedClientOptions`), over the preferred regions of these tests. */
function clientOptions(
  fixture: EmulatorFixture,
  tag: string,
  connectionPolicy: CosmosClientOptions["connectionPolicy"] = {},
  extra: Partial<CosmosClientOptions> = {},
): CosmosClientOptions {
  return taggedClientOptions(fixture.emulator, tag, preferredLocations, connectionPolicy, extra);
}

/** A plain and a hedged client of the same options, both warm. */
async function pairOn(
  fixture: EmulatorFixture,
  hedging: HedgingOptions,
  connectionPolicy: CosmosClientOptions["connectionPolicy"] = {},
  extra: Partial<CosmosClientOptions> = {},
): Promise<{ plain: Side; hedged: Side }> {
  const [plain, hedged] = await plainAndHedged(fixture, { newTag, preferredLocations, hedging, connectionPolicy, extra, warmUp: (container) => container.item("item-0", "pk").read() });
  return { plain, hedged };
}

interface Read {
  readonly sentAt: number;
  readonly ms: number;
  readonly ok: boolean;
}

interface Run {
  readonly reads: Read[];
  readonly failures: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Point reads that reached each region. */
  readonly byRegion: Record<string, number>;
  /** Point reads to West US that came after `afterMs` into the run. */
  readonly westUsAfter: (afterMs: number) => number;
  /** When the last point read to the region arrived, ms into the run (-1: none). */
  readonly lastAt: (region: string) => number;
  readonly start: number;
  readonly skipReasons: Record<string, number>;
  readonly hedgesFired: number;
  readonly requests: RecordedRequest[];
  /** When the first and last point read skipped for `reason` was recorded, ms into the run (-1: none). */
  readonly skipSpan: (reason: string) => [number, number];
}

/**
 * Open-loop reads: every `everyMs`, `batch` reads at once, for `durationMs`.
 * `beforeEach(i)` runs before the i-th batch (to change faults mid-run).
 */
async function steady(
  emulator: Emulator,
  side: Side,
  { everyMs, durationMs, batch = 1, onBatch }: { everyMs: number; durationMs: number; batch?: number; onBatch?: (index: number, elapsedMs: number) => void },
): Promise<Run> {
  const since = emulator.requests.length;
  const diagSince = side.diagnostics.length;
  const start = performance.now();
  const pending: Promise<Read>[] = [];
  let counter = 0;
  for (let i = 0; ; i++) {
    const due = start + i * everyMs;
    const now = performance.now();
    if (due - start >= durationMs) break;
    if (due > now) await sleep(due - now);
    onBatch?.(i, performance.now() - start);
    for (let j = 0; j < batch; j++) {
      const n = (counter++ % 11) + 1;
      const sentAt = performance.now();
      pending.push(
        side.container
          .item(`item-${n}`, "pk")
          .read()
          .then(
            (response) => ({ sentAt: sentAt - start, ms: performance.now() - sentAt, ok: response.statusCode === 200 && response.resource?.value === n }),
            () => ({ sentAt: sentAt - start, ms: performance.now() - sentAt, ok: false }),
          ),
      );
    }
  }
  const reads = await Promise.all(pending);
  await settledTag(emulator, side.tag, 8_000);
  const requests = emulator.requests.slice(since).filter((request) => request.headers["user-agent"]?.includes(side.tag) === true && request.kind === "pointRead");
  const byRegion: Record<string, number> = {};
  for (const request of requests) byRegion[request.region] = (byRegion[request.region] ?? 0) + 1;
  const skipReasons: Record<string, number> = {};
  const records = side.diagnostics.slice(diagSince).filter((record) => record.operation === "pointRead");
  for (const record of records) if (record.skipReason !== undefined) skipReasons[record.skipReason] = (skipReasons[record.skipReason] ?? 0) + 1;
  const ms = reads.map((read) => read.ms);
  return {
    reads,
    failures: reads.filter((read) => !read.ok).length,
    p50: Math.round(percentile(ms, 50)),
    p99: Math.round(percentile(ms, 99)),
    max: Math.round(Math.max(...ms)),
    byRegion,
    westUsAfter: (afterMs) => requests.filter((request) => request.region === "West US" && request.at - start >= afterMs).length,
    lastAt: (region) => {
      const last = requests.filter((request) => request.region === region).at(-1);
      return last === undefined ? -1 : Math.round(last.at - start);
    },
    start,
    skipReasons,
    hedgesFired: records.filter((record) => record.hedgeFired).length,
    requests,
    skipSpan: (reason) => {
      const at = side.diagnostics
        .map((record, index) => ({ record, at: side.times[index]! - start }))
        .slice(diagSince)
        .filter(({ record }) => record.operation === "pointRead" && record.skipReason === reason)
        .map(({ at: t }) => Math.round(t));
      return at.length === 0 ? [-1, -1] : [at[0]!, at.at(-1)!];
    },
  };
}

function brief(run: Run): string {
  return `reads ${run.reads.length}, failures ${run.failures}, p50 ${run.p50} p99 ${run.p99} max ${run.max} ms, byRegion ${JSON.stringify(run.byRegion)}, lastWestUs@${run.lastAt("West US")} ms, hedges ${run.hedgesFired}, skips ${JSON.stringify(run.skipReasons)}`;
}

/**
 * When the first 403/1008 West US answered a run came back, ms into the run (NaN: none). The bounds on a side's last
 * West US request count from it, not from the fault's nominal delay: a stall of the loaded machine delays the answer,
 * and the reads sent meanwhile, by as much.
 */
function first403(run: Run): number {
  const answer = run.requests.find((request) => request.region === "West US" && request.status === 403 && request.endedAt !== undefined);
  return answer === undefined ? Number.NaN : Math.round(answer.endedAt! - run.start);
}

/**
 * When both sides' first 403/1008 came back, ms into the run: plain's, on the same schedule and fault as hedged's, so
 * that a stall moves it as it moves hedged's; hedged's own must come as soon (its drained primary heard the answer).
 * A hedged side whose primaries were cut before their answer would otherwise anchor its bound on a late unhedged read.
 */
function first403Of(p: Run, h: Run): number {
  const plain = first403(p);
  assert.ok(first403(h) <= plain + 300, `hedged heard its first 403/1008 at ${first403(h)} ms, plain at ${plain} ms`);
  return plain;
}

const breakerOn = { enablePartitionLevelCircuitBreaker: true } as const;

// ---------------------------------------------------------------------------------------------------------------------

describe("breaker beside plain: an account without PPAF", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items });

  it("angle 1: breaker on, West US healthy but straggly (1 read in 10 +1 s, no errors), 10 reads/s for 20 s: hedging stays on (no sdkCircuitBreaker skip) and hedged p99 is well below plain's", async function () {
    const { plain, hedged } = await pairOn(fixture, {}, breakerOn);
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault(scoped({ delayMs: 1_000, every: 10 }, side.tag));
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 100, durationMs: 20_000 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures, 0);
    assert.equal(h!.failures, 0);
    assert.equal(h!.skipReasons["sdkCircuitBreaker"] ?? 0, 0, "healthy stragglers (200 within 2 s) disabled hedging");
    assert.ok(p!.p99 >= 900, `premise: plain's p99 pays the straggler: ${p!.p99}`);
    assert.ok(h!.p99 <= p!.p99 - 250, `hedged p99 ${h!.p99} not well below plain's ${p!.p99}`);
  });

  it("angle 5: breaker OFF (default connectionPolicy), West US 503 after 800 ms to every read, 30 reads one after another: no sdkCircuitBreaker skip at all, and hedges keep winning", async function () {
    const { plain, hedged } = await pairOn(fixture, {}, {});
    const run = async (side: Side): Promise<Run> => {
      fixture.emulator.region("West US").addFault(scoped({ status: 503, delayMs: 800 }, side.tag));
      const since = side.diagnostics.length;
      const start = performance.now();
      const reads: Read[] = [];
      for (let i = 0; i < 30; i++) {
        const t = performance.now();
        const ok = await side.container.item(`item-${(i % 11) + 1}`, "pk").read().then((r) => r.resource?.value === (i % 11) + 1, () => false);
        reads.push({ sentAt: t - start, ms: performance.now() - t, ok });
      }
      await settledTag(fixture.emulator, side.tag, 8_000);
      const records = side.diagnostics.slice(since).filter((record) => record.operation === "pointRead");
      const skipReasons: Record<string, number> = {};
      for (const record of records) if (record.skipReason !== undefined) skipReasons[record.skipReason] = (skipReasons[record.skipReason] ?? 0) + 1;
      const ms = reads.map((read) => read.ms);
      return { reads, failures: reads.filter((r) => !r.ok).length, p50: Math.round(percentile(ms, 50)), p99: Math.round(percentile(ms, 99)), max: 0, byRegion: {}, westUsAfter: () => 0, lastAt: () => 0, start, skipReasons, hedgesFired: records.filter((r) => r.hedgeFired).length, requests: [], skipSpan: () => [-1, -1] };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    console.log(`      plain:  ${brief(p)}\n      hedged: ${brief(h)}`);
    assert.equal(h.failures, 0);
    assert.equal(h.skipReasons["sdkCircuitBreaker"] ?? 0, 0, "the breaker is off, yet hedging deferred to it");
    assert.ok(h.p50 <= p.p50, "hedged p50 worse than plain's with the breaker off");
  });

  // helper-25: told to the breaker, a reset a hedge hid was counted as a failure, and after twelve the partition moved
  // off a West US that plain, whose SDK retries a reset where it was, never left.
  it("breaker on, twelve West US connections reset, then West US healthy: hedged stays on West US as plain does", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, breakerOn);
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault(scoped({ connectionReset: true, delayMs: 300, count: 12 }, side.tag));
    await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 150, durationMs: 3_000 })));
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 100, durationMs: 3_000 })));
    console.log(`      after the resets, plain:  ${brief(p!)}\n      after the resets, hedged: ${brief(h!)}`);
    assert.equal(p!.failures + h!.failures, 0);
    assert.equal(p!.byRegion["East US"] ?? 0, 0, `premise: plain's breaker counted no reset: ${JSON.stringify(p!.byRegion)}`);
    assert.equal(h!.byRegion["East US"] ?? 0, 0, `hedged's breaker moved off a healthy West US: ${JSON.stringify(h!.byRegion)}`);
  });

  // helper-25: with ten readers at once, counted primaries still draining kept the later ones from being counted at the
  // SDK's timeout, and the breaker tripped a second after plain's, with a hundred more West US requests. Ten readers every
  // 200 ms, not 100: at 200 reads a second and their 2 s timeouts, a loaded CI machine running two more test files beside
  // this one fell behind, East US missed the timeout too, and both sides collapsed (p50s of 8 to 90 s). A second late is
  // still five batches here, against the one batch (ten reads, 200 ms) each bound allows.
  it("breaker on, budget off, ten readers every 200 ms, West US silent for 3 s: hedged's breaker trips after as many West US attempts as plain's, its reads answered meanwhile", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100, budget: false } }, breakerOn);
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault(scoped({ delayMs: 3_000 }, side.tag));
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 200, durationMs: 4_000, batch: 10 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures + h!.failures, 0);
    const plainWest = p!.byRegion["West US"] ?? 0;
    assert.ok((h!.byRegion["West US"] ?? 0) <= plainWest + 10, `hedged's breaker tripped later: West US ${h!.byRegion["West US"]} against plain's ${plainWest}`);
    assert.ok(h!.lastAt("West US") <= p!.lastAt("West US") + 350, `hedged last read West US at ${h!.lastAt("West US")} ms, plain at ${p!.lastAt("West US")}`);
    // Both sides share one process, so a stall of the loaded CI machine lengthens both tails alike (CI once saw 1299 ms
    // against 3484): the hedges' rescue is asserted as the median and as the second they take off plain's tail.
    assert.ok(p!.p99 >= 2_000, `premise: plain's SDK cut the silent reads at 2 s: p99 ${p!.p99}`);
    assert.ok(h!.p50 < 1_000 && h!.p99 <= p!.p99 - 1_500, `the hedges answered the reads plain's SDK cut at 2 s: p50 ${h!.p50} against ${p!.p50}, p99 ${h!.p99} against ${p!.p99}`);
  });

  it("breaker on, West US answering 503 at once and East US slow: once the breaker moved the partition off West US, hedged's hedges stay off it as plain's reads do", async function () {
    // helper-25 of the sixteenth session: with the partition moved to East US, every slow East US read hedged into the
    // next region in order, West US, which the SDK had stopped reading from (57 West US requests against plain's 12).
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 50 } }, breakerOn);
    const run = async (side: Side): Promise<{ failures: number; totalMs: number; westUs: number; westUsAfterMove: number; moveAt: number; regions: string }> => {
      fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag));
      fixture.emulator.region("East US").addFault(scoped({ delayMs: 250 }, side.tag));
      const since = fixture.emulator.requests.length;
      let failures = 0;
      const began = performance.now();
      for (let i = 0; i < 30; i++) {
        const n = (i % 11) + 1;
        const ok = await side.container.item(`item-${n}`, "pk").read().then((r) => r.resource?.value === n, () => false);
        if (!ok) failures++;
      }
      const totalMs = Math.round(performance.now() - began);
      await settledTag(fixture.emulator, side.tag, 8_000);
      const mine = fixture.emulator.requests.slice(since).filter((r) => r.headers["user-agent"]?.includes(side.tag) === true && r.kind === "pointRead");
      // The move: the first read the SDK itself sent to East US first, with no West US 503 before it.
      const firstEastUsFirst = mine.findIndex((r, index) => r.region === "East US" && (index === 0 || mine[index - 1]!.region !== "West US"));
      const moveAt = firstEastUsFirst === -1 ? mine.length : firstEastUsFirst;
      return {
        failures,
        totalMs,
        westUs: mine.filter((r) => r.region === "West US").length,
        westUsAfterMove: mine.slice(moveAt).filter((r) => r.region === "West US").length,
        moveAt,
        regions: mine.map((r) => `${r.region.split(" ").map((w) => w[0]).join("")}:${r.status ?? "x"}`).join(" "),
      };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    const summary = `plain ${JSON.stringify({ ...p, regions: undefined })}\n      hedged ${JSON.stringify({ ...h, regions: undefined })}\n      plain ${p.regions}\n      hedged ${h.regions}`;
    console.log(`      ${summary}`);
    assert.equal(p.failures, 0, summary);
    assert.equal(h.failures, 0, summary);
    assert.ok(p.moveAt < 40 && p.westUsAfterMove === 0, `premise: plain's breaker moved the partition to East US and read West US no more\n      ${summary}`);
    assert.ok(h.westUs <= p.westUs + 1, `hedged kept hedging into the West US the breaker moved the partition off\n      ${summary}`);
    assert.ok(h.totalMs < p.totalMs, `hedged slower than plain\n      ${summary}`);
  });

  it("angle 8a': breaker on, drainLosers: false (default budget), West US 503 after 800 ms, 30 reads one after another: hedged's breaker trips as plain's", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { drainLosers: false } }, breakerOn);
    await sequentialBreakerCase(fixture, plain, hedged, { status: 503, delayMs: 800 });
  });

});

/** 30 reads one after another under `rule` on West US: hedged must end as plain, and its breaker must move its reads off West US as plain's does. */
async function sequentialBreakerCase(fixture: { readonly emulator: Emulator }, plain: Side, hedged: Side, rule: FaultRule, readOptions: Record<string, unknown> = {}): Promise<void> {
  const run = async (side: Side): Promise<{ failures: number; ms: number[]; westUs: number; lastTenWestUs: number; lastTenMs: number; skips: Record<string, number>; hedges: number; regions: string }> => {
    fixture.emulator.region("West US").addFault(scoped(rule, side.tag));
    const diagSince = side.diagnostics.length;
    const since = fixture.emulator.requests.length;
    let failures = 0;
    const ms: number[] = [];
    let lastTenMark = 0;
    for (let i = 0; i < 30; i++) {
      if (i === 20) lastTenMark = fixture.emulator.requests.length;
      const t = performance.now();
      const ok = await side.container.item(`item-${(i % 11) + 1}`, "pk").read(readOptions).then((r) => r.resource?.value === (i % 11) + 1, () => false);
      ms.push(Math.round(performance.now() - t));
      if (!ok) failures++;
    }
    await settledTag(fixture.emulator, side.tag, 8_000);
    const mine = (from: number): RecordedRequest[] => fixture.emulator.requests.slice(from).filter((r) => r.headers["user-agent"]?.includes(side.tag) === true && r.kind === "pointRead");
    const skips: Record<string, number> = {};
    const records = side.diagnostics.slice(diagSince).filter((record) => record.operation === "pointRead");
    for (const record of records) if (record.skipReason !== undefined) skips[record.skipReason] = (skips[record.skipReason] ?? 0) + 1;
    return {
      failures,
      ms,
      westUs: mine(since).filter((r) => r.region === "West US").length,
      lastTenWestUs: mine(lastTenMark).filter((r) => r.region === "West US").length,
      lastTenMs: ms.slice(20).reduce((a, b) => a + b, 0),
      skips,
      hedges: records.filter((record) => record.hedgeFired).length,
      regions: mine(since).map((r) => `${r.region.split(" ").map((w) => w[0]).join("")}:${r.status ?? "x"}`).join(" "),
    };
  };
  const [p, h] = await Promise.all([run(plain), run(hedged)]);
  const summary = `plain ${JSON.stringify({ ...p, regions: undefined, ms: undefined })}\n      hedged ${JSON.stringify({ ...h, regions: undefined, ms: undefined })}\n      plain ms ${p.ms.join(",")}\n      hedged ms ${h.ms.join(",")}\n      plain ${p.regions}\n      hedged ${h.regions}`;
  console.log(`      ${summary}`);
  assert.equal(p.failures, 0, summary);
  assert.equal(h.failures, 0, summary);
  assert.equal(p.lastTenWestUs, 0, `premise: plain's breaker moved its last reads off West US\n      ${summary}`);
  assert.ok(h.lastTenWestUs <= p.lastTenWestUs + 1, `hedged still reading the failing West US after plain's breaker tripped\n      ${summary}`);
  assert.ok(h.lastTenMs <= p.lastTenMs + 1_000, `hedged's last 10 reads slower than plain's\n      ${summary}`);
}

// ---------------------------------------------------------------------------------------------------------------------

describe("endpoint discovery beside plain: a region that answers 403/1008 (no longer the account's) late", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items });

  // Found by a hostile review of 30754c7: a hedge that won hid West US's 403/1008 from the SDK's endpoint discovery,
  // which marks a region unavailable after one such answer, breaker or not; every read then paid the threshold and a
  // second request for good, where plain moved to East US after its first read.
  it("hedged stops sending to the region as plain does, within a read or two of the first 403/1008 showing, with the same answers", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelFailover: false });
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 800 }, side.tag));
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 4_200 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures, 0);
    assert.equal(h!.failures, 0);
    // Plain sends West US the reads that go before its first 403/1008 comes back (at 800 ms), then none.
    const plainWest = p!.byRegion["West US"] ?? 0;
    assert.ok(plainWest >= 1 && plainWest <= 4 && p!.lastAt("West US") < first403(p!) + 200, `premise: ${JSON.stringify(p!.byRegion)}, last at ${p!.lastAt("West US")} ms, first 403/1008 at ${first403(p!)} ms`);
    // Hedged sends it as many, hedged and answered by East US; the drained primary's 403/1008 is told to the SDK, which
    // marks the region as after its own; then none.
    assert.ok((h!.byRegion["West US"] ?? 0) <= plainWest + 1, `hedged kept sending to West US: ${JSON.stringify(h!.byRegion)}`);
    assert.ok(h!.lastAt("West US") < first403Of(p!, h!) + 700, `hedged sent to West US at ${h!.lastAt("West US")} ms, its first 403/1008 at ${first403(h!)} ms`);
    assert.equal(h!.skipReasons["sdkEndpointDiscovery"] ?? 0, 0, `the SDK was told, no read went unhedged: ${JSON.stringify(h!.skipReasons)}`);
    assert.equal(h!.skipReasons["sdkCircuitBreaker"] ?? 0, 0, "the breaker is off");
    const total = (run: Run): number => run.reads.reduce((sum, read) => sum + read.ms, 0);
    assert.ok(total(h!) <= total(p!) + 600, `hedged reads took ${Math.round(total(h!))} ms in all, plain's ${Math.round(total(p!))}`);
  });

  // Found by helper-22: a hedge that won hid West US's one 403/1008; the deferral that followed was ended by the region's
  // next, slow but ordinary, answer, and every read was hedged for good (7.1 s against plain's 1.9 s), where plain's
  // one answer kept its reads away for the SDK's five minutes. The drained primary's answer is now told to the SDK.
  for (const [label, connectionPolicy] of [
    ["the breaker off", { enablePartitionLevelFailover: false }],
    // helper-24: with the breaker on, the 403/1008 was the breaker's to count, and nothing marked the region.
    ["the breaker on", breakerOn],
  ] as const) {
    it(`one 403/1008, then a region slow but answering, ${label}: hedged moves its reads away as plain does, for as long`, async function () {
      const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, connectionPolicy);
      for (const side of [plain, hedged]) {
        fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 800, count: 1 }, side.tag));
        fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
      }
      const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 6_000 })));
      console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
      assert.equal(p!.failures + h!.failures, 0);
      const plainWest = p!.byRegion["West US"] ?? 0;
      assert.ok(plainWest >= 1 && p!.lastAt("West US") < first403(p!) + 700, `premise: plain moved off West US after its 403/1008: ${JSON.stringify(p!.byRegion)}, last at ${p!.lastAt("West US")} ms, the 403/1008 at ${first403(p!)} ms`);
      assert.ok((h!.byRegion["West US"] ?? 0) <= plainWest + 2, `hedged kept sending to West US: ${JSON.stringify(h!.byRegion)}`);
      assert.ok(h!.lastAt("West US") < first403Of(p!, h!) + 1_200, `hedged sent to West US at ${h!.lastAt("West US")} ms, its 403/1008 at ${first403(h!)} ms`);
      assert.equal((h!.skipReasons["sdkEndpointDiscovery"] ?? 0) + (h!.skipReasons["sdkCircuitBreaker"] ?? 0), 0, `the SDK was told, no read went unhedged: ${JSON.stringify(h!.skipReasons)}`);
      const total = (run: Run): number => run.reads.reduce((sum, read) => sum + read.ms, 0);
      assert.ok(total(h!) <= total(p!) + 600, `hedged reads took ${Math.round(total(h!))} ms in all, plain's ${Math.round(total(p!))}`);
    });
  }

  // helper-26: with the breaker on, the watch took 2 s for the SDK's timeout of every request; a query plan, which the
  // SDK waits its requestTimeout for and resolves no partition for, was deferred instead of marked, and the point reads
  // after it went unhedged to a slow West US (13.9 s against plain's 1.0 s).
  it("the breaker on, a query whose plan answers 403/1008 after 2.5 s, then West US slow: the SDK marks West US as plain's does", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, breakerOn);
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 2_500, count: 1 }, side.tag, ["queryPlan"]));
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
    }
    const queried = await Promise.all([plain, hedged].map((side) => side.container.items.query("SELECT * FROM c").fetchAll()));
    assert.deepEqual(
      queried.map(({ resources }) => resources.length),
      [items.length, items.length],
    );
    // The drained plan's answer comes at 2.5 s, the SDK's mark after its account read.
    await sleep(3_000);
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 3_000 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures + h!.failures, 0);
    assert.equal(p!.byRegion["West US"] ?? 0, 0, `premise: plain's SDK marked West US after the plan's 403/1008: ${JSON.stringify(p!.byRegion)}`);
    assert.equal(h!.byRegion["West US"] ?? 0, 0, `hedged's point reads still went to West US: ${JSON.stringify(h!.byRegion)}, skips ${JSON.stringify(h!.skipReasons)}`);
  });

  // helper-24: one withHedging result given to two CosmosClients shares one hedging client between two of the SDK's
  // endpoint managers; a mark went to neither, and the deferral that stood in for it was ended by the next slow answer
  // (54 West US requests against the two plain clients' 6).
  it("one withHedging result given to two CosmosClients: each client's hidden 403/1008 marks that client's region, as two plain clients", async function () {
    const clients = async (hedging: boolean): Promise<Side[]> => {
      const tag = newTag(hedging ? "shared" : "plains");
      const diagnostics: HedgeDiagnostics[] = [];
      const times: number[] = [];
      const options = clientOptions(fixture, tag, { enablePartitionLevelFailover: false });
      const built = hedging ? withHedging(options, { crossRegion: { threshold: 100 }, onDiagnostics: (record) => void (diagnostics.push(record), times.push(performance.now())) }) : options;
      const sides: Side[] = [];
      for (let i = 0; i < 2; i++) {
        const container = fixture.adopt(new CosmosClient(built)).database("db").container("items");
        await container.item("item-0", "pk").read();
        sides.push({ label: hedging ? "hedged" : "plain", tag, container, diagnostics, times });
      }
      await settledTag(fixture.emulator, tag, 6_000);
      diagnostics.length = 0;
      return sides;
    };
    const plains = await clients(false);
    const shared = await clients(true);
    for (const side of [plains[0]!, shared[0]!]) {
      fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 800, count: 2 }, side.tag));
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
    }
    const runs = await Promise.all([...plains, ...shared].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 6_000 })));
    // Each pair of clients shares a tag: a run's requests are both clients'.
    console.log(`      plain (two clients):  ${brief(runs[0]!)}\n      hedged (two clients): ${brief(runs[2]!)}`);
    assert.equal(runs.reduce((sum, run) => sum + run.failures, 0), 0);
    assert.ok((runs[2]!.byRegion["West US"] ?? 0) <= (runs[0]!.byRegion["West US"] ?? 0) + 2, `the shared hedging client kept reading West US: ${JSON.stringify(runs[2]!.byRegion)}`);
    const total = (run: Run): number => run.reads.reduce((sum, read) => sum + read.ms, 0);
    assert.ok(total(runs[2]!) + total(runs[3]!) <= total(runs[0]!) + total(runs[1]!) + 1_200, "the shared hedging client slower in all");
  });

  // helper-24: once the SDK had marked West US, its reads went to East US, and a slow East US read was hedged into West
  // US, which answered 403/1008 every time (24 such hedges in 20 s, against plain's none after its mark).
  it("no hedge goes to a region that answered 403/1008, for the SDK's five minutes", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelFailover: false });
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 500 }, side.tag));
      fixture.emulator.region("East US").addFault(scoped({ delayMs: 300, every: 3 }, side.tag));
    }
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 200, durationMs: 6_000 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures + h!.failures, 0);
    assert.ok(p!.lastAt("West US") < first403(p!) + 1_000, `premise: plain left West US after its first 403/1008s, last at ${p!.lastAt("West US")} ms, the first at ${first403(p!)} ms`);
    assert.ok(h!.lastAt("West US") < first403Of(p!, h!) + 1_000, `hedged sent to West US at ${h!.lastAt("West US")} ms, its first 403/1008 at ${first403(h!)} ms: ${JSON.stringify(h!.byRegion)}`);
    assert.ok(h!.hedgesFired >= 3, "premise: East US's slow reads were hedged (to North Europe)");
  });

  // A metadata hedge hid the same from the SDK: the Collection read's hedge answered at the metadata threshold, the
  // SDK never marked West US, and its point reads went on to it (slow there), each hedged, where plain's went elsewhere.
  it("a container read whose primary answers 403/1008 after the metadata hedge won: the SDK is told, and the point reads after it leave the region as plain's", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelFailover: false });
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 2_000, count: 1 }, side.tag, ["collectionRead"]));
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
    }
    const containerReads = await Promise.all(
      [plain, hedged].map(async (side) => {
        const started = performance.now();
        const { statusCode } = await side.container.read();
        return { statusCode, ms: Math.round(performance.now() - started) };
      }),
    );
    // The drained primary's 403/1008 comes at 2 s, the SDK's mark after its account read: wait for it before reading on.
    await sleep(1_000);
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 3_000 })));
    console.log(`      container reads: ${JSON.stringify(containerReads)}\n      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.deepEqual(
      containerReads.map(({ statusCode }) => statusCode),
      [200, 200],
    );
    assert.equal(p!.failures + h!.failures, 0);
    assert.equal(p!.byRegion["West US"] ?? 0, 0, `premise: plain's point reads left West US after its container read's 403/1008: ${JSON.stringify(p!.byRegion)}`);
    assert.equal(h!.byRegion["West US"] ?? 0, 0, `hedged's point reads still went to West US: ${JSON.stringify(h!.byRegion)}`);
    assert.equal(h!.hedgesFired, 0, "nothing for a hedge to do once the reads go to East US");
  });

  // Found by the tenth hostile review: over a transport of the user's, the losing primary was cut with the hedges, so the
  // watch never heard its 403/1008. A primary drains there (plain waits for that very request); only hedges are cut.
  it("the same over an httpClient of the user's on fetch: the losing primary drains, its 403/1008 is heard", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelFailover: false }, { httpClient: fetchTransport() });
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault(scoped({ status: 403, substatus: 1008, delayMs: 800 }, side.tag));
    const [p, h] = await Promise.all([plain, hedged].map((side) => steady(fixture.emulator, side, { everyMs: 300, durationMs: 4_200 })));
    console.log(`      plain:  ${brief(p!)}\n      hedged: ${brief(h!)}`);
    assert.equal(p!.failures + h!.failures, 0);
    const plainWest = p!.byRegion["West US"] ?? 0;
    assert.ok((h!.byRegion["West US"] ?? 0) <= plainWest + 1, `hedged kept sending to West US: ${JSON.stringify(h!.byRegion)}`);
    assert.ok(h!.lastAt("West US") < first403Of(p!, h!) + 700, `hedged sent to West US at ${h!.lastAt("West US")} ms, its first 403/1008 at ${first403(h!)} ms`);
    assert.equal(h!.skipReasons["sdkEndpointDiscovery"] ?? 0, 0, `the SDK was told: ${JSON.stringify(h!.skipReasons)}`);
  });
});

describe("breaker beside plain: the SDK's default enablePartitionLevelFailover, an account reporting PPAF", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items, emulator: { perPartitionFailover: true } });

  it("angle 4a: enablePartitionLevelFailover: true, the account reporting PPAF: the watch is on, hedged's breaker trips as plain's (West US 503 after 800 ms)", async function () {
    const { plain, hedged } = await pairOn(fixture, {}, { enablePartitionLevelFailover: true });
    await sequentialBreakerCase(fixture, plain, hedged, { status: 503, delayMs: 800 });
  });

  // @azure/cosmos 4.10.1's defaultConnectionPolicy has enablePartitionLevelFailover: true: a client that never names the
  // option has the breaker on as soon as the account reports PPAF. withHedging reads the user's connectionPolicy only
  // (sdkCircuitBreaker: `connectionPolicy?.enablePartitionLevelFailover === true`), so it wires no watch at all.
  it("angle 8e: DEFAULT connectionPolicy (no breaker option named), the account reporting PPAF, West US 503 after 800 ms: hedged's breaker trips as plain's", async function () {
    const { plain, hedged } = await pairOn(fixture, {}, {});
    await sequentialBreakerCase(fixture, plain, hedged, { status: 503, delayMs: 800 });
  });

  // withHedging cannot refuse a threshold past the SDK's 2000 ms read timeout here (nothing in the options turns the
  // timeout on); the account's PPAF does, and the client says so when it learns it.
  it("a threshold of 2500 ms with the DEFAULT connectionPolicy: one warning names it and the SDK's 2000 ms once the account reports PPAF, and a read of a region answering after 3 s ends as plain's, unhedged", async function () {
    const logs = captureAzureLogs("warning");
    try {
      const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 2_500 } }, {});
      const warnings = logs.packageLines().filter((line) => line.includes("crossRegion.threshold"));
      assert.equal(warnings.length, 1, logs.packageLines().join("\n"));
      assert.match(warnings[0]!, /crossRegion\.threshold is 2500 ms, but @azure\/cosmos now cuts each read of a document at 2000 ms/);
      const outcome = async (side: Side): Promise<string> => {
        fixture.emulator.region("West US").addFault(scoped({ delayMs: 3_000, count: 1 }, side.tag));
        return side.container.item("item-1", "pk").read().then((response) => `${response.statusCode} ${response.resource?.value}`, (error: { code?: unknown }) => `error ${String(error.code)}`);
      };
      const [p, h] = await Promise.all([outcome(plain), outcome(hedged)]);
      assert.equal(h, p);
      assert.equal(hedged.diagnostics.some((record) => record.hedgeFired), false, "a hedge went out after the SDK's timeout");
      assert.equal(logs.packageLines().filter((line) => line.includes("crossRegion.threshold")).length, 1, "warned more than once");
    } finally {
      logs.restore();
    }
  });
});

describe("breaker beside plain: enablePartitionLevelFailover without PPAF", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items });

  it("angle 4b: enablePartitionLevelFailover: true without the account reporting PPAF: the watch stays off (hedges keep winning, no sdkCircuitBreaker skip)", async function () {
    const { plain, hedged } = await pairOn(fixture, {}, { enablePartitionLevelFailover: true });
    const run = async (side: Side): Promise<{ ms: number[]; skips: Record<string, number>; hedgeWins: number; failures: number }> => {
      fixture.emulator.region("West US").addFault(scoped({ status: 503, delayMs: 800 }, side.tag));
      const since = side.diagnostics.length;
      const ms: number[] = [];
      let failures = 0;
      for (let i = 0; i < 20; i++) {
        const t = performance.now();
        if (!(await side.container.item(`item-${(i % 11) + 1}`, "pk").read().then((r) => r.resource?.value === (i % 11) + 1, () => false))) failures++;
        ms.push(Math.round(performance.now() - t));
      }
      await settledTag(fixture.emulator, side.tag, 8_000);
      const records = side.diagnostics.slice(since).filter((record) => record.operation === "pointRead");
      const skips: Record<string, number> = {};
      for (const record of records) if (record.skipReason !== undefined) skips[record.skipReason] = (skips[record.skipReason] ?? 0) + 1;
      return { ms, skips, hedgeWins: records.filter((record) => record.hedgeWon).length, failures };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    console.log(`      plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`);
    assert.equal(h.failures, 0);
    assert.equal(h.skips["sdkCircuitBreaker"] ?? 0, 0, "the watch deferred without PPAF");
    assert.ok(h.hedgeWins >= 5, "hedges stopped winning");
  });
});

// An agent of the user's that bounds its sockets (maxSockets): losers are aborted rather than drained (boundsSockets),
// exactly as with drainLosers: false, with every hedging option left at its default.
describe("breaker beside plain: the user's https agent with maxSockets", function () {
  this.timeout(240_000);
  const fixture = useWanEmulator({ wan: { rttMs: { "East US": 1, "West US": 1, "North Europe": 1 } }, items });

  it("angle 8f: breaker on, an https agent with maxSockets: 10, the defaults, West US 503 after 800 ms, 30 reads one after another: hedged's breaker trips as plain's", async function () {
    const agents: https.Agent[] = [];
    const clients: CosmosClient[] = [];
    try {
      const sides: Side[] = [];
      for (const hedged of [false, true]) {
        const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca, maxSockets: 10 });
        agents.push(agent);
        const tag = newTag(hedged ? "wan-hedged" : "wan-plain");
        const diagnostics: HedgeDiagnostics[] = [];
        const times: number[] = [];
        const base: CosmosClientOptions = {
          endpoint: fixture.wan.endpoint,
          key: fixture.emulator.key,
          agent,
          userAgentSuffix: tag,
          connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations, ...breakerOn },
        };
        const client = new CosmosClient(hedged ? withHedging(base, { onDiagnostics: (record) => void (diagnostics.push(record), times.push(performance.now())) }) : base);
        clients.push(client);
        const container = client.database("db").container("items");
        await container.item("item-0", "pk").read();
        await settledTag(fixture.emulator, tag, 6_000);
        diagnostics.length = 0;
        sides.push({ label: hedged ? "hedged" : "plain", tag, container, diagnostics, times });
      }
      await sequentialBreakerCase(fixture, sides[0]!, sides[1]!, { status: 503, delayMs: 800 });
    } finally {
      for (const client of clients) client.dispose();
      for (const agent of agents) agent.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Hostile review of 67689f7/e4c7e80 (attack20): each worse than plain there.

/** `n` point reads one after another: failures, total ms, point reads per region and their sequence. */
async function readsOf(emulator: Emulator, side: Side, n: number, readOptions: RequestOptions = {}): Promise<{ failures: number; ms: number; byRegion: Record<string, number>; regions: string }> {
  const since = emulator.requests.length;
  let failures = 0;
  const began = performance.now();
  for (let i = 0; i < n; i++) {
    const id = (i % 11) + 1;
    if (!(await side.container.item(`item-${id}`, "pk").read(readOptions).then((r) => r.resource?.value === id, () => false))) failures++;
  }
  const ms = Math.round(performance.now() - began);
  await settledTag(emulator, side.tag, 8_000);
  const mine = emulator.requests.slice(since).filter((r) => r.headers["user-agent"]?.includes(side.tag) === true && r.kind === "pointRead");
  const byRegion: Record<string, number> = {};
  for (const r of mine) byRegion[r.region] = (byRegion[r.region] ?? 0) + 1;
  return { failures, ms, byRegion, regions: mine.map((r) => `${r.region.split(" ").map((w) => w[0]).join("")}:${r.status ?? "x"}`).join(" ") };
}

describe("breaker beside plain: the breaker's moves, hostile review of 67689f7", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items });

  // The SDK's partition override ignores a read's excludedLocations; the steering re-pointed the read at the first
  // applicable region, West US, which the breaker had moved the partition off, and the SDK charged West US's 503 to the
  // East US its override named: its breaker moved the partition off a healthy East US, onto a slow North Europe.
  it("the partition moved to a healthy East US (West US 503): one read with excludedLocations [East US] is not steered into West US, and the reads after it stay on East US as plain's", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 50 } }, breakerOn);
    const run = async (side: Side) => {
      fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag));
      fixture.emulator.region("North Europe").addFault(scoped({ delayMs: 400 }, side.tag));
      const moved = await readsOf(fixture.emulator, side, 15);
      const excluding = await readsOf(fixture.emulator, side, 1, { excludedLocations: ["East US"] });
      const after = await readsOf(fixture.emulator, side, 20);
      return { moved, excluding, after };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
    console.log(`      ${summary}`);
    assert.equal(p.moved.failures + p.excluding.failures + p.after.failures + h.moved.failures + h.excluding.failures + h.after.failures, 0, summary);
    assert.equal(p.after.byRegion["East US"], 20, `premise: plain's breaker keeps the partition on East US, its exclusion notwithstanding\n      ${summary}`);
    assert.equal(h.excluding.byRegion["West US"] ?? 0, 0, `the read excluding East US was steered into the West US the breaker moved the partition off\n      ${summary}`);
    assert.equal(h.after.byRegion["East US"] ?? 0, 20, `hedged's breaker moved the partition off a healthy East US\n      ${summary}`);
    assert.ok(h.after.ms <= p.after.ms + 600, `hedged's reads after the exclusion slower than plain's\n      ${summary}`);
  });

  // A read sent to East US while the partition was there, whose hedge came due after the breaker had moved the partition
  // on to North Europe: its endpoint no longer the move's currentEndPoint, partitionMovedOff said nothing moved, and its
  // first hedge went to West US (40 such, against plain's none).
  it("ten readers every 50 ms on a partition the breaker moved to East US, then East US answers 503 after 400 ms ten times: no hedge goes to West US, as no read of plain's does", async function () {
    const { plain, hedged } = await pairOn(fixture, { crossRegion: { threshold: 200, budget: false } }, breakerOn);
    const run = async (side: Side) => {
      const east = fixture.emulator.region("East US");
      fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag));
      const slow = east.addFault(scoped({ delayMs: 400 }, side.tag));
      const moved = await readsOf(fixture.emulator, side, 15);
      const since = fixture.emulator.requests.length;
      const start = performance.now();
      const pending: Promise<boolean>[] = [];
      for (let i = 0; i < 60; i++) {
        const due = start + i * 50;
        if (due > performance.now()) await sleep(due - performance.now());
        if (i === 20) {
          slow.remove();
          east.addFault(scoped({ status: 503, delayMs: 400, count: 10 }, side.tag));
          east.addFault(scoped({ delayMs: 400 }, side.tag));
        }
        for (let j = 0; j < 10; j++) {
          const id = ((i * 10 + j) % 11) + 1;
          pending.push(side.container.item(`item-${id}`, "pk").read().then((r) => r.resource?.value === id, () => false));
        }
      }
      const failures = (await Promise.all(pending)).filter((ok) => !ok).length;
      await settledTag(fixture.emulator, side.tag, 8_000);
      const mine = fixture.emulator.requests.slice(since).filter((r) => r.headers["user-agent"]?.includes(side.tag) === true && r.kind === "pointRead");
      const byRegion: Record<string, number> = {};
      for (const r of mine) byRegion[r.region] = (byRegion[r.region] ?? 0) + 1;
      return { moved: moved.byRegion, failures, byRegion };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
    console.log(`      ${summary}`);
    assert.equal(p.failures + h.failures, 0, summary);
    assert.equal(p.byRegion["West US"] ?? 0, 0, `premise: plain's breaker kept the partition off West US throughout\n      ${summary}`);
    assert.ok((p.byRegion["North Europe"] ?? 0) > 0, `premise: plain's breaker moved the partition on to North Europe\n      ${summary}`);
    assert.ok((h.byRegion["West US"] ?? 0) <= 2, `hedged hedged into the West US the breaker had moved the partition off\n      ${summary}`);
  });

  // The client's own exclusion (the package's steering, which the user asked for) re-pointed the read at the first region
  // it allows, West US, which the breaker had moved the partition off: a 503 the SDK charged to the East US it addressed.
  it("the partition moved to East US (West US 503), the hedging client excluding East US: its reads are re-pointed past West US, to North Europe", async function () {
    const tag = newTag("client-excluding");
    const options = withHedging(clientOptions(fixture, tag, breakerOn), { crossRegion: { threshold: 50 } });
    const container = fixture.adopt(new CosmosClient(options)).database("db").container("items");
    await container.item("item-0", "pk").read();
    await settledTag(fixture.emulator, tag, 6_000);
    const side: Side = { label: "hedged", tag, container, diagnostics: [], times: [] };
    fixture.emulator.region("West US").addFault(scoped({ status: 503 }, tag));
    const moved = await readsOf(fixture.emulator, side, 15);
    (options.httpClient as HedgingHttpClient).regions.setExcludedRegions(["East US"]);
    const after = await readsOf(fixture.emulator, side, 20);
    const summary = `moved ${JSON.stringify(moved)}\n      after ${JSON.stringify(after)}`;
    console.log(`      ${summary}`);
    assert.equal(moved.failures + after.failures, 0, summary);
    assert.equal(after.byRegion["West US"] ?? 0, 0, `re-pointed into the West US the breaker moved the partition off\n      ${summary}`);
    assert.equal(after.byRegion["North Europe"] ?? 0, 20, summary);
  });
});

/** The options of an Entra ID client of a WAN fixture's emulator, whose token it accepts, over `agent`. */
function aadOptions(fixture: { readonly wan: { readonly endpoint: string } }, aadToken: string, agent: https.Agent, extra: Partial<CosmosClientOptions> = {}): CosmosClientOptions {
  return {
    endpoint: fixture.wan.endpoint,
    aadCredentials: { getToken: async () => ({ token: aadToken, expiresOnTimestamp: Date.now() + 3_600_000 }) },
    agent,
    ...extra,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations, ...extra.connectionPolicy },
  };
}

describe("breaker beside plain: Entra ID (aadCredentials), hostile review of 67689f7", function () {
  this.timeout(240_000);
  const aadToken = "breaker-aad-token";
  const fixture = useWanEmulator({ emulator: { aadToken }, wan: { rttMs: { "East US": 1, "West US": 1, "North Europe": 1 } }, items });

  // Through the SDK's own pipeline (AAD) no request context is kept: partitionMovedOff says nothing moved, and every slow
  // East US read hedged into West US first (20 West US requests against plain's 11).
  it("aadCredentials, West US answering 503 at once and East US slow: once the breaker moved the partition off West US, hedged's hedges stay off it as plain's reads do", async function () {
    const agents: https.Agent[] = [];
    const clients: CosmosClient[] = [];
    try {
      const sides: Side[] = [];
      for (const hedged of [false, true]) {
        const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca });
        agents.push(agent);
        const tag = newTag(hedged ? "aad-hedged" : "aad-plain");
        const base = aadOptions(fixture, aadToken, agent, { userAgentSuffix: tag, connectionPolicy: breakerOn });
        const client = new CosmosClient(hedged ? withHedging(base, { crossRegion: { threshold: 50 } }) : base);
        clients.push(client);
        const container = client.database("db").container("items");
        await container.item("item-0", "pk").read();
        await settledTag(fixture.emulator, tag, 6_000);
        sides.push({ label: hedged ? "hedged" : "plain", tag, container, diagnostics: [], times: [] });
      }
      const run = async (side: Side) => {
        fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag));
        fixture.emulator.region("East US").addFault(scoped({ delayMs: 250 }, side.tag));
        return readsOf(fixture.emulator, side, 30);
      };
      const [p, h] = await Promise.all(sides.map(run));
      const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
      console.log(`      ${summary}`);
      assert.equal(p!.failures + h!.failures, 0, summary);
      assert.ok((h!.byRegion["West US"] ?? 0) <= (p!.byRegion["West US"] ?? 0) + 1, `hedged kept hedging into the West US the breaker moved the partition off\n      ${summary}`);
    } finally {
      for (const client of clients) client.dispose();
      for (const agent of agents) agent.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Hostile review of fa91e7d (attack21): each worse there than before it, the first two against the documented promise of
// hedgingRequestOptions' exclusions, the last a memory retention.

describe("breaker beside plain: hostile review of fa91e7d, the package's own per-request exclusions", function () {
  this.timeout(240_000);
  const fixture = useEmulator({ items });

  it("a container read with hedgingRequestOptions({ excludedRegions: [West US] }) never reaches West US, which the SDK applies no exclusion to", async function () {
    const { hedged } = await pairOn(fixture, {});
    fixture.emulator.region("West US").addFault(scoped({ delayMs: 3_000 }, hedged.tag, ["collectionRead"]));
    const since = fixture.emulator.requests.length;
    const started = performance.now();
    const { statusCode } = await hedged.container.read(hedgingRequestOptions({ excludedRegions: ["West US"] }));
    const ms = Math.round(performance.now() - started);
    await settledTag(fixture.emulator, hedged.tag, 8_000);
    const reads = fixture.emulator.requests.slice(since).filter((r) => r.headers["user-agent"]?.includes(hedged.tag) === true && r.kind === "collectionRead");
    assert.equal(statusCode, 200);
    assert.deepEqual(
      reads.map((r) => r.region),
      ["East US"],
      `${ms} ms`,
    );
  });

  it("the breaker moved the partition to West US: reads with hedgingRequestOptions({ excludedRegions: [West US] }) stay off West US", async function () {
    const { hedged } = await pairOn(fixture, { crossRegion: { threshold: 100 } }, breakerOn);
    fixture.emulator.region("East US").addFault(scoped({ status: 503 }, hedged.tag));
    // Reads excluding West US fail over East US -> North Europe; after 11 East US 503s the breaker moves the partition to West US.
    const moving = await readsOf(fixture.emulator, hedged, 14, { excludedLocations: ["West US"] });
    fixture.emulator.region("West US").addFault(scoped({ delayMs: 300 }, hedged.tag));
    const excluding = await readsOf(fixture.emulator, hedged, 10, hedgingRequestOptions({ excludedRegions: ["West US"] }));
    const summary = `moving ${JSON.stringify(moving)}\n      excluding ${JSON.stringify(excluding)}`;
    assert.ok(moving.regions.endsWith("WU:200 WU:200 WU:200 WU:200"), `premise: the breaker moved the partition to West US\n      ${summary}`);
    assert.equal(excluding.failures, 0, summary);
    assert.equal(excluding.byRegion["West US"] ?? 0, 0, summary);
  });
});

describe("breaker beside plain: hostile review of fa91e7d, Entra ID request contexts kept by operation", function () {
  this.timeout(240_000);
  const aadToken = "fa91e7d-aad-token";
  const fixture = useWanEmulator({ emulator: { aadToken }, wan: { rttMs: { "East US": 1, "West US": 1, "North Europe": 1 } }, items });

  it("an upsert's response kept by the caller does not keep the SDK's request context (and its body) alive, as plain's does not", async function () {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const outcome: Record<string, boolean> = {};
    for (const hedged of [false, true]) {
      const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca });
      let captured: WeakRef<object> | undefined;
      const capture = {
        on: "request",
        plugin: (context: object, _node: unknown, next: (c: object) => Promise<unknown>) => {
          if ((context as { operationType?: string }).operationType === "upsert") captured = new WeakRef(context);
          return next(context);
        },
      };
      // The SDK's plugins option, which its public type leaves out.
      const base = aadOptions(fixture, aadToken, agent, { plugins: [capture] } as Partial<CosmosClientOptions>);
      const client = new CosmosClient(hedged ? withHedging(base) : base);
      try {
        const kept = await client.database("db").container("items").items.upsert({ id: `kept-${hedged}`, pk: "pk", body: "x".repeat(50_000) });
        await sleep(100);
        for (let i = 0; i < 5; i++) gc();
        await sleep(100);
        gc();
        outcome[hedged ? "hedged" : "plain"] = captured?.deref() !== undefined;
        assert.equal(kept.statusCode === 200 || kept.statusCode === 201, true);
      } finally {
        client.dispose();
        agent.destroy();
      }
    }
    assert.deepEqual(outcome, { plain: false, hedged: false }, "true: the upsert's request context is still alive while its response is");
  });
});
