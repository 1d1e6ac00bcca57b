import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions, PatchOperation } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator, FaultRule } from "../emulator/index.js";
import { seedContainer } from "../support/cosmos.js";
import { captureAzureLogs } from "../support/logCapture.js";
import {
  clientOptionsOf,
  databaseId,
  emulatorKindOf,
  explain,
  judge,
  latencyMarginMs,
  newTag,
  preferredRegion,
  readsContainerId,
  regionNames,
  requestsTagged,
  runCase,
  scopedRule,
  seededItems,
  settledTagged,
  startAccount,
  writesContainerId,
} from "./harness.js";
import type { AccountEnv, AccountKind, CaseResult, DifferentialCase, OperationName } from "./harness.js";

const differentialCase = (account: AccountKind, operation: OperationName, fault: DifferentialCase["fault"], betweenPages = false): DifferentialCase => ({
  account,
  operation,
  fault,
  circuitBreaker: false,
  betweenPages,
  busy: false,
});

/**
 * core-rest-pipeline's default transport, for plain HTTP: given an `agent` of
 * its own, `@azure/cosmos` no longer marks an `http:` request as allowed
 * (`allowInsecureConnection`), and the emulator is plain HTTP.
 */
function loopbackTransport(): HttpClient {
  const transport = createDefaultHttpClient();
  return {
    sendRequest(request) {
      request.allowInsecureConnection = true;
      return transport.sendRequest(request);
    },
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Every case's failure, or none: one test per row, with what went wrong in each of its variants. */
function assertAllNeverWorse(results: ReadonlyArray<{ label: string; result: CaseResult }>): void {
  const failures = results
    .map(({ label, result }) => ({ label, result, verdict: judge(result) }))
    .filter(({ verdict }) => verdict.problems.length > 0)
    .map(({ label, result, verdict }) => `[${label}] ${explain(result, verdict)}`);
  if (failures.length > 0) assert.fail(failures.join("\n\n"));
}

/**
 * One test per row of issue 22's table, each through the real
 * `@azure/cosmos` `CosmosClient` on the multi-region emulator, compared with
 * a plain client where the row has a plain column.
 */
describe("never worse than plain @azure/cosmos: issue 22, row by row", function () {
  this.timeout(60_000);
  const envs = new Map<AccountKind, AccountEnv>();
  const env = (kind: AccountKind): AccountEnv => envs.get(emulatorKindOf(kind))!;

  before(async function () {
    for (const [kind, started] of await Promise.all((["singleWrite", "multiWrite"] as const).map(async (kind) => [kind, await startAccount(kind)] as const))) {
      envs.set(kind, started);
    }
  });

  after(async function () {
    await Promise.all([...envs.values()].map((started) => started.close()));
  });

  it("a query, readAll and change feed whose later page's region starts answering 503 between pages complete as plain does (also with crossRegion: false, metadata: false)", async function () {
    const variants: Array<{ operation: OperationName; hedging?: HedgingOptions }> = [
      { operation: "queryCrossPartition" },
      { operation: "readAll" },
      { operation: "changeFeed" },
      { operation: "queryCrossPartition", hedging: { crossRegion: false, metadata: false } },
    ];
    const results = await Promise.all(
      variants.map(async ({ operation, hedging }) => ({
        label: `${operation}${hedging !== undefined ? ", crossRegion: false, metadata: false" : ""}`,
        result: await runCase(env("singleWrite"), differentialCase("singleWrite", operation, "503", true), hedging !== undefined ? { hedging } : {}),
      })),
    );
    // The premise: plain completes, its SDK retrying the page in the next region.
    for (const { label, result } of results) assert.ok(result.plain.outcomes.every((outcome) => outcome.ok), `${label}: plain completes`);
    assertAllNeverWorse(results);
  });

  it("the same with the page's region hanging and requestTimeout 1000: the feed completes about as fast as plain's", async function () {
    const results = await Promise.all(
      (["queryCrossPartition", "readAll", "changeFeed"] as const).map(async (operation) => ({
        label: operation,
        // Plain needs about a second for the hung page; 8 s is the caller giving up on a feed that does not end.
        result: await runCase(env("singleWrite"), differentialCase("singleWrite", operation, "hung", true), { deadlineMs: 8_000 }),
      })),
    );
    for (const { label, result } of results) assert.ok(result.plain.outcomes.every((outcome) => outcome.ok), `${label}: plain completes`);
    assertAllNeverWorse(results);
  });

  describe("one hedging client shared by the CosmosClients of two accounts that both have db/c", function () {
    let accounts: Emulator[] = [];
    const keys = ["account A key", "account B key"].map((text) => Buffer.from(text).toString("base64"));

    before(async function () {
      accounts = await Promise.all(keys.map((key) => startEmulator({ key, regions: regionNames.map((name) => ({ name })) })));
      for (const [index, emulator] of accounts.entries()) {
        const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false } });
        // The same ids and partition keys in both, so that their continuation tokens and etags are the same strings.
        await seedContainer(seeder, { database: "db", container: "c", items: seededItems.map((item) => ({ ...item, owner: index === 0 ? "A" : "B" })) });
        seeder.dispose();
      }
    });

    after(async function () {
      await Promise.all(accounts.map((emulator) => emulator.close()));
    });

    it("account B's paged query and change feed get exactly B's rows, and no request of B reaches A's endpoints", async function () {
      const [a, b] = accounts as [Emulator, Emulator];
      const [tagA, tagB] = [newTag("accountA"), newTag("accountB")];
      const optionsA = withHedging({
        endpoint: a.endpoint,
        key: a.key,
        userAgentSuffix: tagA,
        connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...regionNames] },
      } satisfies CosmosClientOptions);
      const clientA = new CosmosClient(optionsA);
      // The one-line mistake: B's client made from A's options, hedging client and all.
      // A fresh defaultHeaders: @azure/cosmos writes each client's user agent (and so its tag) into that object of its options.
      const clientB = new CosmosClient({ ...optionsA, endpoint: b.endpoint, key: b.key, userAgentSuffix: tagB, defaultHeaders: {} });
      try {
        const containerA = clientA.database("db").container("c");
        const containerB = clientB.database("db").container("c");
        // A's first pages are won by hedges in West US, so that A's feeds are pinned there.
        a.region(preferredRegion).addFault(scopedRule({ delayMs: 3_000 }, tagA, ["query", "queryPlan", "changeFeed"]));
        const rowsA = await containerA.items.query<{ id: string; owner: string }>("SELECT * FROM c", { maxItemCount: 2 }).fetchAll();
        assert.deepEqual(new Set(rowsA.resources.map((row) => row.owner)), new Set(["A"]));
        const feedA = containerA.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
        await feedA.readNext();
        await feedA.readNext();

        // B's outcome is read after the wire: an error it meets (a 401 for a request signed for the wrong account) is a symptom, not the test's end.
        const outcomeB = await (async () => {
          try {
            const rows = await containerB.items.query<{ id: string; owner: string }>("SELECT * FROM c", { maxItemCount: 2 }).fetchAll();
            const feedB = containerB.items.getChangeFeedIterator<{ owner: string }>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
            const changes = [...(await feedB.readNext()).result];
            const poll = await feedB.readNext();
            return { rows: rows.resources, changes, pollStatus: poll.statusCode };
          } catch (error) {
            return { error: `${(error as { code?: unknown }).code}: ${(error as Error).message}` };
          }
        })();
        const atA = await settledTagged(a, tagB);
        const atB = await settledTagged(b, tagB);
        assert.deepEqual(
          atA.map((request) => `${request.region} ${request.kind} ${request.authorization}`),
          [],
          `requests of account B's client that reached account A's endpoints (B's own saw: ${atB.map((request) => `${request.region} ${request.kind} ${request.authorization}`).join("; ")})`,
        );
        assert.ok(!("error" in outcomeB), `account B's query and change feed failed: ${"error" in outcomeB ? outcomeB.error : ""}; B saw ${atB.map((request) => `${request.region} ${request.kind} ${request.status} ${request.authorization}`).join("; ")}`);
        assert.deepEqual(outcomeB.rows.map((row) => `${row.id} ${row.owner}`).sort(), seededItems.map((item) => `${item.id} B`).sort(), "B's query rows");
        assert.ok(outcomeB.changes.length > 0 && outcomeB.changes.every((row) => row.owner === "B"), `B's change feed rows: ${JSON.stringify(outcomeB.changes.map((row) => row.owner))}`);
        assert.equal(outcomeB.pollStatus, 304, "B's change feed, read to its end, has nothing more");
      } finally {
        clientA.dispose();
        clientB.dispose();
      }
    });
  });

  it("multi-write account, enableMultiWriteRegionHedge, a slow write region: executeBulkOperations of 3 creates answers 201, 201, 201 as plain does", async function () {
    // The region applies the writes and acknowledges them 3 s late, so that a hedge meets the documents its own primary created.
    const result = await runCase(env("multiWrite"), differentialCase("multiWriteHedged", "bulk", "slow"), { rule: { responseDelayMs: 3_000 } });
    assert.deepEqual(result.plain.outcomes.map((outcome) => (outcome.ok ? outcome.value : outcome.errorClass)), [[201, 201, 201], [201, 201, 201], [201, 201, 201]], "the premise: plain");
    assert.deepEqual(
      result.hedged.outcomes.map((outcome) => (outcome.ok ? outcome.value : outcome.errorClass)),
      result.plain.outcomes.map((outcome) => (outcome.ok ? outcome.value : outcome.errorClass)),
      explain(result, judge(result)),
    );
    assert.deepEqual(result.hedged.documents, result.plain.documents);
  });

  it("same account: one patch with incr is applied once (v = 1), as plain applies it", async function () {
    const { emulator, setup } = env("multiWrite");
    const increment: PatchOperation[] = [{ op: "incr", path: "/v", value: 1 }];
    const run = async (hedging: HedgingOptions | false): Promise<{ answered: unknown; stored: unknown; patches: string[] }> => {
      const tag = newTag(hedging === false ? "incr-plain" : "incr-hedged");
      const id = `${tag}-counter`;
      await setup.items.create({ id, pk: "w", v: 0 });
      const client = new CosmosClient(clientOptionsOf(emulator, tag, { requestTimeout: 10_000, circuitBreaker: false, hedging }));
      try {
        const container = client.database(databaseId).container(writesContainerId);
        await container.item(id, "w").read();
        const since = performance.now();
        // Applied at once, acknowledged 3 s late: a hedge sent meanwhile increments again.
        emulator.region(preferredRegion).addFault(scopedRule({ responseDelayMs: 3_000 }, tag, ["patch"]));
        const { resource } = await container.item(id, "w").patch(increment);
        const patches = (await settledTagged(emulator, tag, since)).filter((request) => request.kind === "patch");
        const { resource: stored } = await setup.item(id, "w").read();
        return { answered: resource?.v, stored: stored?.v, patches: patches.map((request) => `${request.region} ${request.status ?? "cut"} forwarded=${request.forwarded}`) };
      } finally {
        client.dispose();
      }
    };
    const [plain, hedged] = await Promise.all([run(false), run({ crossRegion: { enableMultiWriteRegionHedge: true } })]);
    assert.deepEqual([plain.answered, plain.stored], [1, 1], "the premise: plain increments once");
    assert.deepEqual([hedged.answered, hedged.stored], [1, 1], `hedged: answered v = ${hedged.answered}, stored v = ${hedged.stored}; the service saw ${hedged.patches.join("; ")}`);
  });

  it("an agent with maxSockets 1, every 8th preferred-region read 3 s late: 24 reads keep plain's p50 (also with drainLosers: false), within 2x its requests", async function () {
    const { emulator } = env("singleWrite");
    const run = async (label: string, hedging: HedgingOptions | false): Promise<{ label: string; p50: number; waited: number; requests: number }> => {
      const tag = newTag(label);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const client = new CosmosClient(clientOptionsOf(emulator, tag, { requestTimeout: 10_000, circuitBreaker: false, hedging, extra: { agent, httpClient: loopbackTransport() } }));
      try {
        const container = client.database(databaseId).container(readsContainerId);
        await container.item("r0", "p0").read();
        const since = performance.now();
        emulator.region(preferredRegion).addFault(scopedRule({ delayMs: 3_000, every: 8 }, tag, ["pointRead"]));
        const latencies: number[] = [];
        for (let i = 0; i < 24; i++) {
          const item = seededItems[i % seededItems.length]!;
          const start = performance.now();
          const { resource } = await container.item(item.id, item.pk).read();
          latencies.push(performance.now() - start);
          assert.equal(resource?.v, item.v);
        }
        return {
          label,
          p50: median(latencies),
          // A read that took the threshold or more: a straggler itself, or one queued behind a socket a drained loser holds.
          waited: latencies.filter((ms) => ms >= 400).length,
          requests: (await settledTagged(emulator, tag, since)).filter((request) => request.kind === "pointRead").length,
        };
      } finally {
        client.dispose();
        agent.destroy();
      }
    };
    const [plain, hedged, noDrain] = await Promise.all([run("sockets-plain", false), run("sockets-hedged", {}), run("sockets-nodrain", { crossRegion: { drainLosers: false } })]);
    const summary = [plain, hedged, noDrain]
      .map((entry) => `${entry.label}: p50 ${Math.round(entry.p50)} ms, ${entry.waited} reads of 400 ms or more, ${entry.requests} requests`)
      .join("; ");
    console.log(`      ${summary}`);
    assert.ok(hedged.p50 <= plain.p50 + latencyMarginMs && noDrain.p50 <= plain.p50 + latencyMarginMs, summary);
    // Plain waits for its stragglers only; a hedged read may wait for its own straggler's threshold, never for another read's loser.
    assert.ok(hedged.waited <= plain.waited && noDrain.waited <= plain.waited, summary);
    assert.ok(hedged.requests <= 2 * plain.requests, summary);
  });

  it("one hedged read, then client.dispose() in a short script: the process exits as promptly as with drainLosers: false", async function () {
    const { emulator } = env("singleWrite");
    const script = fileURLToPath(new URL("./fixtures/hedgedReadThenDispose.ts", import.meta.url));
    const exitLag = (mode: "hedged" | "noDrain"): Promise<number> => {
      const tag = newTag(`script-${mode}`);
      // A 10 s straggler: the hedge answers the read, the drained primary would outlive the script.
      emulator.region(preferredRegion).addFault(scopedRule({ delayMs: 10_000 }, tag, ["pointRead"]));
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", script], {
          env: { ...process.env, ENDPOINT: emulator.endpoint, KEY: emulator.key, TAG: tag, MODE: mode },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let disposedAt: number | undefined;
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (disposedAt === undefined && output.includes("disposed")) disposedAt = performance.now();
        });
        child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString()));
        const kill = setTimeout(() => child.kill("SIGKILL"), 30_000);
        child.on("error", reject);
        child.on("exit", (code) => {
          clearTimeout(kill);
          if (code !== 0 || disposedAt === undefined) reject(new Error(`the script (${mode}) exited with ${code}: ${output}`));
          else resolve(performance.now() - disposedAt);
        });
      });
    };
    const [hedged, noDrain] = await Promise.all([exitLag("hedged"), exitLag("noDrain")]);
    assert.ok(hedged <= noDrain + 1_000, `the process lived ${Math.round(hedged)} ms after dispose(), ${Math.round(noDrain)} ms with drainLosers: false`);
  });

  it("a quiet client (3 reads) in a total outage (every region 503, every region timing out, 429 everywhere) sends at most 2x plain's requests per read", async function () {
    this.timeout(90_000);
    const { emulator } = env("singleWrite");
    const outages: Array<{ label: string; rule: FaultRule; requestTimeout: number; readDeadlineMs?: number }> = [
      { label: "every region 503", rule: { status: 503 }, requestTimeout: 10_000 },
      // Plain cycles through the regions for as long as it is let: each read is the caller's 4.5 s, half a timeout from any attempt.
      { label: "every region timing out", rule: { delayMs: 60_000 }, requestTimeout: 1_000, readDeadlineMs: 4_500 },
      { label: "429 everywhere", rule: { status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "100" } }, requestTimeout: 10_000 },
    ];
    const perRead = async (outage: (typeof outages)[number], hedging: HedgingOptions | false): Promise<number> => {
      const tag = newTag(`outage-${hedging === false ? "plain" : "hedged"}`);
      const client = new CosmosClient(clientOptionsOf(emulator, tag, { requestTimeout: outage.requestTimeout, circuitBreaker: false, hedging }));
      try {
        const container = client.database(databaseId).container(readsContainerId);
        await container.item("r0", "p0").read();
        const since = performance.now();
        for (const region of emulator.regions) region.addFault(scopedRule(outage.rule, tag, ["pointRead"]));
        for (let i = 1; i <= 3; i++) {
          const item = seededItems[i]!;
          const abortSignal = outage.readDeadlineMs !== undefined ? AbortSignal.timeout(outage.readDeadlineMs) : undefined;
          await assert.rejects(container.item(item.id, item.pk).read(abortSignal !== undefined ? { abortSignal } : {}));
        }
        return (await settledTagged(emulator, tag, since)).filter((request) => request.kind === "pointRead").length / 3;
      } finally {
        client.dispose();
      }
    };
    const measured = await Promise.all(outages.map(async (outage) => ({ label: outage.label, plain: await perRead(outage, false), hedged: await perRead(outage, {}) })));
    const summary = measured.map((entry) => `${entry.label}: plain ${entry.plain.toFixed(2)}, hedged ${entry.hedged.toFixed(2)} per read`).join("; ");
    // The figures, for the record of a run: the bound is what is asserted.
    console.log(`      requests per read: ${summary}`);
    for (const entry of measured) assert.ok(entry.hedged <= 2 * entry.plain, summary);
  });

  it("enablePartitionLevelCircuitBreaker with requestTimeout 5000 and threshold 2500 is refused at construction, naming the threshold and the 2000 ms per-attempt timeout the SDK applies", async function () {
    const { emulator } = env("singleWrite");
    const tag = newTag("breaker");
    const connectionPolicy = { enableBackgroundEndpointRefreshing: false, preferredLocations: [...regionNames], requestTimeout: 5_000, enablePartitionLevelCircuitBreaker: true };
    // The premise, through plain: with the breaker on, the SDK gives a point read 2000 ms before trying the next region, not 5000.
    const plain = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key, userAgentSuffix: tag, connectionPolicy });
    try {
      const container = plain.database(databaseId).container(readsContainerId);
      await container.item("r0", "p0").read();
      const since = performance.now();
      emulator.region(preferredRegion).addFault(scopedRule({ delayMs: 4_000 }, tag, ["pointRead"]));
      const { resource } = await container.item("r1", "p1").read();
      assert.equal(resource?.v, 1);
      const reads = (await settledTagged(emulator, tag, since)).filter((request) => request.kind === "pointRead");
      const retry = reads.find((request) => request.region !== preferredRegion);
      // Up to 4.5 s: a pause of the loaded machine delays the SDK's 2 s timer, and a retry at the 5 s requestTimeout still fails.
      assert.ok(retry !== undefined && retry.at - since >= 1_500 && retry.at - since < 4_500, `the SDK's retry left at ${retry === undefined ? "never" : Math.round(retry.at - since)} ms`);
    } finally {
      plain.dispose();
    }
    let created: CosmosClient | undefined;
    try {
      assert.throws(
        () => {
          created = new CosmosClient(withHedging({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy } satisfies CosmosClientOptions, { crossRegion: { threshold: 2_500 } }));
        },
        (error: Error) => /2500/.test(error.message) && /2000/.test(error.message) && /threshold/i.test(error.message),
      );
    } finally {
      created?.dispose();
    }
  });

  it("enablePartitionLevelCircuitBreaker, the preferred region +2500 ms for 7 s (beyond the SDK's 2 s per-attempt timeout), 20 reads a second, the defaults: the breaker trips as plain's does, and later reads leave the preferred region as plain's do", async function () {
    this.timeout(60_000);
    const { emulator } = env("singleWrite");
    const faultMs = 7_000;
    // Plain's breaker trips after ten reads time out, about 2.5 s in; the defaults' hedges (at 500 ms, within the budget) win
    // some reads before their timeout, which delays the hedged client's trip a little: 5 s leaves room for both.
    const lateFromMs = 5_000;
    const run = async (hedging: HedgingOptions | false): Promise<{ late: number; reads: number }> => {
      const tag = newTag(`breaker-brown-out-${hedging === false ? "plain" : "hedged"}`);
      const client = new CosmosClient(clientOptionsOf(emulator, tag, { requestTimeout: 10_000, circuitBreaker: true, hedging }));
      try {
        const container = client.database(databaseId).container(readsContainerId);
        for (const item of seededItems) await container.item(item.id, item.pk).read();
        const since = performance.now();
        emulator.region(preferredRegion).addFault(scopedRule({ delayMs: 2_500 }, tag, ["pointRead"]));
        const reads: Array<Promise<unknown>> = [];
        for (let i = 0; performance.now() - since < faultMs; i++) {
          const item = seededItems[i % seededItems.length]!;
          reads.push(container.item(item.id, item.pk).read().then(({ resource }) => assert.equal(resource?.v, item.v)));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await Promise.all(reads);
        const late = (await settledTagged(emulator, tag, since)).filter(
          (request) => request.kind === "pointRead" && request.region === preferredRegion && request.at - since >= lateFromMs && request.at - since < faultMs,
        );
        return { late: late.length, reads: reads.length };
      } finally {
        client.dispose();
      }
    };
    const [plain, hedged] = await Promise.all([run(false), run({})]);
    const summary = `preferred-region point reads from ${lateFromMs} ms to ${faultMs} ms: plain ${plain.late} of ${plain.reads} reads, hedged ${hedged.late} of ${hedged.reads}`;
    console.log(`      ${summary}`);
    // The premise: plain's breaker tripped, so its later reads went elsewhere.
    assert.ok(plain.late <= 3, summary);
    assert.ok(hedged.late <= plain.late + 3, summary);
  });

  it("an option given through a getter: the \"Hedging client created\" info line reports the threshold in force", async function () {
    const { emulator } = env("singleWrite");
    const tag = newTag("getter");
    let reads = 0;
    // A different value at each read: what the line says must be what the client uses, however often either reads it.
    const crossRegion = {
      thresholdStep: 5_000,
      get threshold(): number {
        reads++;
        return reads === 1 ? 300 : 1_700 + 100 * reads;
      },
    };
    const logs = captureAzureLogs("info");
    let client: CosmosClient | undefined;
    const records: Array<{ thresholdMs?: number | undefined }> = [];
    try {
      client = new CosmosClient(
        clientOptionsOf(emulator, tag, { requestTimeout: 10_000, circuitBreaker: false, hedging: { crossRegion, onDiagnostics: (record) => void records.push(record) } }),
      );
      const line = logs.packageLines().find((entry) => entry.includes("Hedging client created"));
      assert.ok(line !== undefined, logs.packageLines().join("\n"));
      const container = client.database(databaseId).container(readsContainerId);
      await container.item("r0", "p0").read();
      emulator.region(preferredRegion).addFault(scopedRule({ delayMs: 3_000 }, tag, ["pointRead"]));
      await container.item("r1", "p1").read();
      const inForce = records.filter((record) => record.thresholdMs !== undefined).at(-1)?.thresholdMs;
      assert.ok(inForce !== undefined, "the read's record names its threshold");
      assert.ok(line.includes(`after ${inForce} ms`), `the threshold in force is ${inForce} ms; the line says: ${line}`);
    } finally {
      logs.restore();
      client?.dispose();
    }
    await settledTagged(emulator, tag);
    assert.ok(requestsTagged(emulator, tag).length > 0);
  });
});
