import assert from "node:assert/strict";
import { ChangeFeedStartFrom, CosmosClient, PriorityLevel } from "@azure/cosmos";
import type { OperationInput } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { withHedging } from "../../src/client/withHedging.js";
import { masterKeyAuthorization } from "../../src/cosmos/masterKeySigner.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";
import { settledRequests } from "../support/wire.js";

const preferredLocations = ["West US", "East US", "North Europe"];
/** A slow region answers after this; hedges fire after {@link threshold}: outcomes never hinge on a close race. */
const slow = 600;
const threshold = 50;
const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));
const warmUp = { id: "item-0", pk: "pk" };
const fixedHedging = { crossRegion: { threshold, thresholdStep: 5_000 } };

/** Collects the unhandled rejections and process warnings of a test; the listeners go however the test ends. */
function watchProcess(): { readonly unhandled: unknown[]; readonly warnings: Error[]; stop(): void } {
  const unhandled: unknown[] = [];
  const warnings: Error[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  const onWarning = (warning: Error): void => void warnings.push(warning);
  process.on("unhandledRejection", onUnhandled);
  process.on("warning", onWarning);
  return {
    unhandled,
    warnings,
    stop: () => {
      process.off("unhandledRejection", onUnhandled);
      process.off("warning", onWarning);
    },
  };
}

function regionsOf(requests: readonly { region: string }[]): string[] {
  return requests.map((request) => request.region).sort();
}

/**
 * Paths a user takes that hostileUse and asUsersCallIt do not: more of the
 * SDK's own request options, several clients and accounts, errors on pinned
 * feed pages, huge and hostile values. Outcomes are read from the emulator's
 * record of the wire where they can be, and decided by fault rules far from
 * the threshold.
 */
describe("user paths no other test takes, through the real CosmosClient", function () {
  const fixture = useEmulator({ items, preferredLocations });

  describe("the SDK's own request options on more operation kinds", function () {
    it("container.read() with excludedLocations: the metadata hedge skips the excluded region", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: { metadata: { threshold } }, warmUp });
      emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: slow });
      emulator.region("East US").addFault({ operations: ["collectionRead"], delayMs: slow });
      const response = await container.read({ excludedLocations: ["East US"] });
      assert.equal(response.statusCode, 200);
      const reads = await settledRequests(emulator, "collectionRead");
      assert.ok(!reads.some((request) => request.region === "East US"), `reached ${regionsOf(reads).join(", ")}`);
      const record = diagnostics.find((entry) => entry.operation === "collectionRead");
      assert.deepEqual(record?.arms.map((arm) => arm.region), ["West US", "North Europe"]);
    });

    it("excludedLocations naming every region: the read goes once, where the SDK sent it, unhedged", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 300 });
      const { resource } = await container.item("item-2", "pk").read({ excludedLocations: ["West US", "East US", "North Europe"] });
      assert.equal(resource?.value, 2);
      const reads = await settledRequests(emulator, "pointRead");
      assert.equal(reads.length, 1, `the service saw ${regionsOf(reads).join(", ")}`);
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.equal(record?.hedgeFired, false);
      assert.equal(record?.winningRegion, reads[0]?.region);
      assert.equal(record?.skipReason, "singleRegion", JSON.stringify(record));
    });

    it("connectionPolicy.enableEndpointDiscovery: false: the SDK reads no topology, so nothing is hedged, and withHedging warns that it is so", async function () {
      const { emulator } = fixture;
      const logs = captureAzureLogs("warning");
      try {
        const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, connectionPolicy: { enableEndpointDiscovery: false }, warmUp });
        emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: 300 });
        const { resource } = await container.item("item-1", "pk").read();
        assert.equal(resource?.value, 1);
        assert.deepEqual(regionsOf(await settledRequests(emulator, "pointRead")), ["East US"]);
        assert.equal(diagnostics.find((entry) => entry.operation === "pointRead")?.skipReason, "unknownRegion");
        const lines = logs.packageLines();
        assert.ok(lines.some((line) => line.includes("connectionPolicy.enableEndpointDiscovery is false") && line.includes("hedges nothing")), lines.join("\n"));
      } finally {
        logs.restore();
      }
    });

    it("consistencyLevel and priorityLevel per request reach the hedge as they reach the primary", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const response = await container.item("item-3", "pk").read({ consistencyLevel: "Eventual", priorityLevel: PriorityLevel.Low });
      assert.equal(response.resource?.value, 3);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(regionsOf(reads), ["East US", "West US"]);
      for (const read of reads) {
        assert.equal(read.headers["x-ms-consistency-level"], "Eventual", read.region);
        assert.equal(read.headers["x-ms-cosmos-priority-level"], "Low", read.region);
        assert.equal(read.authorization, "valid", read.region);
      }
      assert.equal(diagnostics.at(-1)?.winningRegion, "East US");
    });

    it("an abort after the read returned, while its loser drains: the read keeps its answer, the drain ends within its bounds", async function () {
      const { emulator } = fixture;
      const watch = watchProcess();
      try {
        const { container, diagnostics } = await fixture.client({
          hedging: { crossRegion: { threshold, thresholdStep: 5_000, drainLosers: { maxDrainMs: 3_000 } } },
          warmUp,
        });
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1_000 });
        const controller = new AbortController();
        const response = await container.item("item-4", "pk").read({ abortSignal: controller.signal });
        assert.equal(response.resource?.value, 4);
        controller.abort();
        const reads = await settledRequests(emulator, "pointRead");
        assert.deepEqual(reads.map((read) => `${read.region} ${read.status}`).sort(), ["East US 200", "West US 200"]);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const record = diagnostics.find((entry) => entry.operation === "pointRead");
        assert.equal(record?.arms[0]?.outcome, "drained");
        // @azure/cosmos stops listening to the caller's signal once the read has returned: the drain runs on to its end.
        assert.equal(record?.arms[0]?.drainEnd, "settled");
        assert.equal(record?.arms[0]?.status, 200);
        assert.deepEqual(watch.unhandled, []);
      } finally {
        watch.stop();
      }
    });
    it("read-your-write with hedgesWithoutSessionToken: a lagging hedge's fast 404/0 is held, and the slow primary's 200 is returned", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({
        hedging: { crossRegion: { threshold, thresholdStep: 5_000, hedgesWithoutSessionToken: true } },
        preferredLocations: ["West US", "East US"],
        warmUp,
      });
      await container.items.create({ id: "just-written", pk: "pk", value: 7 });
      emulator.resetCounters();
      diagnostics.length = 0;
      // East US has not replicated the write: without the session token it answers NotFound (404/0), a final status.
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      emulator.region("East US").addFault({ operations: ["pointRead"], status: 404, substatus: 0 });
      const response = await container.item("just-written", "pk").read({ sessionToken: "0:-1#9" });
      assert.equal(response.statusCode, 200);
      assert.equal(response.resource?.value, 7);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(reads.map((read) => `${read.region} ${read.status} ${read.headers["x-ms-session-token"] !== undefined}`).sort(), [
        "East US 404 false",
        "West US 200 true",
      ]);
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.equal(record?.terminalState, "primaryWon");
      assert.deepEqual(record?.arms.map((arm) => [arm.region, arm.status, arm.outcome]), [
        ["West US", 200, "returned"],
        ["East US", 404, "lost"],
      ]);
      assert.equal(record?.arms[1]?.sessionTokenOmitted, true);
    });

    it("a region pin that the same request's excludedLocations name: fails before anything is sent, saying the request's exclusions exclude it", async function () {
      const { emulator } = fixture;
      const { container } = await fixture.client({ hedging: fixedHedging, warmUp });
      await assert.rejects(
        container.item("item-1", "pk").read({ ...hedgingRequestOptions({ region: "North Europe" }), excludedLocations: ["North Europe"] }),
        /Cannot send this read to region "North Europe": this request's excluded regions exclude it/,
      );
      assert.equal(emulator.count("pointRead"), 0);
    });

    it("a unicode partition key through a hedge: the hedge carries the same partition-key header and is signed", async function () {
      const { emulator } = fixture;
      const { container: plain } = await fixture.client({ hedging: false });
      await plain.items.upsert({ id: "pk-unicode", pk: "ключ ✓ 😀 \"q\"", value: 9 });
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const { resource } = await container.item("pk-unicode", "ключ ✓ 😀 \"q\"").read();
      assert.equal(resource?.value, 9);
      const reads = await settledRequests(emulator, "pointRead");
      const [primary, hedge] = ["West US", "East US"].map((name) => reads.find((read) => read.region === name));
      assert.equal(hedge?.headers["x-ms-documentdb-partitionkey"], primary?.headers["x-ms-documentdb-partitionkey"]);
      assert.equal(hedge?.authorization, "valid");
      assert.equal(diagnostics.at(-1)?.winningRegion, "East US");
    });
  });

  describe("two withHedging clients of one account", function () {
    it("with different preferred orders: each hedges in its own order, and one's throttled region stays open to the other", async function () {
      const { emulator } = fixture;
      const a = await fixture.client({ hedging: fixedHedging, warmUp, preferredLocations: ["West US", "East US", "North Europe"] });
      const b = await fixture.client({ hedging: fixedHedging, warmUp, preferredLocations: ["North Europe", "East US", "West US"] });
      // A's hedge meets a 429 in East US: A keeps East US out of its hedges for 30 s.
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow, count: 1 });
      emulator.region("East US").addFault({ operations: ["pointRead"], status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "30000" }, count: 1 });
      await a.container.item("item-1", "pk").read();
      emulator.resetCounters();
      emulator.region("North Europe").addFault({ operations: ["pointRead"], delayMs: slow, count: 1 });
      const { resource } = await b.container.item("item-2", "pk").read();
      assert.equal(resource?.value, 2);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(regionsOf(reads), ["East US", "North Europe"], "B hedged into East US: A's throttling did not leak");
      const bRecord = b.diagnostics.find((entry) => entry.operation === "pointRead");
      assert.deepEqual(bRecord?.arms.map((arm) => arm.region), ["North Europe", "East US"]);
      assert.equal(bRecord?.winningRegion, "East US");
      assert.ok(a.diagnostics.every((entry) => entry.primaryRegion !== "North Europe"), "none of B's records reached A's callback");
      // A itself still holds East US back: its next slow read hedges to North Europe instead.
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow, count: 1 });
      await a.container.item("item-3", "pk").read();
      assert.deepEqual(regionsOf(await settledRequests(emulator, "pointRead")), ["North Europe", "West US"]);
    });

    it("one disposed while the other keeps hedging", async function () {
      const { emulator } = fixture;
      const a = await fixture.client({ hedging: fixedHedging, warmUp });
      const b = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const inFlight = a.container.item("item-1", "pk").read();
      a.client.dispose();
      const [fromA, fromB] = await Promise.all([inFlight, b.container.item("item-2", "pk").read()]);
      assert.equal(fromA.resource?.value, 1);
      assert.equal(fromB.resource?.value, 2);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(regionsOf(reads), ["East US", "East US", "West US", "West US"]);
      assert.equal(b.diagnostics.at(-1)?.winningRegion, "East US");
    });
  });

  describe("a paged feed whose region answers with errors between pages", function () {
    it("page 2 met by 429 with retry-after in the SDK's region: it goes there first, and the SDK retries it there, as plain's does", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["query"], delayMs: slow, count: 1 });
      const iterator = container.items.query("SELECT * FROM c", { maxItemCount: 2 });
      const first = await iterator.fetchNext();
      assert.equal(first.resources.length, 2);
      assert.equal(diagnostics.find((entry) => entry.operation === "query")?.winningRegion, "East US");
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["query"], status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "20" }, count: 1 });
      const second = await iterator.fetchNext();
      assert.equal(second.resources.length, 2);
      const pages = await settledRequests(emulator, "query");
      // The 429 goes back to the SDK as it came: its back-off and same-region retry are its own, as without hedging.
      assert.deepEqual(pages.map((page) => `${page.region} ${page.status}`), ["West US 429", "West US 200"]);
      assert.ok(pages.every((page) => page.headers["x-ms-continuation"] !== undefined), "the retry took the same continuation");
      const records = diagnostics.filter((entry) => entry.operation === "query").slice(-2);
      assert.deepEqual(records.map((record) => [record.primaryRegion, record.hedgeFired, record.skipReason]), [
        ["West US", false, undefined],
        ["West US", false, "sdkRetry"],
      ]);
    });

    it("page 2 met by 410/1002 in the SDK's region: it goes there first, not to the region that served page 1, and its answer goes back as plain's does", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["query"], delayMs: slow, count: 1 });
      const iterator = container.items.query("SELECT * FROM c", { maxItemCount: 2 });
      await iterator.fetchNext();
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["query"], status: 410, substatus: 1002, count: 1 });
      // @azure/cosmos 4.10.1 retries no 410 of a query page: plain fails the page, and so does the hedged client.
      await assert.rejects(iterator.fetchNext(), (error: { code?: unknown }) => error.code === 410);
      const pages = await settledRequests(emulator, "query");
      assert.deepEqual(pages.map((page) => `${page.region} ${page.status}`), ["West US 410"]);
      assert.ok(pages.every((page) => page.headers["x-ms-continuation"] !== undefined));
      const record = diagnostics.filter((entry) => entry.operation === "query").at(-1);
      assert.equal(record?.primaryRegion, "West US");
      assert.equal(record?.terminalState, "primaryOutcome");
      assert.equal(record?.hedgeFired, false);
    });

    it("a hedge region that answers with a fast 404/1002 does not win: the next hedge serves each page, every page going first to the SDK's region", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: { crossRegion: { threshold, thresholdStep: 5_000 } }, warmUp });
      emulator.region("West US").addFault({ operations: ["query"], delayMs: slow });
      emulator.region("East US").addFault({ operations: ["query"], status: 404, substatus: 1002 });
      // Only the seeded items: other tests of the file write documents of their own.
      const iterator = container.items.query(`SELECT * FROM c WHERE c.id IN (${items.map((item) => `'${item.id}'`).join(", ")})`, { maxItemCount: 3 });
      const { resources } = await iterator.fetchAll();
      assert.equal(resources.length, items.length);
      const pages = diagnostics.filter((entry) => entry.operation === "query");
      assert.ok(pages.length >= 2, `several pages (${pages.length})`);
      for (const page of pages) {
        assert.deepEqual(
          page.arms.map((arm) => [arm.region, arm.status ?? null, arm.subStatus ?? null]).slice(1),
          [
            ["East US", 404, 1002],
            ["North Europe", 200, null],
          ],
        );
        assert.equal(page.arms[0]?.region, "West US");
        assert.equal(page.arms[2]?.reason, "transientResult", "the 404/1002 launched the next hedge at once");
        assert.equal(page.winningRegion, "North Europe");
      }
      const continued = emulator.requests.filter((request) => request.kind === "query" && request.headers["x-ms-continuation"] !== undefined);
      assert.ok(continued.some((request) => request.region === "West US"), "a later page went to the SDK's region");
    });

    it("a change feed whose first page a hedge won: the next readNext goes where the SDK sends it, and is hedged there too", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      emulator.region("West US").addFault({ operations: ["changeFeed"], delayMs: slow, count: 1 });
      const changes = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
      const first = await changes.readNext();
      assert.ok(first.result.length > 0);
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["changeFeed"], delayMs: slow });
      const second = await changes.readNext();
      assert.ok(second.statusCode < 400);
      const feeds = emulator.requests.filter((request) => request.kind === "changeFeed");
      // In arrival order the hedge can come first on a loaded machine (the primary's new connection still opening at the
      // threshold, the hedge's region holding an idle one), so the order is read from the record, not from the emulator.
      assert.deepEqual(feeds.map((request) => request.region).sort(), ["East US", "West US"]);
      assert.ok(feeds.every((request) => request.headers["if-none-match"] !== undefined), "both regions took the etag");
      const later = diagnostics.filter((entry) => entry.operation === "changeFeed").at(-1);
      assert.deepEqual(later?.arms.map((arm) => [arm.region, arm.reason]), [["West US", "primary"], ["East US", "threshold"]]);
      // The feed is read to its end: both regions answer 304, and a hedge's 304 ("nothing newer" from a region that may be
      // behind) does not beat the primary's, which decides as it would unhedged.
      assert.equal(second.statusCode, 304);
      assert.equal(later?.hedgeWon, false);
      assert.equal(later?.winningRegion, "West US");
    });
  });

  describe("huge and hostile values", function () {
    it("a 2 MB document read and hedged: the caller gets it whole, the slow primary's drain is cut at the byte bound", async function () {
      const { emulator } = fixture;
      const { container: plain } = await fixture.client({ hedging: false });
      const big = { id: "big", pk: "pk", blob: "x".repeat(2_000_000) };
      await plain.items.upsert(big);
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
      // Long enough that the hedge's 2 MB has arrived before the primary's headers, even on a loaded machine.
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1_000 });
      const { resource } = await container.item("big", "pk").read<typeof big>();
      assert.equal(resource?.blob.length, big.blob.length);
      await settledRequests(emulator, "pointRead");
      await new Promise((resolve) => setTimeout(resolve, 100));
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.equal(record?.winningRegion, "East US");
      assert.equal(record?.arms[0]?.outcome, "drained");
      assert.equal(record?.arms[0]?.drainEnd, "byteLimit");
    });

    for (const id of ["ünïcødé ✓ 100%", "with space", "pct%20enc", "a%2Fb", "emoji-😀", "semi;colon&amp=1+plus", "tab\there"]) {
      it(`an item id ${JSON.stringify(id)} through a hedge: the hedge is signed for the same resource and wins`, async function () {
        const { emulator } = fixture;
        const { container: plain } = await fixture.client({ hedging: false });
        await plain.items.upsert({ id, pk: "pk", value: 42 });
        const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp });
        // A warm-up read hedged on a loaded machine would otherwise be the East US read found below.
        await settledRequests(emulator, "pointRead");
        emulator.resetCounters();
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
        const { resource, statusCode } = await container.item(id, "pk").read();
        assert.equal(statusCode, 200);
        assert.equal(resource?.id, id);
        const reads = await settledRequests(emulator, "pointRead");
        const hedge = reads.find((read) => read.region === "East US");
        const primary = reads.find((read) => read.region === "West US");
        assert.equal(hedge?.authorization, "valid");
        assert.equal(hedge?.path, primary?.path, "the hedge asks for the same resource, encoded alike");
        assert.equal(diagnostics.at(-1)?.hedgeWon, true);
      });
    }

    it("1000 concurrent reads with a 1 ms threshold: the budget caps the hedges, with no unhandled rejection or listener warning", async function () {
      this.timeout(60_000);
      const { emulator } = fixture;
      const watch = watchProcess();
      try {
        const { container, diagnostics } = await fixture.client({ hedging: { crossRegion: { threshold: 1, thresholdStep: 1 } }, warmUp });
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 20 });
        // Each read its own signal: @azure/cosmos itself adds a listener per request to the signal it is given (RequestHandler), so one shared by 1000 reads warns whatever the httpClient.
        const reads = await Promise.all(
          Array.from({ length: 1000 }, (_, i) => container.item(`item-${i % items.length}`, "pk").read({ abortSignal: new AbortController().signal })),
        );
        assert.ok(reads.every((read, i) => read.resource?.value === i % items.length));
        const wire = await settledRequests(emulator, "pointRead");
        const hedges = wire.length - 1000;
        // The 10 s window: 0.15 of the requests plus 1 a second for 10 s.
        assert.ok(hedges <= 0.15 * 1000 + 10, `${hedges} hedges`);
        assert.ok(hedges > 0, "some hedges went");
        assert.ok(diagnostics.filter((entry) => entry.skipReason === "budgetExhausted").length > 0);
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(watch.unhandled, []);
        assert.deepEqual(watch.warnings.map((warning) => warning.message), []);
      } finally {
        watch.stop();
      }
    });

    it("preferredLocations naming one region twice in other spellings: it is one arm, and the hedge goes to the next region", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({
        hedging: { crossRegion: { threshold, thresholdStep: threshold } },
        warmUp,
        preferredLocations: ["westus", "West US", "WEST US", "EASTUS"],
      });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slow });
      const { resource } = await container.item("item-4", "pk").read();
      assert.equal(resource?.value, 4);
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.deepEqual(record?.arms.map((arm) => arm.region), ["West US", "East US"], "West US is not hedged into again");
      assert.deepEqual(regionsOf(await settledRequests(emulator, "pointRead")), ["East US", "West US"]);
    });

    it("preferredLocations naming regions the account does not have: hedges go only to regions it has", async function () {
      const { emulator } = fixture;
      const { container, diagnostics } = await fixture.client({ hedging: fixedHedging, warmUp, preferredLocations: ["Mars", "West US", "Atlantis", "East US"] });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const { resource } = await container.item("item-5", "pk").read();
      assert.equal(resource?.value, 5);
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.deepEqual(record?.arms.map((arm) => arm.region), ["West US", "East US"]);
      assert.deepEqual(regionsOf(await settledRequests(emulator, "pointRead")), ["East US", "West US"]);
    });
  });
});

