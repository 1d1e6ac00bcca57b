import assert from "node:assert/strict";
import https from "node:https";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, OperationInput } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { RecordedRequest } from "../emulator/index.js";
import { useEmulator, useWanEmulator } from "../support/emulatorFixture.js";
import { scoped, settledTag, tagged, taggedClientOptions } from "../support/taggedRequests.js";
import { catchUnhandled } from "../support/unhandledRejections.js";

/**
 * Side-by-side runs of one operation under one fault, through a
 * plain `CosmosClient` and a `withHedging` one, on angles other suites do
 * not take: the user's own agents (bounded, shared), the SDK's partition-level
 * circuit breaker meeting 503s, a short `requestTimeout`, session reads that
 * must see their write, bulk and batch, and hostile abort signals and
 * `dispose()`. Each client tags its requests (`userAgentSuffix`) so that the
 * emulator's record tells the two apart, and faults are scoped to one tag
 * where both clients run at once. Delays are far from thresholds.
 */

const items = Array.from({ length: 12 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));
let tagCounter = 0;
const newTag = (label: string): string => `atk${++tagCounter}-${label}~`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Outcome = { ok: true; status: number; value: unknown } | { ok: false; name: string; code: unknown; message?: string };

async function outcomeOf(run: () => Promise<{ statusCode: number; resource?: unknown }>): Promise<Outcome> {
  try {
    const response = await run();
    return { ok: true, status: response.statusCode, value: (response.resource as { value?: unknown } | undefined)?.value };
  } catch (error) {
    const e = error as { name?: string; code?: unknown; message?: string };
    // An AbortError's message is core-rest-pipeline's transport's, and says where the abort met the request; others carry
    // activity ids, which differ between any two requests.
    return { ok: false, name: String(e.name), code: e.code, ...(e.name === "AbortError" ? { message: e.message } : {}) };
  }
}

/** The sockets of an agent that carry a request, and those of them that keep the process alive. */
function busySockets(agent: https.Agent): { busy: number; refd: number; queued: number } {
  let busy = 0;
  let refd = 0;
  for (const sockets of Object.values(agent.sockets)) {
    for (const socket of sockets ?? []) {
      busy++;
      const handle = (socket as unknown as { _handle?: { hasRef?: () => boolean } })._handle;
      if (handle?.hasRef?.() === true) refd++;
    }
  }
  const queued = Object.values(agent.requests).reduce((total, list) => total + (list?.length ?? 0), 0);
  return { busy, refd, queued };
}

// ---------------------------------------------------------------------------------------------------------------------
// 1 and 2: the user's own agent, over the emulator's HTTPS (WAN) fronts: with an agent of its own, @azure/cosmos sends
// http: requests only with allowInsecureConnection, so a real https agent is the realistic way to give one.
// ---------------------------------------------------------------------------------------------------------------------

