import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, OperationInput } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import type { FaultRule, RecordedRequest } from "../emulator/index.js";
import https from "node:https";
import { useEmulator, useWanEmulator } from "../support/emulatorFixture.js";
import type { EmulatorFixture } from "../support/emulatorFixture.js";
import { scoped, settledTag, tagged } from "../support/taggedRequests.js";
import { plainAndHedged } from "../support/sideBySide.js";
import type { Side } from "../support/sideBySide.js";
import { catchUnhandled } from "../support/unhandledRejections.js";

/**
 * A transient answer of the region the SDK addressed (a 429, a reset, a
 * 503) is @azure/cosmos's to retry: a 429 in the same region after its
 * back-off, a reset a second later, a 503 in the next region. Found by a
 * hostile review beside plain: the race used to send a hedge at once and
 * hold the answer back for it, so a lagging region's 404/0 or a 401 came
 * back instead of the document the SDK's retry read, and a hung hedge region
 * held the SDK's retry for its whole requestTimeout. Each case runs a plain
 * and a hedged client side by side, each meeting the fault through its own
 * user agent.
 */

let tagCounter = 0;
const newTag = (label: string): string => `trn${++tagCounter}-${label}~`;

const items = Array.from({ length: 12 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));
const throttledOnce: FaultRule = { status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "50" }, count: 1 };

type Outcome = { ok: true; status: number; value: unknown } | { ok: false; code: unknown };

async function outcomeOf(run: () => Promise<{ statusCode: number; resource?: unknown }>): Promise<Outcome> {
  try {
    const response = await run();
    return { ok: true, status: response.statusCode, value: (response.resource as { value?: unknown } | undefined)?.value };
  } catch (error) {
    return { ok: false, code: (error as { code?: unknown }).code };
  }
}

/** A plain and a hedged client with the defaults, each warmed by a read. */
function sides(fixture: EmulatorFixture, connectionPolicy: CosmosClientOptions["connectionPolicy"] = {}, hedging: HedgingOptions = {}): Promise<[Side, Side]> {
  return plainAndHedged(fixture, { newTag, preferredLocations: ["West US", "East US", "North Europe"], hedging, connectionPolicy, warmUp: (container) => container.item("item-0", "pk").read() });
}

/** Creates, for each side, a document `<tag>-<suffix>` of value 1: its id and etag, by the side's container. */
async function createdEach(pair: readonly Side[], suffix: string): Promise<Map<Container, { id: string; etag: string }>> {
  const created = new Map<Container, { id: string; etag: string }>();
  for (const side of pair) {
    const id = `${side.tag}-${suffix}`;
    const { etag } = await side.container.items.create({ id, pk: "pk", value: 1 });
    created.set(side.container, { id, etag });
  }
  return created;
}

const wire = (requests: readonly RecordedRequest[], since: number): string =>
  requests.map((r) => `+${Math.round(r.at - since)} ${r.region} ${r.kind} ${r.status ?? (r.cutByClient ? "cut" : "?")}`).join(", ");

interface Run {
  readonly outcome: Outcome;
  readonly ms: number;
  readonly wire: string;
  /** What its client sent, as the emulator recorded it. */
  readonly requests: readonly RecordedRequest[];
}

/** Installs `faults` (region, rule) for `side` only, runs `read`, and waits for every request it sent. */
async function besidePlain(
  fixture: EmulatorFixture,
  [plain, hedged]: [Side, Side],
  faults: ReadonlyArray<readonly [string, FaultRule]>,
  read: (container: Container) => Promise<Outcome>,
  kinds: OperationKind[] = ["pointRead"],
): Promise<{ plain: Run; hedged: Run; summary: string }> {
  const unhandled = catchUnhandled();
  try {
    const run = async (side: Side): Promise<Run> => {
      const since = tagged(fixture.emulator, side.tag).length;
      for (const [region, rule] of faults) fixture.emulator.region(region).addFault(scoped(rule, side.tag, kinds));
      const start = performance.now();
      const outcome = await read(side.container);
      const ms = Math.round(performance.now() - start);
      await settledTag(fixture.emulator, side.tag, 6_000);
      const requests = tagged(fixture.emulator, side.tag).slice(since);
      return { outcome, ms, wire: wire(requests, start), requests };
    };
    const [p, h] = await Promise.all([run(plain), run(hedged)]);
    const summary = `plain ${JSON.stringify(p.outcome)} ${p.ms} ms (${p.wire}); hedged ${JSON.stringify(h.outcome)} ${h.ms} ms (${h.wire})`;
    console.log(`      ${summary}`);
    assert.deepEqual(unhandled.seen, [], summary);
    return { plain: p, hedged: h, summary };
  } finally {
    unhandled.stop();
  }
}