describe("the SDK's excludedLocations on hedged writes (multi-write account, enableMultiWriteRegionHedge)", function () {
  const fixture = useEmulator({ emulator: { multipleWriteLocations: true }, items, preferredLocations });
  const writeHedging = { crossRegion: { threshold, thresholdStep: 5_000, enableMultiWriteRegionHedge: true } };

  it("a transactional batch: its hedge skips the excluded region", async function () {
    const { emulator } = fixture;
    const { container, diagnostics } = await fixture.client({ hedging: writeHedging, warmUp });
    emulator.region("West US").addFault({ operations: ["batch"], delayMs: slow });
    const operations: OperationInput[] = [
      // A create, not an unconditional upsert: only writes whose second application cannot change the answer are hedged.
      { operationType: "Create", partitionKey: "pk", resourceBody: { id: "batched-1", pk: "pk", value: 1 } },
      { operationType: "Read", partitionKey: "pk", id: "item-1" },
    ];
    const response = await container.items.batch(operations, "pk", { excludedLocations: ["East US"] });
    assert.equal(response.code, 200);
    assert.deepEqual(response.result?.map((result) => result.statusCode < 300), [true, true]);
    const batches = await settledRequests(emulator, "batch");
    assert.deepEqual(regionsOf(batches), ["North Europe", "West US"]);
    const record = diagnostics.find((entry) => entry.operation === "batch");
    assert.deepEqual(record?.arms.map((arm) => arm.region), ["West US", "North Europe"]);
    assert.equal(record?.winningRegion, "North Europe");
  });

  it("a patch: its hedge skips the excluded region, and the hedge's loser is aborted, not drained", async function () {
    const { emulator } = fixture;
    const { container, diagnostics } = await fixture.client({ hedging: writeHedging, warmUp });
    emulator.region("West US").addFault({ operations: ["patch"], delayMs: slow });
    const { resource } = await container.item("item-2", "pk").patch([{ op: "set", path: "/patched", value: true }], { excludedLocations: ["east us"] });
    assert.equal(resource?.patched, true);
    const patches = await settledRequests(emulator, "patch");
    assert.deepEqual(
      patches.map((patch) => `${patch.region} ${patch.cutByClient}`).sort(),
      ["North Europe false", "West US true"],
      "the slow write was cut, not left to run",
    );
    const record = diagnostics.find((entry) => entry.operation === "patch");
    assert.deepEqual(record?.arms.map((arm) => [arm.region, arm.outcome]), [
      ["West US", "aborted"],
      ["North Europe", "returned"],
    ]);
  });

  it("bulk (executeBulkOperations) with excludedLocations: no batch it sends reaches the excluded region", async function () {
    const { emulator } = fixture;
    const { container, diagnostics } = await fixture.client({ hedging: writeHedging, warmUp });
    emulator.region("West US").addFault({ operations: ["batch"], delayMs: slow });
    const operations: OperationInput[] = Array.from({ length: 5 }, (_, i) => ({
      operationType: "Create",
      partitionKey: "pk",
      resourceBody: { id: `bulk-${i}`, pk: "pk", value: i },
    }));
    const results = await container.items.executeBulkOperations(operations, { excludedLocations: ["East US"] });
    assert.deepEqual(results.map((result) => (result.response?.statusCode ?? 500) < 300), [true, true, true, true, true]);
    const batches = await settledRequests(emulator, "batch");
    assert.ok(batches.length > 0);
    assert.ok(!batches.some((batch) => batch.region === "East US"), regionsOf(batches).join(", "));
    assert.ok(diagnostics.some((entry) => entry.operation === "batch" && entry.hedgeWon), "a hedge served the bulk batch");
  });
});

