import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { Container } from "@azure/cosmos";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const items = Array.from({ length: 10 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
const farMs = 30;
/** A delay that loses every race: the delayed arm is cut, so no test waits for it. */
const straggler = 10_000;

describe("adaptive hedging through the real CosmosClient", function () {
  const fixture = useEmulator({
    emulator: { regions: [{ name: "East US" }, { name: "West US", latencyMs: farMs }, { name: "North Europe", latencyMs: farMs }] },
    items,
    preferredLocations: ["East US", "West US", "North Europe"],
  });
  let emulator: Emulator;

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  /** A client preferring East, then West, then North Europe, with these hedging options; and its hedging HttpClient. */
  async function connect(hedging: HedgingOptions): Promise<{ container: Container; hedgingClient: HedgingHttpClient }> {
    const { container, hedging: hedgingClient } = await fixture.client({ hedging });
    return { container, hedgingClient: hedgingClient! };
  }

  async function read(container: Container, index: number): Promise<{ diagnostics: HedgeDiagnostics; ms: number }> {
    const item = items[index % items.length]!;
    const started = performance.now();
    const response = await container.item(item.id, item.pk).read();
    const ms = performance.now() - started;
    assert.equal(response.statusCode, 200);
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.ok(diagnostics !== undefined, "diagnostics are in response.headers");
    return { diagnostics, ms };
  }

  it("learns a threshold from East's reads, hedges a straggler after it, and reports it in metrics()", async function () {
    const { container, hedgingClient } = await connect({ crossRegion: { threshold: "adaptive" } });
    let last: HedgeDiagnostics | undefined;
    let slowestMs = 0;
    for (let i = 0; i < 25; i++) {
      const warmUp = await read(container, i);
      last = warmUp.diagnostics;
      slowestMs = Math.max(slowestMs, warmUp.ms);
    }
    // The 95th percentile while West's latency is unknown; once a warm-up read has been hedged, East's largest answer:
    // with no straggler seen yet, the benefit rule hedges only a read that outlasts all of East's.
    const learnedSources = ["adaptive", "noBenefit"];
    assert.ok(learnedSources.includes(last?.thresholdSource ?? ""), `${last?.thresholdSource}`);
    assert.equal(last?.thresholdRegion, "East US");
    const learned = last?.thresholdMs ?? Number.NaN;
    // Learned from East's answers (noBenefit's backstop is the slowest of them plus West's latency), it stays within 400 ms of
    // the slowest warm-up read measured here: a pause of the loaded machine lengthens both alike, and with no read paused a
    // fixed 500 still fails.
    assert.ok(learned >= 5 && learned < slowestMs + 400, `learned ${learned} ms, far below the fixed 500 (East's slowest read: ${slowestMs.toFixed(0)} ms)`);

    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: straggler, count: 1 });
    const { diagnostics, ms } = await read(container, 0);
    assert.ok(ms < straggler / 2, `the straggler was hedged: ${ms.toFixed(0)} ms`);
    assert.equal(diagnostics.terminalState, "hedgeWon");
    assert.equal(diagnostics.winningRegion, "West US");
    assert.ok(learnedSources.includes(diagnostics.thresholdSource ?? ""), `${diagnostics.thresholdSource}`);

    // A warm-up read caught in a pause of the test process may have been hedged too: counts are at least, not exactly.
    const metrics = hedgingClient.metrics();
    assert.ok(metrics.requests >= 26, `${metrics.requests} requests`);
    assert.ok(metrics.hedgesWon >= 1 && metrics.hedgesWon <= metrics.hedgesFired, JSON.stringify(metrics));
    const east = metrics.regions.find((region) => region.region === "East US");
    const west = metrics.regions.find((region) => region.region === "West US");
    // The straggler's own latency joins East's window when its drain ends, after this read returned.
    assert.ok(east?.latency !== undefined && east.latency.samples >= 25 && east.latency.p50 < 50, JSON.stringify(east?.latency));
    assert.equal(east?.requests, metrics.requests, "every read went to East first");
    assert.ok((west?.hedgesFired ?? 0) >= 1 && (west?.hedgesWon ?? 0) >= 1, JSON.stringify(west));
    assert.ok(west?.latency !== undefined && west.latency.p50 >= farMs, JSON.stringify(west?.latency));
  });

  it("demotes a browned-out region after five hedge wins, probes it, and restores it when it recovers", async function () {
    // Every read of the brown-out hedges: fifteen hedges in a second or two, which the budget (one a second, or 15 % of the
    // window's requests) covers only when the warm-up took long enough. The budget is not what this tests.
    const { container, hedgingClient } = await connect({ crossRegion: { threshold: "adaptive", budget: false } });
    for (let i = 0; i < 25; i++) await read(container, i);
    const brownOut = emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: straggler });
    const during: HedgeDiagnostics[] = [];
    for (let i = 0; i < 15; i++) during.push((await read(container, i)).diagnostics);
    assert.deepEqual(
      during.slice(0, 5).map((record) => record.terminalState),
      ["hedgeWon", "hedgeWon", "hedgeWon", "hedgeWon", "hedgeWon"],
    );
    assert.deepEqual(hedgingClient.regions.demotedRegions, [{ region: "East US", inFavourOf: "West US" }]);
    // After the demotion, reads still go to East first, where the SDK sends them (issue 22: ranking orders the hedges only);
    // their hedges go to West, the region that has been answering. A probe of East (at most one a second) is ranked as such.
    const afterDemotion = during.slice(5);
    const demotedReads = afterDemotion.filter((record) => record.ranking?.reason === "demoted");
    assert.ok(demotedReads.length >= afterDemotion.length - 2, JSON.stringify(afterDemotion.map((record) => record.ranking)));
    for (const record of afterDemotion) {
      assert.equal(record.primaryRegion, "East US");
      assert.equal(record.terminalState, "hedgeWon", JSON.stringify(record));
      assert.equal(record.arms[1]?.region, "West US");
    }
    for (const record of demotedReads) assert.deepEqual(record.ranking, { reason: "demoted", addressedRegion: "East US" });
    for (const record of afterDemotion.filter((each) => each.ranking?.reason !== "demoted")) assert.equal(record.ranking?.reason, "probe");
    assert.equal(hedgingClient.metrics().regions.find((region) => region.region === "East US")?.demotedInFavourOf, "West US");

    brownOut.remove();
    const ended = performance.now();
    let restoredAfter: number | undefined;
    // A probe goes out at least once a second; one that lands on a scheduling hiccup waits for the next.
    for (let i = 0; restoredAfter === undefined && performance.now() - ended < 5000; i++) {
      await read(container, i);
      if (hedgingClient.regions.demotedRegions.length === 0) restoredAfter = performance.now() - ended;
      else await sleep(20);
    }
    assert.ok(restoredAfter !== undefined && restoredAfter < 4000, `restored ${restoredAfter?.toFixed(0)} ms after the brown-out ended`);
    const { diagnostics } = await read(container, 0);
    assert.equal(diagnostics.primaryRegion, "East US");
    assert.equal(diagnostics.ranking, undefined);
  });

  it("with a fixed threshold too, demotion ranks the hedges of reads of a browned-out region; the reads stay where the SDK sends them", async function () {
    const brownedOut = async (hedging: HedgingOptions): Promise<HedgeDiagnostics[]> => {
      const { container } = await connect(hedging);
      for (let i = 0; i < 5; i++) await read(container, i);
      const rule = emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: straggler });
      const records: HedgeDiagnostics[] = [];
      for (let i = 0; i < 10; i++) records.push((await read(container, i)).diagnostics);
      rule.remove();
      return records;
    };
    const demoting = await brownedOut({ crossRegion: { threshold: 100 } });
    assert.deepEqual(demoting.slice(0, 5).map((record) => record.terminalState), Array.from({ length: 5 }, () => "hedgeWon"));
    // Issue 22: the primary stays where the SDK sent it; the demotion orders the hedges (a probe of East is ranked as such).
    for (const record of demoting.slice(5)) {
      assert.equal(record.primaryRegion, "East US", JSON.stringify(record));
      assert.equal(record.arms[1]?.region, "West US", JSON.stringify(record));
    }
    assert.ok(demoting.slice(5).filter((record) => record.ranking?.reason === "demoted").length >= 4, "the hedges are ranked by the demotion");
    const preferred = await brownedOut({ crossRegion: { threshold: 100, routing: "preferred" } });
    for (const record of preferred) assert.equal(record.primaryRegion, "East US", JSON.stringify(record));
  });

  it("does not hedge into a region answering 429 until its retry-after has passed", async function () {
    const { container, hedgingClient } = await connect({ crossRegion: { threshold: 50 } });
    await read(container, 0);
    emulator.resetCounters();
    // East, the primary, is far slower than the threshold, so both reads hedge whatever the machine's load.
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "20000" }, count: 1 });
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: straggler, count: 2 });
    const first = await read(container, 1);
    assert.deepEqual(first.diagnostics.arms.map((arm) => [arm.region, arm.status]), [
      ["East US", undefined],
      ["West US", 429],
      ["North Europe", 200],
    ]);
    assert.ok((hedgingClient.metrics().regions.find((region) => region.region === "West US")?.throttledForMs ?? 0) > 10_000);
    const second = await read(container, 2);
    assert.deepEqual(
      second.diagnostics.arms.map((arm) => arm.region),
      ["East US", "North Europe"],
      "West is not hedged into while its retry-after runs",
    );
    assert.equal(emulator.region("West US").count("pointRead"), 1);
  });

  it("bounds the extra load when every region is slow: the budget refuses hedges and says so", async function () {
    // One hedge per read at most (the second would be due only after 10 s), so each read is either hedged or refused.
    const { container, hedgingClient } = await connect({ crossRegion: { threshold: 5, thresholdStep: straggler, budget: { maxExtraLoad: 0.1, minHedgesPerSecond: 0 } } });
    for (const region of emulator.regions) region.addFault({ operations: ["pointRead"], delayMs: 40 });
    const records: HedgeDiagnostics[] = [];
    for (let i = 0; i < 30; i++) records.push((await read(container, i)).diagnostics);
    const hedged = records.filter((record) => record.hedgeFired).length;
    assert.ok(hedged <= 3, `${hedged} of 30 reads hedged with a 10 % budget`);
    assert.equal(records.filter((record) => record.skipReason === "budgetExhausted").length, 30 - hedged);
    assert.equal(hedgingClient.metrics().budgetExhausted, 30 - hedged);
    assert.ok(emulator.count("pointRead") <= 30 + 3 * 2, `${emulator.count("pointRead")} requests reached the regions`);
  });

  it("ranks the hedges by Thompson sampling; reads of a browned-out region stay where the SDK sends them and are hedged", async function () {
    const { container } = await connect({ crossRegion: { threshold: "adaptive", routing: "thompson" } });
    for (let i = 0; i < 40; i++) {
      const { diagnostics } = await read(container, i);
      assert.equal(diagnostics.ranking?.reason, "thompson");
    }
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: straggler });
    // Fewer reads than the budget's floor of hedges: each one is hedged, none waits for the straggler.
    const during: Array<{ diagnostics: HedgeDiagnostics; ms: number }> = [];
    for (let i = 0; i < 15; i++) during.push(await read(container, i));
    const latencies = during.map((entry) => entry.ms).sort((a, b) => a - b);
    assert.ok(latencies[7]! < straggler / 4, `median read during the brown-out: ${latencies[7]!.toFixed(0)} ms`);
    // Issue 22: Thompson sampling orders the hedges only; every read goes to East first, where the SDK sends it.
    const primaries = during.map((entry) => entry.diagnostics.primaryRegion);
    assert.deepEqual(new Set(primaries), new Set(["East US"]));
    assert.ok(during.every((entry) => entry.diagnostics.ranking?.reason === "thompson"));
  });
});