describe("beside plain: an agent of the user's", function () {
  this.timeout(90_000);
  const preferredLocations = ["West US", "East US", "North Europe"];
  const fixture = useWanEmulator({ wan: { rttMs: { "East US": 1, "West US": 1, "North Europe": 1 } }, items });

  function clientOn(agent: https.Agent, tag: string, hedging: HedgingOptions | false, diagnostics?: HedgeDiagnostics[]): CosmosClient {
    const base: CosmosClientOptions = {
      endpoint: fixture.wan.endpoint,
      key: fixture.emulator.key,
      agent,
      userAgentSuffix: tag,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations },
    };
    return new CosmosClient(hedging === false ? base : withHedging(base, { ...hedging, onDiagnostics: (record) => diagnostics?.push(record) }));
  }

  /** Ten reads at once, West US (preferred) 600 ms slow for this client: elapsed, values, and the agent right after. */
  async function tenReads(agentOptions: https.AgentOptions, hedging: HedgingOptions | false): Promise<{ elapsed: number; values: unknown[]; after: ReturnType<typeof busySockets>; settledWithinDrainBound: boolean; requests: number }> {
    const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca, ...agentOptions });
    const tag = newTag(hedging === false ? "plain" : "hedged");
    const client = clientOn(agent, tag, hedging);
    try {
      const container = client.database("db").container("items");
      await container.item("item-0", "pk").read();
      await settledTag(fixture.emulator, tag, 5_000);
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 600 }, tag, ["pointRead"]));
      const since = tagged(fixture.emulator, tag, ["pointRead"]).length;
      const start = performance.now();
      const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => container.item(`item-${i + 1}`, "pk").read()));
      const elapsed = performance.now() - start;
      await sleep(100);
      const after = busySockets(agent);
      const settledWithinDrainBound = await settledTag(fixture.emulator, tag, 6_000);
      return {
        elapsed,
        values: responses.map((response) => response.resource?.value),
        after,
        settledWithinDrainBound,
        requests: tagged(fixture.emulator, tag, ["pointRead"]).length - since,
      };
    } finally {
      client.dispose();
      agent.destroy();
    }
  }

  for (const [label, agentOptions] of [
    ["maxSockets: 1", { maxSockets: 1 }],
    ["maxTotalSockets: 2", { maxTotalSockets: 2 }],
  ] as const) {
    it(`${label}, West US 600 ms slow, 10 reads at once: hedged (threshold 100, budget off) is not slower overall than plain, and leaves no busy or queued socket once the reads return`, async function () {
      const plain = await tenReads(agentOptions, false);
      const hedged = await tenReads(agentOptions, { crossRegion: { threshold: 100, budget: false } });
      const summary = `plain ${plain.elapsed.toFixed(0)} ms ${JSON.stringify(plain.after)}, hedged ${hedged.elapsed.toFixed(0)} ms ${JSON.stringify(hedged.after)} (requests: plain ${plain.requests}, hedged ${hedged.requests})`;
      console.log(`      ${summary}`);
      const expected = Array.from({ length: 10 }, (_, i) => i + 1);
      assert.deepEqual(plain.values, expected);
      assert.deepEqual(hedged.values, expected, summary);
      assert.ok(hedged.elapsed <= plain.elapsed + 300, summary);
      assert.equal(hedged.after.queued, 0, `a request still queued on the agent after the reads returned: ${summary}`);
      assert.ok(hedged.after.refd <= plain.after.refd, `a ref'd socket busy after the reads returned: ${summary}`);
      assert.ok(hedged.settledWithinDrainBound, "every request of the hedged client ended within the drain bound");
    });
  }

  // Sixth hostile review: a hedge was sent on a socket free at its launch and then held it until its race ended, so the
  // SDK's next request to that host (a write, which is never hedged) waited in the agent's queue: plain 6-14 ms, hedged
  // 662-676 ms. The hedge now gives its socket up to it.
  for (const [label, second] of [
    ["an upsert (to East US, the write region)", "upsert"],
    ["a point read with excludedLocations: [West US]", "excludedRead"],
  ] as const) {
    it(`maxSockets: 1, ${label} 200 ms into a read whose hedge holds East US's only socket: as fast as plain, and the read ends as plain's`, async function () {
      const unhandled = catchUnhandled();
      const run = async (hedging: HedgingOptions | false): Promise<{ reads: Outcome[]; seconds: Outcome[]; secondMs: number[]; cut: number }> => {
        const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: fixture.wan.ca });
        const tag = newTag(hedging === false ? "yield-plain" : "yield-hedged");
        const diagnostics: HedgeDiagnostics[] = [];
        const client = clientOn(agent, tag, hedging, diagnostics);
        try {
          const container = client.database("db").container("items");
          await container.item("item-0", "pk").read();
          await container.items.upsert({ id: `w-${tag}`, pk: "pk", value: 0 });
          await settledTag(fixture.emulator, tag, 6_000);
          // Reads slow everywhere, so that the read's race is still open when the second operation comes.
          fixture.emulator.region("West US").addFault(scoped({ delayMs: 800 }, tag, ["pointRead"]));
          fixture.emulator.region("East US").addFault(scoped({ delayMs: 1_500 }, tag, ["pointRead"]));
          fixture.emulator.region("North Europe").addFault(scoped({ delayMs: 1_500 }, tag, ["pointRead"]));
          const reads: Outcome[] = [];
          const seconds: Outcome[] = [];
          const secondMs: number[] = [];
          for (let i = 0; i < 3; i++) {
            const read = outcomeOf(() => container.item(`item-${i + 1}`, "pk").read());
            await sleep(200);
            const began = performance.now();
            seconds.push(
              await (second === "upsert"
                ? outcomeOf(() => container.items.upsert({ id: `w-${tag}`, pk: "pk", value: i + 1 }))
                : outcomeOf(() => container.item(`item-${i + 5}`, "pk").read({ excludedLocations: ["West US"] }))),
            );
            secondMs.push(Math.round(performance.now() - began));
            reads.push(await read);
            await settledTag(fixture.emulator, tag, 8_000);
          }
          // Hedges cut while their race went on (losers of a bounded pool are cut at the decision too, when the primary answers).
          const cut = diagnostics.flatMap((record) => {
            const returned = record.arms.find((arm) => arm.outcome === "returned");
            const decidedAt = (returned?.startOffsetMs ?? 0) + (returned?.durationMs ?? 0);
            return record.arms.filter((arm) => arm.reason !== "primary" && arm.outcome === "aborted" && arm.startOffsetMs + (arm.durationMs ?? 0) < decidedAt - 100);
          }).length;
          return { reads, seconds, secondMs, cut };
        } finally {
          client.dispose();
          agent.destroy();
        }
      };
      try {
        const plain = await run(false);
        const hedged = await run({ crossRegion: { threshold: 100, budget: false } });
        const summary = `second operation: plain ${JSON.stringify(plain.secondMs)} ms, hedged ${JSON.stringify(hedged.secondMs)} ms; hedges cut before their race's end ${hedged.cut}`;
        console.log(`      ${summary}`);
        assert.deepEqual(hedged.reads, plain.reads, summary);
        assert.deepEqual(hedged.seconds, plain.seconds, summary);
        // Without the hedge giving its socket up, each waited for the read's race: 650 ms and more (1.5 s for the excluded read).
        for (const [i, ms] of hedged.secondMs.entries()) assert.ok(ms <= plain.secondMs[i]! + 250, `operation ${i}: ${summary}`);
        assert.ok(hedged.cut >= 1, `a hedge gave its socket up: ${summary}`);
        assert.deepEqual(unhandled.seen, []);
      } finally {
        unhandled.stop();
      }
    });
  }

  // The same review's second round: under maxTotalSockets, a hedge to East US took the last socket, and a query of the
  // SDK's to West US (whose slow read held a socket) waited for that read, since Node gives a freed socket of another
  // host to a queued request only while its own host has none: plain 21-88 ms, hedged 625-657 ms.
  it("maxTotalSockets: 2, no keep-alive, a query to West US 200 ms into a slow West US read: as fast as plain, the reads as plain's", async function () {
    const run = async (hedging: HedgingOptions | false): Promise<{ reads: Outcome[]; queryMs: number[]; found: number[] }> => {
      const agent = new https.Agent({ keepAlive: false, maxTotalSockets: 2, ca: fixture.wan.ca });
      const tag = newTag(hedging === false ? "total-plain" : "total-hedged");
      const client = clientOn(agent, tag, hedging);
      try {
        const container = client.database("db").container("items");
        await container.item("item-0", "pk").read();
        await container.items.query("SELECT * FROM c WHERE c.id = 'item-1'").fetchAll();
        await settledTag(fixture.emulator, tag, 6_000);
        for (const region of preferredLocations) fixture.emulator.region(region).addFault(scoped({ delayMs: region === "West US" ? 800 : 1_500 }, tag, ["pointRead"]));
        const reads: Outcome[] = [];
        const queryMs: number[] = [];
        const found: number[] = [];
        for (let i = 0; i < 3; i++) {
          const read = outcomeOf(() => container.item(`item-${i + 1}`, "pk").read());
          await sleep(200);
          const began = performance.now();
          found.push((await container.items.query(`SELECT * FROM c WHERE c.id = 'item-${i + 5}'`).fetchAll()).resources.length);
          queryMs.push(Math.round(performance.now() - began));
          reads.push(await read);
          await settledTag(fixture.emulator, tag, 8_000);
        }
        return { reads, queryMs, found };
      } finally {
        client.dispose();
        agent.destroy();
      }
    };
    const plain = await run(false);
    const hedged = await run({ crossRegion: { threshold: 100, budget: false } });
    const summary = `query: plain ${JSON.stringify(plain.queryMs)} ms, hedged ${JSON.stringify(hedged.queryMs)} ms`;
    console.log(`      ${summary}`);
    assert.deepEqual(hedged.reads, plain.reads, summary);
    assert.deepEqual(hedged.found, [1, 1, 1], summary);
    for (const [i, ms] of hedged.queryMs.entries()) assert.ok(ms <= plain.queryMs[i]! + 250, `query ${i}: ${summary}`);
  });

  it("one keep-alive agent shared by a plain and a hedged client, both reading the same hot item at once, West US slow: no plain read is cut or failed, and the plain client's requests are exactly its reads", async function () {
    const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca });
    const plainTag = newTag("shared-plain");
    const hedgedTag = newTag("shared-hedged");
    const diagnostics: HedgeDiagnostics[] = [];
    const plain = clientOn(agent, plainTag, false);
    const hedged = clientOn(agent, hedgedTag, { crossRegion: { threshold: 100, budget: false } }, diagnostics);
    const unhandled = catchUnhandled();
    try {
      const plainItems = plain.database("db").container("items");
      const hedgedItems = hedged.database("db").container("items");
      await plainItems.item("item-0", "pk").read();
      await hedgedItems.item("item-0", "pk").read();
      await settledTag(fixture.emulator, hedgedTag, 6_000);
      // Both clients' West US reads slow: the hedged client's primaries lose and drain on the connections the plain client uses.
      fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 700 });
      const rounds = 4;
      const outcomes: Outcome[] = [];
      for (let round = 0; round < rounds; round++) {
        const both = await Promise.all([
          ...Array.from({ length: 8 }, () => outcomeOf(() => plainItems.item("item-5", "pk").read())),
          ...Array.from({ length: 8 }, () => outcomeOf(() => hedgedItems.item("item-5", "pk").read())),
        ]);
        outcomes.push(...both);
      }
      // Straggling loser: past the 5 s drain bound, while the plain client keeps reading the same item.
      fixture.emulator.clearFaults();
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 6_500 }, hedgedTag, ["pointRead"]));
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 300 }, plainTag, ["pointRead"]));
      const hedgedLate = outcomeOf(() => hedgedItems.item("item-5", "pk").read());
      const plainDuring: Array<Promise<Outcome>> = [];
      const start = performance.now();
      while (performance.now() - start < 7_000) {
        plainDuring.push(outcomeOf(() => plainItems.item("item-5", "pk").read()));
        await sleep(150);
      }
      outcomes.push(await hedgedLate, ...(await Promise.all(plainDuring)));
      await settledTag(fixture.emulator, hedgedTag, 8_000);
      await settledTag(fixture.emulator, plainTag, 8_000);
      const failed = outcomes.filter((outcome) => !(outcome.ok && outcome.value === 5));
      assert.deepEqual(failed, [], "every read, plain and hedged, returned item-5");
      const plainReads = tagged(fixture.emulator, plainTag, ["pointRead"]);
      assert.equal(plainReads.length, rounds * 8 + plainDuring.length + 1, "one request per plain read (and its warm-up): none retried after a cut");
      assert.deepEqual(
        plainReads.filter((request) => request.cutByClient || request.status !== 200).map((request) => [request.region, request.status, request.cutByClient]),
        [],
        "no plain request cut",
      );
      assert.ok(diagnostics.some((record) => record.hedgeWon), "the hedged client did hedge");
      assert.deepEqual(unhandled.seen, []);
    } finally {
      unhandled.stop();
      plain.dispose();
      hedged.dispose();
      agent.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// 3 to 7: the SDK's own machinery, on the plain-HTTP emulator with the SDK's own agent.
// ---------------------------------------------------------------------------------------------------------------------

describe("beside plain: hedged writes on a multi-write account", function () {
  this.timeout(120_000);
  const preferredLocations = ["West US", "East US", "North Europe"];
  const fixture = useWanEmulator({ emulator: { multipleWriteLocations: true }, wan: { rttMs: { "East US": 1, "West US": 1, "North Europe": 1 } }, items });
  const writesHedged: HedgingOptions = { crossRegion: { threshold: 100, budget: false, enableMultiWriteRegionHedge: true } };

  /** A client over `agent`, its requests tagged, hedging its writes or plain. */
  function clientOver(agent: https.Agent, tag: string, hedging: HedgingOptions | false, connectionPolicy: CosmosClientOptions["connectionPolicy"] = {}): CosmosClient {
    const base: CosmosClientOptions = {
      endpoint: fixture.wan.endpoint,
      key: fixture.emulator.key,
      agent,
      userAgentSuffix: tag,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations, ...connectionPolicy },
    };
    return new CosmosClient(hedging === false ? base : withHedging(base, hedging));
  }

  /** `body` run plain, then with writes hedged, each over a client and agent of its own, closed with the faults cleared after. */
  async function plainThenHedged<R>(
    name: string,
    agentOptions: https.AgentOptions,
    connectionPolicy: CosmosClientOptions["connectionPolicy"],
    body: (container: Container, tag: string) => Promise<R>,
  ): Promise<{ plain: R; hedged: R }> {
    const results: R[] = [];
    for (const hedging of [false, writesHedged] as const) {
      const agent = new https.Agent({ keepAlive: true, ca: fixture.wan.ca, ...agentOptions });
      const tag = newTag(`${name}-${hedging === false ? "plain" : "hedged"}`);
      const client = clientOver(agent, tag, hedging, connectionPolicy);
      try {
        results.push(await body(client.database("db").container("items"), tag));
      } finally {
        fixture.emulator.clearFaults();
        client.dispose();
        agent.destroy();
      }
    }
    return { plain: results[0]!, hedged: results[1]! };
  }

  // Sixth hostile review, second round. The hedges (East US, North Europe) are applied at once and acknowledged 800 ms
  // late. "late primary": West US forwards the create only after 600 ms, when the hedge's document exists, and answered
  // 409, which won (hedged 409 x9 where plain had 201 x9). "cut hedge": West US answers 503, and at 180 ms a read of the
  // SDK's to East US (maxSockets: 1) took the socket of the hedge the 503 waited for; the race then handed the 503 back,
  // and the SDK's retry met the cut hedge's document (409 x9).
  for (const [label, westFault, readAt] of [
    ["late primary: West US forwards the create 600 ms late", { delayMs: 600 }, undefined],
    ["cut hedge: West US answers 503 at 150 ms, a read to East US 180 ms in", { delayMs: 150, status: 503, count: 1 }, 180],
  ] as const) {
    it(`${label}: every create 201, as plain's`, async function () {
      const unhandled = catchUnhandled();
      try {
        const { plain, hedged } = await plainThenHedged("applied", { maxSockets: 1 }, {}, async (container, tag) => {
          await container.item("item-0", "pk").read();
          await container.item("item-0", "pk").read({ excludedLocations: ["West US"] });
          await container.items.upsert({ id: `warm-${tag}`, pk: "pk", value: 0 });
          await settledTag(fixture.emulator, tag, 6_000);
          const creates: Outcome[] = [];
          const ms: number[] = [];
          for (let i = 0; i < 3; i++) {
            fixture.emulator.clearFaults();
            fixture.emulator.region("West US").addFault(scoped(westFault, tag, ["create"]));
            fixture.emulator.region("East US").addFault(scoped({ responseDelayMs: 800 }, tag, ["create"]));
            fixture.emulator.region("North Europe").addFault(scoped({ responseDelayMs: 800 }, tag, ["create"]));
            const began = performance.now();
            const create = outcomeOf(() => container.items.create({ id: `c-${tag}-${i}`, pk: "pk", value: i }));
            if (readAt !== undefined) {
              await sleep(readAt);
              await container.item(`item-${i + 1}`, "pk").read({ excludedLocations: ["West US"] });
            }
            creates.push(await create);
            ms.push(Math.round(performance.now() - began));
            await settledTag(fixture.emulator, tag, 8_000);
          }
          return { creates, ms };
        });
        const summary = `plain ${JSON.stringify(plain.creates.map((o) => (o.ok ? o.status : o.code)))} in ${JSON.stringify(plain.ms)} ms, hedged ${JSON.stringify(hedged.creates.map((o) => (o.ok ? o.status : o.code)))} in ${JSON.stringify(hedged.ms)} ms`;
        console.log(`      ${summary}`);
        assert.deepEqual(plain.creates.map((o) => o.ok && o.status), [201, 201, 201], summary);
        assert.deepEqual(hedged.creates, plain.creates, summary);
        assert.deepEqual(unhandled.seen, []);
      } finally {
        unhandled.stop();
      }
    });
  }

  // A quick check of the second round: a primary's final failure waited for every hedge, so hedges hanging turned a
  // definite 409 (plain, 0.3 s) into a TimeoutError at requestTimeout (3.0 s). It now waits as long again as it took.
  it("a create of a document that exists, West US 300 ms, the hedges hanging, requestTimeout 3000: 409 as plain's, within twice plain's time, and when the caller aborts while it waits", async function () {
    const unhandled = catchUnhandled();
    try {
      const { plain, hedged } = await plainThenHedged("conflict", {}, { requestTimeout: 3_000 }, async (container, tag) => {
        await container.items.create({ id: `exists-${tag}`, pk: "pk", value: 0 });
        await settledTag(fixture.emulator, tag, 6_000);
        fixture.emulator.region("West US").addFault(scoped({ delayMs: 300 }, tag, ["create"]));
        fixture.emulator.region("East US").addFault(scoped({ delayMs: 20_000 }, tag, ["create"]));
        fixture.emulator.region("North Europe").addFault(scoped({ delayMs: 20_000 }, tag, ["create"]));
        const outcomes: Outcome[] = [];
        const ms: number[] = [];
        for (let i = 0; i < 3; i++) {
          const began = performance.now();
          // The third with the caller's abort at 450 ms: after plain's 409, while hedged waits for its hedges.
          const options = i === 2 ? { abortSignal: AbortSignal.timeout(450) } : {};
          outcomes.push(await outcomeOf(() => container.items.create({ id: `exists-${tag}`, pk: "pk", value: i }, options)));
          ms.push(Math.round(performance.now() - began));
        }
        return { outcomes, ms };
      });
      const summary = `plain ${JSON.stringify(plain.outcomes)} in ${JSON.stringify(plain.ms)} ms, hedged ${JSON.stringify(hedged.outcomes)} in ${JSON.stringify(hedged.ms)} ms`;
      console.log(`      ${summary}`);
      assert.deepEqual(plain.outcomes.map((o) => !o.ok && o.code), [409, 409, 409], summary);
      assert.deepEqual(hedged.outcomes, plain.outcomes, summary);
      for (const [i, ms] of hedged.ms.entries()) assert.ok(ms <= 2 * plain.ms[i]! + 250, `create ${i}: ${summary}`);
      assert.deepEqual(unhandled.seen, []);
    } finally {
      unhandled.stop();
    }
  });
});