describe("a transient answer of the region the SDK addressed, beside plain", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items });
  const readItem = (id: number) => (container: Container) => outcomeOf(() => container.item(`item-${id}`, "pk").read());

  for (const [label, fault] of [
    ["429 once (retry after 50 ms)", throttledOnce],
    ["a connection reset once", { connectionReset: true, count: 1 }],
  ] as const) {
    it(`West US answers ${label}, East US and North Europe lag behind the writes (404/0): the document, as plain's retry reads it`, async function () {
      const { plain, hedged, summary } = await besidePlain(fixture, await sides(fixture), [["West US", fault], ["East US", { status: 404 }], ["North Europe", { status: 404 }]], readItem(3));
      assert.deepEqual(plain.outcome, { ok: true, status: 200, value: 3 }, `premise: ${summary}`);
      assert.deepEqual(hedged.outcome, plain.outcome, summary);
    });
  }

  it("West US answers 429 once, East US and North Europe answer 401 (a region misconfigured): the document, as plain's", async function () {
    const { plain, hedged, summary } = await besidePlain(fixture, await sides(fixture), [["West US", throttledOnce], ["East US", { status: 401 }], ["North Europe", { status: 401 }]], readItem(3));
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: 3 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
  });

  it("West US answers 429 once, the other regions healthy but 1500 ms away: no slower than plain, and no hedge sent", async function () {
    const pair = await sides(fixture);
    const { plain, hedged, summary } = await besidePlain(fixture, pair, [["West US", throttledOnce], ["East US", { delayMs: 1_500 }], ["North Europe", { delayMs: 1_500 }]], readItem(4));
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.ok(hedged.ms <= plain.ms + 300, summary);
    assert.equal(pair[1].diagnostics.some((record) => record.hedgeFired), false, summary);
  });

  it("query pages meeting 429 once in West US, the other regions 3 s away: every page as plain's, no slower", async function () {
    const query = (container: Container) =>
      container.items.query("SELECT * FROM c", { maxItemCount: 5 }).fetchAll().then(
        (response): Outcome => ({ ok: true, status: 200, value: response.resources.map((resource) => (resource as { value?: unknown }).value) }),
        (error: { code?: unknown }): Outcome => ({ ok: false, code: error.code }),
      );
    const { plain, hedged, summary } = await besidePlain(fixture, await sides(fixture), [["West US", throttledOnce], ["East US", { delayMs: 3_000 }], ["North Europe", { delayMs: 3_000 }]], query, ["query"]);
    assert.equal(plain.outcome.ok, true, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.ok(hedged.ms <= plain.ms + 300, summary);
  });
});