describe("withHedging given connectionPolicy.preferredLocations that are no region names", function () {
  const fixture = useEmulator({ items, preferredLocations });

  for (const [label, bad, problem] of [
    ["a 200-character entry", "x".repeat(200), /longer than 128 characters/],
    ["an entry with a line feed", "East\nUS", /control character/],
    ["a blank entry", " ", /non-empty region name/],
  ] as const) {
    it(`${label}: fails before anything is sent, naming connectionPolicy.preferredLocations (the option the caller set)`, async function () {
      const { emulator } = fixture;
      assert.throws(
        () => withHedging({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations: ["West US", bad] } }),
        (error: Error) => error instanceof TypeError && /^connectionPolicy\.preferredLocations\[1\] /.test(error.message) && problem.test(error.message),
      );
      assert.equal(emulator.count(), 0);
    });
  }
});

describe("an account response naming a hostile region", function () {
  const fixture = useEmulator({ items, preferredLocations });

  async function accountBody(emulator: Emulator): Promise<Record<string, unknown>> {
    const date = new Date().toUTCString();
    const response = await fetch(emulator.endpoint, {
      headers: {
        authorization: masterKeyAuthorization(Buffer.from(emulator.key, "base64"), "GET", emulator.endpoint, date),
        "x-ms-date": date,
        "x-ms-version": "2020-07-15",
      },
    });
    assert.equal(response.status, 200);
    return (await response.json()) as Record<string, unknown>;
  }

  for (const [label, name] of [
    ["a control character", "North\u0007Europe"],
    ["a 10 kB name", "N".repeat(10_000)],
  ] as const) {
    it(`with ${label}: reads still succeed where the SDK sends them, and the warning does not echo the name`, async function () {
      const { emulator } = fixture;
      const body = await accountBody(emulator);
      const rename = (locations: unknown) =>
        (locations as { name: string; databaseAccountEndpoint: string }[]).map((location) =>
          location.name === "North Europe" ? { ...location, name } : location,
        );
      body["readableLocations"] = rename(body["readableLocations"]);
      body["writableLocations"] = rename(body["writableLocations"]);
      for (const region of emulator.regions) region.addFault({ operations: ["accountRead"], body });
      const logs = captureAzureLogs("warning");
      try {
        const { container, diagnostics } = await fixture.client({ hedging: fixedHedging });
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 200 });
        const { resource } = await container.item("item-1", "pk").read();
        assert.equal(resource?.value, 1);
        const record = diagnostics.find((entry) => entry.operation === "pointRead");
        assert.equal(record?.skipReason, "unknownRegion", JSON.stringify(record));
        const lines = logs.packageLines();
        assert.ok(lines.some((line) => line.includes("malformed database-account response")), lines.join("\n"));
        assert.ok(!lines.some((line) => line.includes(name)), "the name is not echoed");
      } finally {
        logs.restore();
      }
    });
  }
});

