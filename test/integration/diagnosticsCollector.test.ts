import assert from "node:assert/strict";
import { BulkOperationType } from "@azure/cosmos";
import type { Container, CosmosClient } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { collectHedgeDiagnostics, getCollectedHedgeDiagnostics } from "../../src/diagnostics/diagnosticsCollector.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator } from "../emulator/index.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";

const items = Array.from({ length: 10 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
const pageSize = 2;
const pages = items.length / pageSize;

/** Resolves once `parties` callers have arrived, so that concurrent blocks provably overlap. */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return () => {
    arrived += 1;
    if (arrived === parties) release();
    return all;
  };
}

describe("collectHedgeDiagnostics through the real CosmosClient", function () {
  let emulator: Emulator;
  let client: CosmosClient;
  let container: Container;
  /** Every record the client published, through onDiagnostics, whatever block it ran in. */
  let published: HedgeDiagnostics[];

  before(async function () {
    emulator = await startEmulator();
    const seeder = createTestClient(emulator);
    try {
      await seedContainer(seeder, { database: "db", container: "items", items });
    } finally {
      seeder.dispose();
    }
  });

  after(async function () {
    await emulator?.close();
  });

  beforeEach(async function () {
    published = [];
    client = createTestClient(
      emulator,
      withHedging(
        { endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations: ["West US", "East US", "North Europe"] } },
        { crossRegion: { threshold: 100 }, onDiagnostics: (record) => published.push(record) },
      ),
    );
    container = client.database("db").container("items");
    await container.read();
    emulator.resetCounters();
    published = [];
  });

  afterEach(function () {
    client.dispose();
    emulator.clearFaults();
  });

  it("collects the query plan and every page of a multi-page cross-partition fetchAll, in order, the hedged first page included", async function () {
    emulator.region("West US").addFault({ operations: ["query"], delayMs: 1500 });
    const { result, diagnostics } = await collectHedgeDiagnostics(() =>
      container.items.query("SELECT * FROM c", { maxItemCount: pageSize }).fetchAll(),
    );
    assert.equal(result.resources.length, items.length);
    assert.deepEqual(
      diagnostics.map((record) => record.operation),
      ["queryPlan", ...Array.from({ length: pages }, () => "query")],
    );
    assert.deepEqual(diagnostics, published, "the block collected exactly what the client published, in the same order");
    const [, first, ...later] = diagnostics;
    assert.equal(first?.hedgeWon, true);
    assert.equal(first?.winningRegion, "East US");
    // Each later page goes where the SDK sends it, to slow West US, and is hedged like the first.
    for (const page of later) {
      assert.equal(page.primaryRegion, "West US");
      assert.equal(page.winningRegion, "East US");
    }
    assert.equal(emulator.region("West US").count("query"), pages);
    assert.equal(emulator.region("East US").count("query"), pages);
  });

  it("collects the batch requests that executeBulkOperations sends", async function () {
    const { result, diagnostics } = await collectHedgeDiagnostics(() =>
      container.items.executeBulkOperations(items.slice(0, 4).map((item) => ({ operationType: BulkOperationType.Read, id: item.id, partitionKey: item.pk }))),
    );
    assert.equal(result.length, 4);
    const batches = diagnostics.filter((record) => record.operation === "batch");
    assert.ok(batches.length >= 1, `records: ${diagnostics.map((record) => record.operation).join(", ")}`);
    assert.deepEqual(diagnostics, published);
  });

  it("keeps concurrent blocks apart: each gets the records of its own requests only", async function () {
    const bothStarted = barrier(2);
    const reads = collectHedgeDiagnostics(async () => {
      for (const item of items.slice(0, 3)) await container.item(item.id, item.pk).read();
      await bothStarted();
      for (const item of items.slice(3, 6)) await container.item(item.id, item.pk).read();
    });
    const query = collectHedgeDiagnostics(async () => {
      const iterator = container.items.query("SELECT * FROM c", { maxItemCount: pageSize });
      await iterator.fetchNext();
      await bothStarted();
      let fetched = 1;
      while (iterator.hasMoreResults()) {
        await iterator.fetchNext();
        fetched += 1;
      }
      return fetched;
    });
    const [readBlock, queryBlock] = await Promise.all([reads, query]);
    assert.deepEqual(
      readBlock.diagnostics.map((record) => record.operation),
      Array.from({ length: 6 }, () => "pointRead"),
    );
    const queryPages = queryBlock.diagnostics.filter((record) => record.operation === "query").length;
    assert.ok(queryPages >= pages, `${queryPages} query pages collected`);
    assert.ok(queryBlock.diagnostics.every((record) => record.operation === "query" || record.operation === "queryPlan"));
    assert.equal(readBlock.diagnostics.length + queryBlock.diagnostics.length, published.length, "every published record went to exactly one block");
  });

  it("rejects with the block's own error, from which the records collected until then can be read", async function () {
    let thrown: unknown;
    const failure = await collectHedgeDiagnostics(async () => {
      await container.item("item-1", "pk-1").read();
      try {
        await container.items.create(items[1]!);
      } catch (error) {
        thrown = error;
      }
      throw thrown;
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(thrown !== undefined, "creating an item that exists failed");
    assert.equal(failure, thrown, "the rejection is the block's own error, not a wrapper");
    assert.equal((failure as { code?: unknown }).code, 409);
    const collected = getCollectedHedgeDiagnostics(failure);
    assert.ok(collected !== undefined, "the records are reachable from the error");
    assert.deepEqual(
      collected.map((record) => record.operation),
      ["pointRead", "create"],
    );
    assert.equal(collected[1]?.skipReason, "notEligible", "a write is never hedged on a single-write account");
  });

  it("adds a nested block's records to the enclosing block too, and leaves out requests that finish after the block", async function () {
    let unawaited: Promise<unknown> | undefined;
    const outer = await collectHedgeDiagnostics(async () => {
      await container.item("item-1", "pk-1").read();
      const inner = await collectHedgeDiagnostics(() => container.item("item-2", "pk-2").read());
      assert.equal(inner.diagnostics.length, 1);
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 300, count: 1 });
      unawaited = container.item("item-3", "pk-0").read();
      return inner.diagnostics[0];
    });
    await unawaited;
    assert.equal(outer.diagnostics.length, 2, "the outer block has its own read and the inner block's, not the read it left running");
    assert.equal(outer.diagnostics[1], outer.result);
    assert.equal(published.length, 3);
  });
});