describe("a transient answer of the region the SDK addressed after the threshold, the caller aborting during the SDK's back-off, beside plain", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items });

  // The hedges in flight lose to the 429; left to drain, they ran on for their 5 s bound, as the caller's abort no
  // longer reaches the attempt's signal once the SDK has its answer (found by the second hostile review).
  it("West US answers 429 (retry after 2 s) after 700 ms, East US and North Europe hung, the caller aborting at 900 ms: no request of the hedged client outlives the abort", async function () {
    const pair = await sides(fixture);
    const abortedAt = new Map<Container, number>();
    const read = (container: Container) => {
      const controller = new AbortController();
      setTimeout(() => {
        abortedAt.set(container, performance.now());
        controller.abort();
      }, 900);
      return outcomeOf(() => container.item("item-3", "pk").read({ abortSignal: controller.signal }));
    };
    const faults: ReadonlyArray<readonly [string, FaultRule]> = [
      ["West US", { status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "2000" }, delayMs: 700, count: 1 }],
      ["East US", { delayMs: 20_000 }],
      ["North Europe", { delayMs: 20_000 }],
    ];
    const { plain, hedged, summary } = await besidePlain(fixture, pair, faults, read);
    const lastEnd = (run: Run, container: Container) => Math.max(...run.requests.map((request) => (request.endedAt ?? Number.POSITIVE_INFINITY) - abortedAt.get(container)!));
    assert.equal(plain.outcome.ok, false, `premise: the caller's abort ends plain's read: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.ok(hedged.requests.length > plain.requests.length, `premise: hedges went out: ${summary}`);
    assert.ok(lastEnd(hedged, pair[1].container) <= Math.max(lastEnd(plain, pair[0].container), 0) + 300, summary);
  });
});

describe("a transient answer of the region the SDK addressed, the other region hung, beside plain", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, emulator: { regions: [{ name: "West US" }, { name: "East US" }] } });

  it("requestTimeout 4000, West US answers 429 once, East US hangs: as fast as plain (was twice the requestTimeout)", async function () {
    const pair = await sides(fixture, { requestTimeout: 4_000, preferredLocations: ["West US", "East US"] });
    const read = (container: Container) => outcomeOf(() => container.item("item-5", "pk").read());
    const { plain, hedged, summary } = await besidePlain(fixture, pair, [["West US", throttledOnce], ["East US", { delayMs: 25_000 }]], read);
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: 5 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.ok(hedged.ms <= plain.ms + 300, summary);
  });
});

// A hedged write's hedge that went out may have applied the write: the primary's transient answer waits for it, as the
// SDK's retry of the primary would meet the write already done. Found by a second hostile review: with the answer going
// back at once, a create ended 409, a replace with ifMatch 412, a delete 404 and a batch [409, 424] where plain's
// retry succeeded.
describe("a hedged write whose region the SDK addressed answers 503 after the threshold, beside plain", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, emulator: { multipleWriteLocations: true } });
  const hedging: HedgingOptions = { crossRegion: { enableMultiWriteRegionHedge: true } };
  // The other regions apply the write at once and acknowledge it late, after the primary's 503.
  const faults: ReadonlyArray<readonly [string, FaultRule]> = [
    ["West US", { delayMs: 800, status: 503, count: 1 }],
    ["East US", { responseDelayMs: 1_500, count: 1 }],
    ["North Europe", { responseDelayMs: 1_500, count: 1 }],
  ];
  const exists = (container: Container, id: string): Promise<boolean> => container.item(id, "pk").read().then((response) => response.statusCode === 200, () => false);

  it("create: the outcome and the document as plain's", async function () {
    const pair = await sides(fixture, {}, hedging);
    const ids = new Map(pair.map((side) => [side.container, `${side.tag}-created`]));
    const create = (container: Container) => outcomeOf(() => container.items.create({ id: ids.get(container)!, pk: "pk", value: 42 }));
    const { plain, hedged, summary } = await besidePlain(fixture, pair, faults, create, ["create"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 201, value: 42 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.equal(await exists(pair[1].container, ids.get(pair[1].container)!), true);
  });

  it("replace with ifMatch: the outcome as plain's", async function () {
    const pair = await sides(fixture, {}, hedging);
    const etags = await createdEach(pair, "doc");
    const replace = (container: Container) => {
      const { id, etag } = etags.get(container)!;
      return outcomeOf(() => container.item(id, "pk").replace({ id, pk: "pk", value: 2 }, { accessCondition: { type: "IfMatch", condition: etag } }));
    };
    const { plain, hedged, summary } = await besidePlain(fixture, pair, faults, replace, ["replace"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: 2 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
  });

  it("delete: the outcome and the document gone, as plain's", async function () {
    const pair = await sides(fixture, {}, hedging);
    for (const side of pair) await side.container.items.create({ id: `${side.tag}-del`, pk: "pk", value: 1 });
    const ids = new Map(pair.map((side) => [side.container, `${side.tag}-del`]));
    const remove = (container: Container) => outcomeOf(() => container.item(ids.get(container)!, "pk").delete());
    const { plain, hedged, summary } = await besidePlain(fixture, pair, faults, remove, ["delete"]);
    assert.equal(plain.outcome.ok, true, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.equal(await exists(pair[1].container, ids.get(pair[1].container)!), false);
  });
});

// An unconditional upsert applied twice answers 201 and then 200: the hedge met the document the primary had created
// and its 200, a success, won the race, telling the caller "updated" (fourth hostile review). Only an upsert with
// If-Match (a second application answers 412) is hedged.
describe("a hedged upsert whose region the SDK addressed applies it at once and acknowledges it late, beside plain", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, emulator: { multipleWriteLocations: true } });
  const hedging: HedgingOptions = { crossRegion: { threshold: 100, budget: false, enableMultiWriteRegionHedge: true } };
  const slowAcknowledgement: ReadonlyArray<readonly [string, FaultRule]> = [["West US", { responseDelayMs: 800, count: 1 }]];

  it("an upsert that creates its document: 201, as plain's", async function () {
    const pair = await sides(fixture, {}, hedging);
    const ids = new Map(pair.map((side) => [side.container, `${side.tag}-upserted`]));
    const upsert = (container: Container) => outcomeOf(() => container.items.upsert({ id: ids.get(container)!, pk: "pk", value: 5 }));
    const { plain, hedged, summary } = await besidePlain(fixture, pair, slowAcknowledgement, upsert, ["upsert"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 201, value: 5 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.equal(hedged.requests.filter((request) => request.kind === "upsert").length, 1, `sent once: ${summary}`);
  });

  it("bulk upserts that create their documents: 201 each, as plain's", async function () {
    const pair = await sides(fixture, {}, hedging);
    const bulk = (container: Container) =>
      outcomeOf(async () => {
        const prefix = pair.find((side) => side.container === container)!.tag;
        const results = await container.items.executeBulkOperations(
          [0, 1, 2].map((i): OperationInput => ({ operationType: "Upsert", partitionKey: "pk", resourceBody: { id: `${prefix}-bulk-${i}`, pk: "pk", value: i } })),
        );
        return { statusCode: 200, resource: { value: results.map((result) => result.response?.statusCode ?? result.error?.code) } };
      });
    const { plain, hedged, summary } = await besidePlain(fixture, pair, slowAcknowledgement, bulk, ["batch"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: [201, 201, 201] }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
  });

  // Every hedge's 200 carries the stale upsert's 412, so none wins; the primary's 503 went back, and the SDK's retry met
  // the operations the hedge had applied (fifth hostile review: plain [200, 412, 201, 204], hedged [412, 412, 409, 404]).
  it("bulk: an If-Match upsert, a stale one, a create and a delete, West US answering 503 after 800 ms: the same results and documents as plain", async function () {
    const pair = await sides(fixture, {}, hedging);
    const etags = new Map<Container, string[]>();
    for (const side of pair) {
      const made: string[] = [];
      for (const i of [0, 1, 2]) made.push((await side.container.items.create({ id: `${side.tag}-e${i}`, pk: "pk", value: 100 + i })).etag);
      etags.set(side.container, made);
    }
    const tagOf = (container: Container) => pair.find((side) => side.container === container)!.tag;
    const bulk = (container: Container) =>
      outcomeOf(async () => {
        const tag = tagOf(container);
        const results = await container.items.executeBulkOperations([
          { operationType: "Upsert", partitionKey: "pk", ifMatch: etags.get(container)![0], resourceBody: { id: `${tag}-e0`, pk: "pk", value: 10 } },
          { operationType: "Upsert", partitionKey: "pk", ifMatch: '"stale"', resourceBody: { id: `${tag}-e1`, pk: "pk", value: 11 } },
          { operationType: "Create", partitionKey: "pk", resourceBody: { id: `${tag}-b3`, pk: "pk", value: 3 } },
          { operationType: "Delete", partitionKey: "pk", id: `${tag}-e2` },
        ]);
        return { statusCode: 200, resource: { value: results.map((result) => result.response?.statusCode ?? result.error?.code) } };
      });
    const { plain, hedged, summary } = await besidePlain(fixture, pair, [["West US", { delayMs: 800, status: 503, count: 1 }]], bulk, ["batch"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: [200, 412, 201, 204] }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    const documents = (side: Side) =>
      Promise.all(["e0", "e1", "e2", "b3"].map((id) => side.container.item(`${side.tag}-${id}`, "pk").read().then((response) => (response.resource as { value?: unknown } | undefined)?.value ?? null, () => null)));
    assert.deepEqual(await documents(pair[1]), await documents(pair[0]), `documents: ${summary}`);
    assert.ok(pair[1].diagnostics.some((record) => record.operation === "batch" && record.hedgeFired), `the bulk request was hedged: ${summary}`);
  });

  it("an upsert with If-Match is hedged still, and ends as plain's (the hedge's second application is answered 412)", async function () {
    const pair = await sides(fixture, {}, hedging);
    const etags = await createdEach(pair, "conditional");
    const upsert = (container: Container) => {
      const { id, etag } = etags.get(container)!;
      return outcomeOf(() => container.items.upsert({ id, pk: "pk", value: 2 }, { accessCondition: { type: "IfMatch", condition: etag } }));
    };
    const { plain, hedged, summary } = await besidePlain(fixture, pair, slowAcknowledgement, upsert, ["upsert"]);
    assert.deepEqual(plain.outcome, { ok: true, status: 200, value: 2 }, `premise: ${summary}`);
    assert.deepEqual(hedged.outcome, plain.outcome, summary);
    assert.ok(pair[1].diagnostics.some((record) => record.operation === "upsert" && record.hedgeFired), `the upsert was hedged: ${summary}`);
  });
});

// A small pool (maxSockets 2): at the threshold every read of a burst queued a hedge to the next regions, and the SDK's
// retries of the 503 queued behind hedges that their own primaries' 503s cut a moment later (third hostile review:
// 11.6 s against plain's 8.4 s). A hedge that would wait for a socket of a bounded agent is not sent.
describe("a burst of reads over an agent with maxSockets 2, the preferred region answering 503 after the threshold, beside plain", function () {
  this.timeout(60_000);
  const fixture = useWanEmulator({ wan: { rttMs: { "West US": 2, "East US": 2, "North Europe": 2 } }, items });

  it("the other regions 1500 ms away: the same outcomes, no slower than plain, nothing queued after", async function () {
    const run = async (hedged: boolean): Promise<{ outcomes: Outcome[]; ms: number; queued: number }> => {
      const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca, maxSockets: 2 });
      const tag = newTag(hedged ? "pool-hedged" : "pool-plain");
      const options: CosmosClientOptions = {
        endpoint: fixture.wan.endpoint,
        key: fixture.emulator.key,
        agent,
        userAgentSuffix: tag,
        connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: ["West US", "East US", "North Europe"] },
      };
      const client = new CosmosClient(hedged ? withHedging(options) : options);
      try {
        const container = client.database("db").container("items");
        await container.item("item-0", "pk").read();
        fixture.emulator.region("West US").addFault(scoped({ delayMs: 800, status: 503 }, tag));
        for (const region of ["East US", "North Europe"]) fixture.emulator.region(region).addFault(scoped({ delayMs: 1_500 }, tag));
        const start = performance.now();
        const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => outcomeOf(() => container.item(`item-${i + 1}`, "pk").read())));
        const ms = Math.round(performance.now() - start);
        const queued = Object.values(agent.requests).reduce((sum, list) => sum + (list?.length ?? 0), 0);
        await settledTag(fixture.emulator, tag, 8_000);
        return { outcomes, ms, queued };
      } finally {
        client.dispose();
        agent.destroy();
      }
    };
    const [plain, hedged] = await Promise.all([run(false), run(true)]);
    const summary = `plain ${plain.ms} ms, hedged ${hedged.ms} ms`;
    console.log(`      ${summary}`);
    assert.ok(plain.outcomes.every((outcome) => outcome.ok), `premise: ${summary}`);
    assert.deepEqual(hedged.outcomes, plain.outcomes, summary);
    assert.ok(hedged.ms <= plain.ms + 300, summary);
    assert.equal(hedged.queued, 0, summary);
  });
});