describe("beside plain: the SDK's own machinery", function () {
  this.timeout(90_000);
  const preferredLocations = ["West US", "East US", "North Europe"];
  const fixture = useEmulator({ items });

  function optionsOf(tag: string, extra: Partial<CosmosClientOptions> = {}, connectionPolicy: CosmosClientOptions["connectionPolicy"] = {}): CosmosClientOptions {
    return taggedClientOptions(fixture.emulator, tag, preferredLocations, connectionPolicy, extra);
  }

  interface Side {
    readonly tag: string;
    readonly container: Container;
    readonly diagnostics: HedgeDiagnostics[];
  }

  /** A plain and a hedged client of the same options, both warm (account, collection, partition key ranges). */
  async function pair(hedging: HedgingOptions, extra: Partial<CosmosClientOptions> = {}, connectionPolicy: CosmosClientOptions["connectionPolicy"] = {}): Promise<{ plain: Side; hedged: Side }> {
    const sides = [] as Side[];
    for (const hedged of [false, true]) {
      const tag = newTag(hedged ? "hedged" : "plain");
      const diagnostics: HedgeDiagnostics[] = [];
      const options = optionsOf(tag, extra, connectionPolicy);
      const client = fixture.adopt(new CosmosClient(hedged ? withHedging(options, { ...hedging, onDiagnostics: (record) => diagnostics.push(record) }) : options));
      const container = client.database("db").container("items");
      await container.item("item-0", "pk").read();
      await settledTag(fixture.emulator, tag, 6_000);
      diagnostics.length = 0;
      sides.push({ tag, container, diagnostics });
    }
    return { plain: sides[0]!, hedged: sides[1]! };
  }

  const regionsOf = (requests: readonly RecordedRequest[]): string[] => requests.map((request) => `${request.region}:${request.status ?? (request.cutByClient ? "cut" : "?")}`);

  // A primary's 503 becomes a race at once, and the hedge's 200 goes to the SDK as the answer of the region it addressed:
  // without SdkBreakerWatch the SDK's breaker never counted a failure, and every read kept going to the 503ing region.
  it("partition-level circuit breaker, West US (preferred) answering 503 to the first 14 point reads then recovering, 24 reads one after another: the reads' outcomes and the breaker's routing are plain's", async function () {
    const { plain, hedged } = await pair({}, {}, { enablePartitionLevelCircuitBreaker: true });
    const run = async (side: Side): Promise<{ outcomes: Outcome[]; westUs: number; lastRegions: string[]; requests: string[] }> => {
      const since = tagged(fixture.emulator, side.tag).length;
      fixture.emulator.region("West US").addFault(scoped({ status: 503, count: 14 }, side.tag, ["pointRead"]));
      const outcomes: Outcome[] = [];
      for (let i = 0; i < 24; i++) outcomes.push(await outcomeOf(() => side.container.item(`item-${(i % 11) + 1}`, "pk").read()));
      await settledTag(fixture.emulator, side.tag, 6_000);
      const reads = tagged(fixture.emulator, side.tag, ["pointRead"]).slice(since > 0 ? 0 : 0).filter((request) => request.at > 0);
      const mine = reads.slice(-reads.length);
      return {
        outcomes,
        westUs: mine.filter((request) => request.region === "West US").length,
        lastRegions: mine.slice(-6).map((request) => request.region),
        requests: regionsOf(mine),
      };
    };
    const p = await run(plain);
    const h = await run(hedged);
    const summary = `plain: ${p.requests.length} requests, ${p.westUs} to West US, last ${p.lastRegions.join(",")}\n      hedged: ${h.requests.length} requests, ${h.westUs} to West US, last ${h.lastRegions.join(",")}\n      plain ${p.requests.join(" ")}\n      hedged ${h.requests.join(" ")}`;
    console.log(`      ${summary}`);
    assert.deepEqual(h.outcomes, p.outcomes, summary);
    // The premise: plain's breaker tripped after ten failed reads, so plain's last reads left West US.
    assert.ok(p.lastRegions.every((region) => region !== "West US"), summary);
    // Additive: the hedged client's breaker decides as plain's does.
    assert.deepEqual(h.lastRegions, p.lastRegions, summary);
    assert.ok(h.westUs <= p.westUs + 1, summary);
  });

  // The same breaker, withHedging's defaults (500 ms, the default budget), one read at a time. West US fails slowly: a
  // 503 after 800 ms, or no answer within the 2 s the SDK gives a read with the breaker on. Plain pays for ten reads,
  // its breaker trips, and every later read is fast. Hedges win those reads (the budget's floor of one hedge a second
  // covers a reader this slow), so without SdkBreakerWatch the SDK never saw a failure and every later read paid the
  // threshold for as long as the region failed. Each drained primary's failure is told to the SDK's breaker, which moves
  // the partition after as many West US attempts as plain's (one more, sent while the last failure was still on its
  // way), while the hedges win the failing reads: hedged is faster than plain in all.
  for (const [label, rule] of [
    ["answering 503 after 800 ms", { status: 503, delayMs: 800 }],
    ["answering after 2500 ms (past the SDK's 2 s read timeout)", { delayMs: 2_500 }],
  ] as const) {
    it(`partition-level circuit breaker, the defaults, West US (preferred) ${label} to every read, 30 reads one after another: hedged's last 10 reads are no slower than plain's, its breaker trips as plain's, and the hedges win the failing reads meanwhile`, async function () {
      this.timeout(150_000);
      const { plain, hedged } = await pair({}, {}, { enablePartitionLevelCircuitBreaker: true });
      const run = async (side: Side): Promise<{ elapsed: number; lastTenMs: number; failures: number; westUs: number; lastWestUs: number; hedged: number }> => {
        fixture.emulator.region("West US").addFault(scoped(rule, side.tag, ["pointRead"]));
        const start = performance.now();
        let failures = 0;
        let lastTenFrom = 0;
        let lastTenMark = 0;
        for (let i = 0; i < 30; i++) {
          if (i === 20) {
            lastTenFrom = performance.now();
            lastTenMark = tagged(fixture.emulator, side.tag, ["pointRead"]).length;
          }
          const outcome = await outcomeOf(() => side.container.item(`item-${(i % 11) + 1}`, "pk").read());
          if (!(outcome.ok && outcome.value === (i % 11) + 1)) failures++;
        }
        const end = performance.now();
        await settledTag(fixture.emulator, side.tag, 8_000);
        const reads = tagged(fixture.emulator, side.tag, ["pointRead"]);
        return {
          elapsed: Math.round(end - start),
          lastTenMs: Math.round(end - lastTenFrom),
          failures,
          westUs: reads.filter((request) => request.region === "West US").length,
          lastWestUs: reads.slice(lastTenMark).filter((request) => request.region === "West US").length,
          hedged: side.diagnostics.filter((record) => record.hedgeFired).length,
        };
      };
      const p = await run(plain);
      const h = await run(hedged);
      const summary = `plain ${JSON.stringify(p)}; hedged ${JSON.stringify(h)}`;
      console.log(`      ${summary}`);
      assert.equal(p.failures, 0, summary);
      assert.equal(h.failures, 0, summary);
      assert.equal(p.lastWestUs, 0, `the premise: plain's breaker moved its last reads away from West US: ${summary}`);
      assert.ok(h.lastTenMs <= p.lastTenMs + 1_000, `hedged's last 10 reads slower than plain's: ${summary}`);
      assert.ok(h.lastWestUs <= p.lastWestUs + 1, `hedged still reading West US after plain's breaker tripped: ${summary}`);
      assert.ok(h.westUs <= p.westUs + 1, `hedged's breaker tripped later than plain's: ${summary}`);
      assert.ok(h.elapsed <= p.elapsed - 1_000, `the hedges did not win the failing reads while the breaker counted: ${summary}`);
    });
  }

  it("requestTimeout 300 ms, West US (preferred) 1 s slow: hedged ends as plain (the read served), and its West US arm does not run past the SDK's timeout much longer than the documented drain bound", async function () {
    const { plain, hedged } = await pair({}, {}, { requestTimeout: 300 });
    const run = async (side: Side): Promise<{ outcome: Outcome; elapsed: number; west: RecordedRequest[]; returnedAt: number }> => {
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 1_000 }, side.tag, ["pointRead"]));
      const start = performance.now();
      const outcome = await outcomeOf(() => side.container.item("item-3", "pk").read());
      const returnedAt = performance.now();
      await settledTag(fixture.emulator, side.tag, 6_000);
      return { outcome, elapsed: returnedAt - start, west: tagged(fixture.emulator, side.tag, ["pointRead"]).filter((request) => request.region === "West US"), returnedAt };
    };
    const p = await run(plain);
    const h = await run(hedged);
    const westEnd = (side: typeof p): string => side.west.map((request) => `${request.status ?? "cut"} ended ${((request.endedAt ?? Number.NaN) - side.returnedAt).toFixed(0)} ms after return`).join(", ");
    const summary = `plain ${JSON.stringify(p.outcome)} in ${p.elapsed.toFixed(0)} ms, West US ${westEnd(p)}; hedged ${JSON.stringify(h.outcome)} in ${h.elapsed.toFixed(0)} ms, West US ${westEnd(h)}`;
    console.log(`      ${summary}`);
    assert.deepEqual(h.outcome, p.outcome, summary);
    assert.ok(h.elapsed <= p.elapsed + 300, summary);
    for (const request of h.west) assert.ok(request.endedAt !== undefined && request.endedAt - h.returnedAt < 5_500, summary);
  });

  /**
   * Session reads: the emulator returns no session token, so the caller passes the one its write would have given, as
   * a service answer would. West US (preferred) is slow but current; North Europe lags behind the session: with the
   * token it answers 404/1002, as the service does; without one it serves the version before the write.
   */
  async function sessionRound(hedging: HedgingOptions): Promise<{ plain: unknown[]; hedged: unknown[]; hedgedArms: string[] }> {
    const { plain, hedged } = await pair({ crossRegion: { threshold: 100 }, ...hedging }, { consistencyLevel: "Session" }, { preferredLocations: ["West US", "North Europe", "East US"] });
    const values = { plain: [] as unknown[], hedged: [] as unknown[] };
    for (const [name, side] of [["plain", plain], ["hedged", hedged]] as const) {
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 600 }, side.tag, ["pointRead"]));
      for (let version = 1; version <= 3; version++) {
        const id = `session-${side.tag}`;
        await side.container.items.upsert({ id, pk: "pk", value: version });
        const lag = fixture.emulator.region("North Europe");
        const lagging = lag.addFault(scoped({ status: 404, substatus: 1002, ifHeader: "x-ms-session-token" }, side.tag, ["pointRead"]));
        const stale = lag.addFault(scoped({ status: 200, body: { id, pk: "pk", value: version - 1 } }, side.tag, ["pointRead"]));
        const { resource } = await side.container.item(id, "pk").read<{ value: number }>({ sessionToken: `0:-1#${100 + version}` });
        values[name].push(resource?.value);
        lagging.remove();
        stale.remove();
      }
    }
    await settledTag(fixture.emulator, hedged.tag, 6_000);
    const hedgedArms = hedged.diagnostics.filter((record) => record.operation === "pointRead").map((record) => record.arms.map((arm) => `${arm.region}:${arm.status}`).join("+"));
    return { ...values, hedgedArms };
  }

  it("Session consistency, write then read-your-write at once, the preferred region slow and the next one lagging: the hedged read returns the version just written, as plain does", async function () {
    const { plain, hedged, hedgedArms } = await sessionRound({});
    console.log(`      plain ${plain.join(",")}; hedged ${hedged.join(",")}; arms ${hedgedArms.join(" ")}`);
    assert.deepEqual(plain, [1, 2, 3]);
    assert.deepEqual(hedged, plain, hedgedArms.join(" "));
    assert.ok(hedgedArms.some((arms) => arms.includes("North Europe:404")), "a hedge met the lagging region");
  });

  // Found by a hostile review of 30754c7: a lagging region's 304 ("nothing newer") beat a primary still running, so a
  // change feed read until 304 stopped before changes plain returned.
  it("a change feed from the beginning, West US (preferred) 800 ms slow, East US answering 304 at once (a region behind): hedged returns plain's page, not the lagging 304", async function () {
    const { plain, hedged } = await pair({ crossRegion: { threshold: 100 } });
    const pages: Record<string, unknown[]> = {};
    for (const [name, side] of [["plain", plain], ["hedged", hedged]] as const) {
      const slow = fixture.emulator.region("West US").addFault(scoped({ delayMs: 800 }, side.tag, ["changeFeed"]));
      const behind = fixture.emulator.region("East US").addFault(scoped({ status: 304 }, side.tag, ["changeFeed"]));
      const page = await side.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }).readNext();
      pages[name] = [page.statusCode, page.result.length];
      slow.remove();
      behind.remove();
    }
    await settledTag(fixture.emulator, hedged.tag, 6_000);
    const arms = hedged.diagnostics.filter((record) => record.operation === "changeFeed").map((record) => record.arms.map((arm) => `${arm.region}:${arm.status ?? arm.outcome}`).join("+"));
    console.log(`      plain ${JSON.stringify(pages["plain"])}; hedged ${JSON.stringify(pages["hedged"])}; arms ${arms.join(" ")}`);
    assert.equal(pages["plain"]?.[0], 200);
    assert.deepEqual(pages["hedged"], pages["plain"]);
    assert.ok(arms.some((each) => each.includes("East US:304")), `premise: a hedge met the lagging region: ${arms.join(" ")}`);
  });

  it("DOCUMENTED OPT-IN (hedgesWithoutSessionToken: true): the same reads return the version before the write where plain returns the write", async function () {
    // Not a defect of the defaults: docs/options.md says a winning token-less hedge "may return data older than the
    // session's own writes". Kept to pin the trade-off: this is exactly what a user turning it on risks.
    const { plain, hedged, hedgedArms } = await sessionRound({ crossRegion: { threshold: 100, hedgesWithoutSessionToken: true } });
    console.log(`      plain ${plain.join(",")}; hedged ${hedged.join(",")}; arms ${hedgedArms.join(" ")}`);
    assert.deepEqual(plain, [1, 2, 3]);
    assert.deepEqual(hedged, [0, 1, 2], "the lagging region's older version won");
  });

  it("bulk (executeBulkOperations: creates, upserts, reads, a replace, a delete) and a transactional batch, the write region (East US) 600 ms slow: the same results as plain, and the same writes at the emulator", async function () {
    const { plain, hedged } = await pair({ crossRegion: { threshold: 100, budget: false } });
    const run = async (side: Side): Promise<{ results: unknown[]; batch: unknown; writes: number; forwarded: number; regions: string[] }> => {
      fixture.emulator.region("East US").addFault(scoped({ delayMs: 600 }, side.tag, ["batch"]));
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 600 }, side.tag, ["batch", "pointRead"]));
      const prefix = `bulk-${side.tag}`;
      await side.container.items.upsert({ id: `${prefix}-r`, pk: "pk", value: 0 });
      await side.container.items.upsert({ id: `${prefix}-d`, pk: "pk", value: 0 });
      const operations: OperationInput[] = [
        ...Array.from({ length: 4 }, (_, i): OperationInput => ({ operationType: "Create", partitionKey: "pk", resourceBody: { id: `${prefix}-c${i}`, pk: "pk", value: i } })),
        ...Array.from({ length: 2 }, (_, i): OperationInput => ({ operationType: "Upsert", partitionKey: "pk", resourceBody: { id: `${prefix}-u${i}`, pk: "pk", value: i } })),
        { operationType: "Read", partitionKey: "pk", id: "item-4" },
        { operationType: "Read", partitionKey: "pk", id: "no-such-item" },
        { operationType: "Replace", partitionKey: "pk", id: `${prefix}-r`, resourceBody: { id: `${prefix}-r`, pk: "pk", value: 9 } },
        { operationType: "Delete", partitionKey: "pk", id: `${prefix}-d` },
        { operationType: "Create", partitionKey: "pk", resourceBody: { id: "item-1", pk: "pk", value: 1 } },
      ];
      const results = await side.container.items.executeBulkOperations(operations);
      // The emulator's backend does not take a transactional batch (the SDK fails it before or after sending, plain as hedged): its outcome is compared as it is.
      const batch = await side.container.items
        .batch(
          [
            { operationType: "Create", resourceBody: { id: `${prefix}-b0`, pk: "pk", value: 0 } },
            { operationType: "Read", id: "item-2" },
          ],
          "pk",
        )
        .then(
          (response) => response.result?.map((result) => [result.statusCode, (result.resourceBody as { value?: unknown } | undefined)?.value]),
          (error: Error) => `${error.name}: ${error.message.split("\n")[0]}`,
        );
      await settledTag(fixture.emulator, side.tag, 6_000);
      const batches = tagged(fixture.emulator, side.tag, ["batch"]);
      return {
        results: results.map((result) => [result.response?.statusCode ?? result.error?.code, (result.response?.resourceBody as { value?: unknown } | undefined)?.value]),
        batch,
        writes: batches.length,
        forwarded: batches.filter((request) => request.forwarded).length,
        regions: regionsOf(batches),
      };
    };
    const p = await run(plain);
    const h = await run(hedged);
    const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
    console.log(`      ${summary}`);
    assert.deepEqual(h.results, p.results, summary);
    assert.deepEqual(h.batch, p.batch, summary);
    assert.equal(h.forwarded, p.forwarded, summary);
    assert.deepEqual(h.regions, p.regions, summary);
  });

  it("an abortSignal already aborted: hedged rejects as plain does and sends nothing more than plain", async function () {
    const { plain, hedged } = await pair({ crossRegion: { threshold: 50 } });
    const run = async (side: Side): Promise<{ outcome: Outcome; requests: number }> => {
      const controller = new AbortController();
      controller.abort(new Error("mine"));
      const outcome = await outcomeOf(() => side.container.item("item-2", "pk").read({ abortSignal: controller.signal }));
      await settledTag(fixture.emulator, side.tag, 3_000);
      return { outcome, requests: tagged(fixture.emulator, side.tag, ["pointRead"]).length };
    };
    const p = await run(plain);
    const h = await run(hedged);
    assert.deepEqual(h, p, `plain ${JSON.stringify(p)}; hedged ${JSON.stringify(h)}`);
  });

  for (const [label, abortAt, reason] of [
    ["aborted before the threshold (threshold 100 ms, abort at 50 ms)", 50, undefined],
    ["aborted as the hedge fires (threshold 100 ms, abort at 100 ms)", 100, undefined],
    ["aborted with a reason of the caller's just after the hedge fired", 160, "reason"],
    ["AbortSignal.timeout(180) as the signal", 180, "timeout"],
  ] as const) {
    it(`an abortSignal ${label}, West US 800 ms slow: the same error as plain, and no arm left in flight shortly after`, async function () {
      const { plain, hedged } = await pair({ crossRegion: { threshold: 100, budget: false } });
      const unhandled = catchUnhandled();
      try {
        const run = async (side: Side): Promise<{ outcomes: Outcome[]; stillInFlight: number }> => {
          fixture.emulator.region("West US").addFault(scoped({ delayMs: 800 }, side.tag, ["pointRead"]));
          fixture.emulator.region("East US").addFault(scoped({ delayMs: 800 }, side.tag, ["pointRead"]));
          const outcomes: Outcome[] = [];
          for (let i = 0; i < 3; i++) {
            let signal: AbortSignal;
            if (reason === "timeout") signal = AbortSignal.timeout(abortAt);
            else {
              const controller = new AbortController();
              setTimeout(() => controller.abort(reason === "reason" ? Object.assign(new Error("caller gave up"), { name: "CallerGaveUp" }) : undefined), abortAt);
              signal = controller.signal;
            }
            outcomes.push(await outcomeOf(() => side.container.item(`item-${i + 1}`, "pk").read({ abortSignal: signal })));
          }
          await sleep(300);
          const stillInFlight = tagged(fixture.emulator, side.tag, ["pointRead"]).filter((request) => request.endedAt === undefined).length;
          await settledTag(fixture.emulator, side.tag, 6_000);
          return { outcomes, stillInFlight };
        };
        const p = await run(plain);
        const h = await run(hedged);
        const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
        console.log(`      ${summary}`);
        assert.deepEqual(h.outcomes, p.outcomes, summary);
        assert.equal(h.stillInFlight, 0, summary);
        await sleep(50);
        assert.deepEqual(unhandled.seen, []);
      } finally {
        unhandled.stop();
      }
    });
  }

  // Eighth hostile review: once core's transport has a response's headers, an abort meets it reading the body, and it
  // reports that (RestError PARSE_ERROR), not an AbortError. Hedged answered an AbortError of its own; and when the cut
  // was the SDK's requestTimeout, the SDK turned that AbortError into a TimeoutError and retried in every region (plain
  // 302-308 ms and 1 request a read, hedged 1215-1235 ms and 5 to 6). The caller now gets what the primary ended with.
  for (const [label, threshold, abortAt] of [
    ["before the threshold (threshold 500 ms, abort at 150 ms)", 500, 150],
    ["with a hedge in flight (threshold 100 ms, abort at 200 ms)", 100, 200],
  ] as const) {
    it(`an abortSignal while West US's body is read (its body 400 ms late), ${label}: the error plain gives, as soon`, async function () {
      const { plain, hedged } = await pair({ crossRegion: { threshold, budget: false } });
      const unhandled = catchUnhandled();
      try {
        const run = async (side: Side): Promise<{ outcomes: Outcome[]; ms: number[]; stillInFlight: number }> => {
          fixture.emulator.region("West US").addFault(scoped({ bodyDelayMs: 400 }, side.tag, ["pointRead"]));
          fixture.emulator.region("East US").addFault(scoped({ delayMs: 800 }, side.tag, ["pointRead"]));
          const outcomes: Outcome[] = [];
          const ms: number[] = [];
          for (let i = 0; i < 2; i++) {
            const began = performance.now();
            outcomes.push(await outcomeOf(() => side.container.item(`item-${i + 1}`, "pk").read({ abortSignal: AbortSignal.timeout(abortAt) })));
            ms.push(Math.round(performance.now() - began));
          }
          await sleep(100);
          const stillInFlight = tagged(fixture.emulator, side.tag, ["pointRead"]).filter((request) => request.endedAt === undefined).length;
          await settledTag(fixture.emulator, side.tag, 6_000);
          return { outcomes, ms, stillInFlight };
        };
        const p = await run(plain);
        const h = await run(hedged);
        const summary = `plain ${JSON.stringify(p)}\n      hedged ${JSON.stringify(h)}`;
        console.log(`      ${summary}`);
        assert.deepEqual(p.outcomes.map((outcome) => !outcome.ok && outcome.code), ["PARSE_ERROR", "PARSE_ERROR"], summary);
        assert.deepEqual(h.outcomes, p.outcomes, summary);
        for (const [i, ms] of h.ms.entries()) assert.ok(ms <= p.ms[i]! + 150, `read ${i}: ${summary}`);
        assert.equal(h.stillInFlight, 0, summary);
        await sleep(50);
        assert.deepEqual(unhandled.seen, []);
      } finally {
        unhandled.stop();
      }
    });
  }

  it("the SDK's requestTimeout (300 ms) cutting West US's body (1 s late), the other regions 800 ms slow, threshold 100: plain's error, in plain's time, with no retry of the SDK's more than plain's", async function () {
    const { plain, hedged } = await pair({ crossRegion: { threshold: 100, budget: false } }, {}, { requestTimeout: 300 });
    const run = async (side: Side): Promise<{ outcome: Outcome; ms: number; westUs: number }> => {
      fixture.emulator.region("West US").addFault(scoped({ bodyDelayMs: 1_000 }, side.tag, ["pointRead"]));
      for (const region of ["East US", "North Europe"]) fixture.emulator.region(region).addFault(scoped({ delayMs: 800 }, side.tag, ["pointRead"]));
      const since = tagged(fixture.emulator, side.tag, ["pointRead"]).length;
      const began = performance.now();
      const outcome = await outcomeOf(() => side.container.item("item-3", "pk").read());
      const ms = Math.round(performance.now() - began);
      await settledTag(fixture.emulator, side.tag, 6_000);
      const requests = tagged(fixture.emulator, side.tag, ["pointRead"]).slice(since);
      return { outcome, ms, westUs: requests.filter((request) => request.region === "West US").length };
    };
    const p = await run(plain);
    const h = await run(hedged);
    const summary = `plain ${JSON.stringify(p)}, hedged ${JSON.stringify(h)}`;
    console.log(`      ${summary}`);
    assert.equal(!p.outcome.ok && p.outcome.code, "PARSE_ERROR", summary);
    assert.deepEqual(h.outcome, p.outcome, summary);
    assert.equal(h.westUs, p.westUs, `the SDK sent its attempts as plain's: ${summary}`);
    assert.ok(h.ms <= p.ms + 150, summary);
  });

  it("client.dispose() while a read is in flight, before and after its hedge fired: the read ends as plain's does, with no unhandled rejection", async function () {
    const unhandled = catchUnhandled();
    try {
      const outcomes: Record<string, Outcome[]> = { plain: [], hedged: [] };
      for (const disposeAt of [40, 250]) {
        for (const hedgedSide of [false, true]) {
          const tag = newTag(hedgedSide ? "dispose-hedged" : "dispose-plain");
          const options = optionsOf(tag);
          const client = new CosmosClient(hedgedSide ? withHedging(options, { crossRegion: { threshold: 100 } }) : options);
          const container = client.database("db").container("items");
          await container.item("item-0", "pk").read();
          fixture.emulator.region("West US").addFault(scoped({ delayMs: 600 }, tag, ["pointRead"]));
          const read = outcomeOf(() => container.item("item-6", "pk").read());
          await sleep(disposeAt);
          client.dispose();
          outcomes[hedgedSide ? "hedged" : "plain"]!.push(await read);
          await settledTag(fixture.emulator, tag, 6_000);
        }
      }
      await sleep(50);
      assert.deepEqual(outcomes["hedged"], outcomes["plain"]);
      assert.deepEqual(unhandled.seen, []);
    } finally {
      unhandled.stop();
    }
  });
});
