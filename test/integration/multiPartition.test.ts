import assert from "node:assert/strict";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, FeedOptions } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import { startEmulator } from "../emulator/index.js";
import type { RecordedRequest } from "../emulator/index.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";
import { useEmulator } from "../support/emulatorFixture.js";
import type { EmulatorFixture } from "../support/emulatorFixture.js";
import { scoped, settledTag, tagged, taggedClientOptions } from "../support/taggedRequests.js";
import { plainAndHedged } from "../support/sideBySide.js";
import type { Side } from "../support/sideBySide.js";

/**
 * A container split into two partition key ranges, as any container is
 * once it outgrows one physical partition: a query the SDK plans
 * (`forceQueryPlan`) goes out range by range, each range with its own
 * continuation, and the partition-level circuit breaker moves one range at
 * a time. Side by side, plain `@azure/cosmos` and a `withHedging` client
 * under the same fault (scoped to each client's user-agent tag), the same
 * rows and the same or better outcome.
 *
 * With the emulator's even split of the hash space, keys pk-1, pk-3, pk-6,
 * pk-8, pk-9 and pk-10 fall in range "1" and the other six in range "0" (the
 * emulator places keys with the SDK's own hash; the first test checks it).
 */

const items = Array.from({ length: 12 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i}`, value: i }));
const rangeOne = ["pk-1", "pk-3", "pk-6", "pk-8", "pk-9", "pk-10"];
const preferredLocations = ["West US", "East US", "North Europe"];
let tagCounter = 0;
const newTag = (label: string): string => `mp${++tagCounter}-${label}~`;

/** A plain and a hedged client of the same options, each warm (account, container and range caches read); the emulator's record starts after. */
async function pairOn(fixture: EmulatorFixture, hedging: HedgingOptions, connectionPolicy: CosmosClientOptions["connectionPolicy"] = {}): Promise<[Side, Side]> {
  const pair = await plainAndHedged(fixture, {
    newTag,
    preferredLocations,
    hedging,
    connectionPolicy,
    warmUp: (container) => container.items.query("SELECT * FROM c", { forceQueryPlan: true }).fetchAll(),
  });
  // What the emulator records from here is the test's own.
  fixture.emulator.resetCounters();
  return pair;
}

const idsOf = (rows: ReadonlyArray<{ id?: string }>): string[] => rows.map((row) => String(row.id)).sort();
const rangeOf = (request: RecordedRequest): string | undefined => request.headers["x-ms-documentdb-partitionkeyrangeid"];
const keyOf = (request: RecordedRequest): string | undefined => request.headers["x-ms-documentdb-partitionkey"];

/** Pages a query to its end with `fetchNext`, calling `between` after the first page. */
async function pageThrough(container: Container, options: FeedOptions, between: () => void): Promise<{ ids: string[]; pages: number; error?: unknown }> {
  const iterator = container.items.query<{ id: string }>("SELECT * FROM c", options);
  const ids: string[] = [];
  let pages = 0;
  try {
    while (iterator.hasMoreResults()) {
      const page = await iterator.fetchNext();
      ids.push(...page.resources.map((row) => row.id));
      if (++pages === 1) between();
    }
  } catch (error) {
    return { ids: ids.sort(), pages, error };
  }
  return { ids: ids.sort(), pages };
}

describe("a container of two partition key ranges, plain beside hedged (integration)", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ emulator: { partitionKeyRanges: 2 }, items });

  it("the SDK fans a planned query out range by range, and each range answers its own keys", async function () {
    const [plain] = await pairOn(fixture, {});
    const { resources } = await plain.container.items.query<{ id: string; pk: string }>("SELECT * FROM c", { forceQueryPlan: true }).fetchAll();
    assert.deepEqual(idsOf(resources), idsOf(items));
    const pages = tagged(fixture.emulator, plain.tag, ["query"]);
    assert.deepEqual([...new Set(pages.map(rangeOf))].sort(), ["0", "1"], "one page request a range at least");
    // The point reads of a range-1 key go where the rule of range "1" finds them.
    fixture.emulator.region("West US").addFault({ ...scoped({ status: 404, body: { code: "NotFound" } }, plain.tag), partitionKeyRange: "1" });
    for (const { id, pk } of items) {
      const status = await plain.container.item(id, pk).read().then((response) => response.statusCode, (error: { code?: number }) => error.code);
      assert.equal(status, rangeOne.includes(pk) ? 404 : 200, `${pk}'s range`);
    }
  });

  it("a query fanned out over both ranges, range 1 slow in West US: the same rows, its pages hedged, range 0's not", async function () {
    const [plain, hedged] = await pairOn(fixture, { crossRegion: { threshold: 100 } });
    const results: Record<string, { ids: string[]; ms: number }> = {};
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault({ ...scoped({ delayMs: 800 }, side.tag, ["query"]), partitionKeyRange: "1" });
      const start = performance.now();
      const { resources } = await side.container.items.query<{ id: string }>("SELECT * FROM c", { forceQueryPlan: true, maxItemCount: 4 }).fetchAll();
      results[side.label] = { ids: idsOf(resources), ms: performance.now() - start };
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    assert.deepEqual(results["plain"]!.ids, idsOf(items), "plain: every row once");
    assert.deepEqual(results["hedged"]!.ids, results["plain"]!.ids, "hedged: the rows plain returned");
    const hedgedPages = tagged(fixture.emulator, hedged.tag, ["query"]);
    const elsewhere = hedgedPages.filter((request) => request.region !== "West US");
    assert.ok(elsewhere.length > 0, "range 1's slow pages were hedged");
    assert.deepEqual([...new Set(elsewhere.map(rangeOf))], ["1"], "only range 1's pages were hedged, each to its own range");
    assert.ok(elsewhere.every((request) => request.region === "East US"), "to the next preferred region");
    assert.ok(results["hedged"]!.ms < results["plain"]!.ms, `hedged ${Math.round(results["hedged"]!.ms)} ms, plain ${Math.round(results["plain"]!.ms)} ms`);
  });

  it("West US answers 503 to every page after the first: both clients page a fanned-out query to its end, the same rows", async function () {
    const [plain, hedged] = await pairOn(fixture, { crossRegion: { threshold: 100 } });
    const runs: Record<string, Awaited<ReturnType<typeof pageThrough>>> = {};
    for (const side of [plain, hedged]) {
      runs[side.label] = await pageThrough(side.container, { forceQueryPlan: true, maxItemCount: 2 }, () => {
        fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag, ["query"]));
      });
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    assert.equal(runs["plain"]!.error, undefined, `plain failed: ${String(runs["plain"]!.error)}`);
    assert.deepEqual(runs["plain"]!.ids, idsOf(items));
    assert.equal(runs["hedged"]!.error, undefined, `hedged failed where plain completed: ${String(runs["hedged"]!.error)}`);
    assert.deepEqual(runs["hedged"]!.ids, runs["plain"]!.ids, "hedged: the rows plain returned");
    const failed = (side: Side): number => tagged(fixture.emulator, side.tag, ["query"]).filter((request) => request.region === "West US" && request.status === 503).length;
    assert.ok(failed(plain) > 0, "plain met the failing region after the first page");
    assert.ok(failed(hedged) <= failed(plain), `West US 503s: hedged ${failed(hedged)}, plain ${failed(plain)}`);
  });

  it("a fanned-out query with the SDK's excludedLocations: every page and every hedge stays out of the excluded region", async function () {
    const [, hedged] = await pairOn(fixture, { crossRegion: { threshold: 100 } });
    fixture.emulator.region("East US").addFault({ ...scoped({ delayMs: 600 }, hedged.tag, ["query"]), partitionKeyRange: "0" });
    const { resources } = await hedged.container.items
      .query<{ id: string }>("SELECT * FROM c", { forceQueryPlan: true, maxItemCount: 4, excludedLocations: ["West US"] })
      .fetchAll();
    assert.ok(await settledTag(fixture.emulator, hedged.tag, 6_000));
    assert.deepEqual(idsOf(resources), idsOf(items));
    const pages = tagged(fixture.emulator, hedged.tag, ["query"]);
    assert.equal(pages.filter((request) => request.region === "West US").length, 0, "nothing to the excluded region");
    const hedges = pages.filter((request) => request.region === "North Europe");
    assert.ok(hedges.length > 0 && hedges.every((request) => rangeOf(request) === "0"), "range 0's slow pages hedged to North Europe");
  });

  it("range 1 splits between pages of the change feed, its pages slow in West US: both clients follow the new ranges to the end, the same rows", async function () {
    // The split changes the account for every client, so each side runs on an emulator of its own.
    const runs: Record<string, { ids: string[]; pages: number; requests: RecordedRequest[] }> = {};
    for (const hedged of [false, true]) {
      const emulator = await startEmulator({ partitionKeyRanges: 2 });
      try {
        const seeder = createTestClient(emulator);
        await seedContainer(seeder, { database: "db", container: "items", items });
        seeder.dispose();
        const options = taggedClientOptions(emulator, newTag("split"), preferredLocations);
        const client = new CosmosClient(hedged ? withHedging(options, { crossRegion: { threshold: 100 } }) : options);
        try {
          const container = client.database("db").container("items");
          await container.item("item-0", "pk-0").read();
          emulator.resetCounters();
          emulator.region("West US").addFault({ delayMs: 400, partitionKeyRange: "1", operations: ["changeFeed"] });
          const iterator = container.items.getChangeFeedIterator<{ id: string }>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
          const ids: string[] = [];
          let pages = 0;
          // The backend answers 304 once each range has given its page; the feed has ended when every range has.
          for (let quiet = 0; quiet < 3 && pages < 30; pages++) {
            const page = await iterator.readNext();
            assert.ok(page.statusCode < 400, `${hedged ? "hedged" : "plain"}: page ${pages} answered ${page.statusCode}`);
            ids.push(...page.result.map((row) => row.id));
            quiet = page.statusCode === 304 ? quiet + 1 : 0;
            if (pages === 0) assert.deepEqual(emulator.splitPartitionKeyRange("1"), ["2", "3"]);
          }
          await emulator.idle();
          runs[hedged ? "hedged" : "plain"] = { ids: ids.sort(), pages, requests: [...emulator.requests] };
        } finally {
          client.dispose();
        }
      } finally {
        await emulator.close();
      }
    }
    const plain = runs["plain"]!;
    const hedged = runs["hedged"]!;
    const ranges = (run: typeof plain): Array<string | undefined> => [...new Set(run.requests.filter((request) => request.kind === "changeFeed").map(rangeOf))].sort();
    assert.deepEqual(ranges(plain), ["0", "1", "2", "3"], "plain read range 1 and then its two halves");
    assert.ok(plain.requests.some((request) => request.kind === "changeFeed" && rangeOf(request) === "1" && request.status === 410), "plain met the split");
    assert.deepEqual(hedged.ids, plain.ids, "hedged: the rows plain read");
    assert.deepEqual(ranges(hedged), ranges(plain), "hedged: the same ranges");
    assert.equal(hedged.requests.filter((request) => request.kind === "partitionKeyRangeReadFeed").length, plain.requests.filter((request) => request.kind === "partitionKeyRangeReadFeed").length, "the range feed read again as often");
    // Only range 1's pages were slow enough to hedge: the new ranges' pages went once, to West US.
    assert.ok(hedged.requests.filter((request) => request.kind === "changeFeed" && request.region !== "West US").every((request) => rangeOf(request) === "1"));
  });

  it("the breaker on, range 1 answering 503 after 800 ms in West US, the same reads offered at the same times: the failing range gets no more requests from hedged than from plain", async function () {
    // Offered at the same times (an open loop), so that a client whose reads end sooner does not offer more of them.
    const [plain, hedged] = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelCircuitBreaker: true });
    for (const side of [plain, hedged]) fixture.emulator.region("West US").addFault({ ...scoped({ status: 503, delayMs: 800 }, side.tag), partitionKeyRange: "1" });
    const reads = 50;
    const everyMs = 100;
    const start = performance.now();
    const outcomes = await Promise.all(
      [plain, hedged].map(async (side) => {
        const sent: Array<Promise<boolean>> = [];
        for (let i = 0; i < reads; i++) {
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + i * everyMs - performance.now())));
          const pk = rangeOne[i % rangeOne.length]!;
          sent.push(side.container.item(`item-${pk.slice(3)}`, pk).read().then(() => true, () => false));
        }
        return (await Promise.all(sent)).filter((ok) => !ok).length;
      }),
    );
    for (const side of [plain, hedged]) assert.ok(await settledTag(fixture.emulator, side.tag, 10_000), `${side.label}: every request ended`);
    assert.deepEqual(outcomes, [0, 0], "no read failed");
    const toFailing = (side: Side): RecordedRequest[] => tagged(fixture.emulator, side.tag, ["pointRead"]).filter((request) => request.region === "West US");
    const last = (side: Side): number => Math.max(...toFailing(side).map((request) => request.at)) - start;
    assert.ok(toFailing(plain).length < reads, "plain: the breaker moved range 1 before the last read");
    assert.ok(toFailing(hedged).length <= toFailing(plain).length + 1, `West US: hedged ${toFailing(hedged).length}, plain ${toFailing(plain).length}`);
    assert.ok(last(hedged) <= last(plain) + 2 * everyMs, `the last West US request: hedged at ${Math.round(last(hedged))} ms, plain at ${Math.round(last(plain))} ms`);
  });

  it("the breaker moves range 1 off West US: its reads' hedges stay off West US, range 0's reads stay in West US, as plain's", async function () {
    const [plain, hedged] = await pairOn(fixture, { crossRegion: { threshold: 100 } }, { enablePartitionLevelCircuitBreaker: true });
    const runs: Record<string, { ms: number; failures: number }> = {};
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault({ ...scoped({ status: 503 }, side.tag), partitionKeyRange: "1" });
      fixture.emulator.region("East US").addFault({ ...scoped({ delayMs: 300 }, side.tag), partitionKeyRange: "1" });
      const start = performance.now();
      let failures = 0;
      for (let i = 0; i < 30; i++) {
        // Range 1's key and range 0's, in turn.
        const [id, pk] = i % 2 === 0 ? ["item-1", "pk-1"] : ["item-2", "pk-2"];
        await side.container.item(id, pk).read().catch(() => failures++);
      }
      runs[side.label] = { ms: performance.now() - start, failures };
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    const reads = (side: Side, region: string, pk: string): number =>
      tagged(fixture.emulator, side.tag, ["pointRead"]).filter((request) => request.region === region && keyOf(request) === JSON.stringify([pk])).length;
    assert.equal(runs["plain"]!.failures, 0);
    assert.equal(runs["hedged"]!.failures, 0);
    assert.ok(reads(plain, "West US", "pk-1") > 0 && reads(plain, "East US", "pk-1") > 0, "plain: the breaker moved range 1 to East US");
    assert.ok(reads(hedged, "West US", "pk-1") <= reads(plain, "West US", "pk-1"), `range 1 to West US: hedged ${reads(hedged, "West US", "pk-1")}, plain ${reads(plain, "West US", "pk-1")}`);
    for (const side of [plain, hedged]) {
      assert.equal(reads(side, "West US", "pk-2"), 15, `${side.label}: range 0's reads all in West US`);
      assert.equal(reads(side, "East US", "pk-2") + reads(side, "North Europe", "pk-2"), 0, `${side.label}: range 0's reads nowhere else`);
    }
    // Range 1's slow reads in East US, once the partition moved there, were hedged past West US.
    assert.ok(reads(hedged, "North Europe", "pk-1") > 0, "range 1's slow East US reads hedged to North Europe");
    assert.ok(runs["hedged"]!.ms <= runs["plain"]!.ms + 250, `hedged ${Math.round(runs["hedged"]!.ms)} ms, plain ${Math.round(runs["plain"]!.ms)} ms`);
    // The detection record of a range 1 read names no West US hedge.
    const response = await hedged.container.item("item-1", "pk-1").read();
    assert.equal(getHedgingDetection(response)?.requestedRegions().some((request) => request.reason === "hedging" && request.region === "West US"), false);
  });
});