describe("two accounts, each with its own withHedging client, hedging at once", function () {
  let accounts: Emulator[];
  const clients: CosmosClient[] = [];
  const keys = ["account one key", "account two key"].map((text) => Buffer.from(text).toString("base64"));

  before(async function () {
    accounts = await Promise.all(keys.map((key) => startEmulator({ key })));
    for (const [index, emulator] of accounts.entries()) {
      const seeder = createTestClient(emulator);
      await seedContainer(seeder, { database: "db", container: "items", items: [{ id: "x", pk: "pk", owner: index }] });
      seeder.dispose();
    }
  });

  after(async function () {
    for (const client of clients.splice(0)) client.dispose();
    await Promise.all(accounts.map((emulator) => emulator.close()));
  });

  it("every hedge reaches its own account, signed with its own key, and each client's records name only its reads", async function () {
    const records: HedgeDiagnostics[][] = [[], []];
    const containers = accounts.map((emulator, index) => {
      const client = new CosmosClient(
        withHedging(
          { endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations } },
          { crossRegion: { threshold, thresholdStep: 5_000 }, onDiagnostics: (record) => void records[index]!.push(record) },
        ),
      );
      clients.push(client);
      return client.database("db").container("items");
    });
    await Promise.all(containers.map((container) => container.item("x", "pk").read()));
    for (const emulator of accounts) {
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
    }
    records[0]!.length = 0;
    records[1]!.length = 0;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => containers[i % 2]!.item("x", "pk").read()),
    );
    results.forEach((result, i) => assert.equal(result.resource?.owner, i % 2));
    for (const [index, emulator] of accounts.entries()) {
      const reads = await settledRequests(emulator, "pointRead");
      assert.equal(reads.filter((read) => read.region === "East US").length, 5, `account ${index}'s hedges`);
      assert.ok(reads.every((read) => read.authorization === "valid"), `account ${index}: every arm signed with its key`);
      assert.equal(records[index]!.length, 5);
      assert.ok(records[index]!.every((record) => record.winningRegion === "East US"));
    }
  });
});
