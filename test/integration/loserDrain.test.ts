import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { CosmosClient } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { createTestClient } from "../support/cosmos.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";

const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
const preferredLocations = ["West US", "East US", "North Europe"];
/** A straggler this late is one no drain waits for (the drain's bound is 5 s). */
const straggler = 10_000;

/** Runs the drain child script; resolves with how long its process lived after `client.dispose()`. */
function runChild(env: Record<string, unknown>): Promise<{ afterDisposeMs: number; line: { status: number; terminalState: string } }> {
  const script = fileURLToPath(new URL("../support/drainChild.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      env: { ...process.env, DRAIN_CHILD: JSON.stringify(env) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("error", reject);
    let exitedAt = Number.NaN;
    child.on("exit", () => (exitedAt = Date.now()));
    // Only once its pipes are closed is the child's last line (its exit time) read.
    child.on("close", (code) => {
      if (code !== 0) {
        reject(new Error(`the child exited with ${code}: ${err}`));
        return;
      }
      const lines = out
        .trim()
        .split("\n")
        .map((text) => JSON.parse(text) as { disposedAt?: number; exitAt?: number; status: number; terminalState: string });
      const line = lines.find((each) => each.disposedAt !== undefined) ?? { disposedAt: Number.NaN, status: 0, terminalState: "" };
      // The child's own exit time when it told it (see drainChild.ts): a stall of this process is not the child's life.
      const exitAt = lines.find((each) => each.exitAt !== undefined)?.exitAt ?? exitedAt;
      resolve({ afterDisposeMs: exitAt - line.disposedAt!, line: { status: line.status, terminalState: line.terminalState } });
    });
  });
}

describe("a drained loser never costs a later request, nor keeps a process alive (issue 22 item 4)", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations });

  /** The drain child's settings for this fixture's account, with `extra` (see test/support/drainChild.ts). */
  const childOn = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    endpoint: fixture.emulator.endpoint,
    key: fixture.emulator.key,
    preferredLocations,
    drainLosers: true,
    database: fixture.database,
    container: fixture.containerId,
    ...extra,
  });

  it("a script that made one hedged read exits as promptly after client.dispose() as with drainLosers: false, a 10 s straggler in the preferred region notwithstanding", async function () {
    const settings = (drainLosers: boolean) => childOn({ drainLosers });
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: straggler });
    const drained = await runChild(settings(true));
    const aborted = await runChild(settings(false));
    for (const run of [drained, aborted]) assert.deepEqual([run.line.status, run.line.terminalState], [200, "hedgeWon"]);
    assert.ok(drained.afterDisposeMs < 2000, `with the loser drained the process lived ${drained.afterDisposeMs} ms after dispose (drainLosers: false: ${aborted.afterDisposeMs} ms)`);
    assert.ok(aborted.afterDisposeMs < 2000, `drainLosers: false lived ${aborted.afterDisposeMs} ms after dispose`);
  });

  it("the same after a paged query whose every page's primary drained: pages signed in the same second are told apart by their tokens", async function () {
    fixture.emulator.region("West US").addFault({ operations: ["query"], delayMs: straggler });
    const run = await runChild(childOn({ operation: "query" }));
    fixture.emulator.clearFaults();
    assert.equal(run.line.status, 200);
    assert.ok(run.afterDisposeMs < 2000, `the process lived ${run.afterDisposeMs} ms after dispose`);
  });

  // Found by a hostile review (helper-41): a query's plan and its first page, sent at once as the same POST signed in the
  // same second, were not told apart, so neither drained hedge's socket was released: the script lived 5 s (the drain's
  // bound) after dispose, where plain's exits at once.
  it("two queries at once whose hedges lose and never answer (the preferred region 300 ms late, the others hung): the script exits promptly after dispose", async function () {
    fixture.emulator.region("West US").addFault({ operations: ["query", "queryPlan"], delayMs: 300 });
    for (const region of ["East US", "North Europe"]) fixture.emulator.region(region).addFault({ operations: ["query", "queryPlan"], delayMs: straggler });
    const run = await runChild(childOn({ operation: "twoQueries" }));
    fixture.emulator.clearFaults();
    assert.equal(run.line.status, 200);
    const hedges = fixture.emulator.requests.filter((request) => request.region !== "West US" && (request.kind === "query" || request.kind === "queryPlan"));
    assert.ok(hedges.length >= 4, `premise: the plans and first pages were hedged: ${hedges.length} hedges`);
    assert.ok(run.afterDisposeMs < 2000, `the process lived ${run.afterDisposeMs} ms after dispose (the drain's bound: 5000 ms)`);
  });

  // Found by a hostile review (helper-43): two identical requests at once whose hedges lose and hang (a hot item, two
  // change feeds read from the start): the hedges' sockets could not be told apart, so neither was let go of, and the
  // script lived the drain's 5 s after dispose, where plain, which never sent them, exits at once.
  for (const [operation, kinds] of [
    ["hotItem", ["pointRead"]],
    ["twoChangeFeeds", ["changeFeed"]],
  ] as const) {
    it(`${operation}: identical requests at once whose hedges lose and never answer: the script exits promptly after dispose`, async function () {
      fixture.emulator.region("West US").addFault({ operations: [...kinds], delayMs: 300 });
      for (const region of ["East US", "North Europe"]) fixture.emulator.region(region).addFault({ operations: [...kinds], delayMs: straggler });
      const since = fixture.emulator.requests.length;
      const run = await runChild(childOn({ operation }));
      fixture.emulator.clearFaults();
      assert.equal(run.line.status, 200);
      const hedges = fixture.emulator.requests.slice(since).filter((request) => request.region !== "West US" && (kinds as readonly string[]).includes(request.kind));
      assert.ok(hedges.length >= 2, `premise: both requests were hedged: ${hedges.length} hedges`);
      assert.ok(run.afterDisposeMs < 2000, `the process lived ${run.afterDisposeMs} ms after dispose (the drain's bound: 5000 ms)`);
    });
  }

  // Found by a hostile review (helper-36): two identical reads at once, both primaries drained losers whose sockets cannot
  // be told apart. Plain @azure/cosmos cuts each at its requestTimeout; once the hedges had answered the SDK no longer
  // did, nothing bounded the drains, and the process lived until the region answered (30 s here, or never).
  it("a hot item (two identical reads at once) whose preferred region does not answer: the script exits within the drain's bound after dispose", async function () {
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 30_000 });
    const run = await runChild(childOn({ operation: "hotItem", maxDrainMs: 1000 }));
    fixture.emulator.clearFaults();
    assert.deepEqual([run.line.status, run.line.terminalState], [200, "hedgeWon"]);
    assert.ok(run.afterDisposeMs < 1000 + 2000, `the process lived ${run.afterDisposeMs} ms after dispose (the drain's bound: 1000 ms)`);
  });

  // Found by a hostile review (helper-44): the SDK stops applying its requestTimeout once the race has answered it, and a
  // losing primary whose connection cannot be let go of drained to the drain's 5 s: the copies of a hot item, or a read
  // over a transport of the user's that pools its own connections. With requestTimeout 1000 plain's script ended about
  // 1.09 s after its reads began (its retry in East US answers at once) and exited at once; the hedged one's reads took
  // 0.1 s, but its process lived 5.0 s after dispose. A primary now drains no longer than the SDK would have let it run.
  for (const [name, settings] of [
    ["a hot item (two identical reads at once)", { operation: "hotItem" }],
    ["one read over an httpClient of the user's on fetch", { transport: "fetch" }],
  ] as const) {
    it(`${name}, requestTimeout 1000, the preferred region hung: the script exits once the SDK's timeout has passed, as plain's would, not at the drain's bound`, async function () {
      fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 30_000 });
      const run = await runChild(childOn({ ...settings, requestTimeout: 1000 }));
      fixture.emulator.clearFaults();
      assert.deepEqual([run.line.status, run.line.terminalState], [200, "hedgeWon"]);
      assert.ok(run.afterDisposeMs < 1000 + 1500, `the process lived ${run.afterDisposeMs} ms after dispose (the SDK's requestTimeout: 1000 ms; the drain's bound: 5000 ms)`);
    });
  }

  // Found by a hostile review (helper-45): with the SDK's partition-level circuit breaker on, @azure/cosmos cuts every
  // attempt of a read it has a partition for at 2 s (a change feed's page, a query scoped to a partition key), not only a
  // point read's; the drain bounded only a point read's primary by it, and the others by requestTimeout (60 s), so the
  // drain's 5 s held the script: two change feeds read at once from a hung preferred region exited 2.04 s after their
  // reads began plain, 5.13 s hedged (5.0 s after dispose).
  for (const [name, settings] of [
    ["two change feeds read from the start at once", { operation: "twoChangeFeeds" }],
    ["one change feed over an httpClient of the user's on fetch", { operation: "twoChangeFeeds", transport: "fetch" }],
  ] as const) {
    it(`${name}, the SDK's circuit breaker on, the preferred region hung: the script exits once the breaker's 2 s read timeout has passed, as plain's would`, async function () {
      fixture.emulator.region("West US").addFault({ operations: ["changeFeed"], delayMs: 30_000 });
      const run = await runChild(childOn({ ...settings, circuitBreaker: true }));
      fixture.emulator.clearFaults();
      assert.equal(run.line.status, 200);
      assert.ok(run.afterDisposeMs < 2000 + 1500, `the process lived ${run.afterDisposeMs} ms after dispose (the SDK's read timeout under its breaker: 2000 ms; the drain's bound: 5000 ms)`);
    });
  }

  // Found by a hostile review (helper-37): a drained primary cut at its byte bound was counted as an overdue copy after
  // it had answered, and the count then stood for a plain client's identical request on the SDK's shared default
  // agent, which was destroyed (ECONNRESET) and retried by the SDK: 2.3 to 6.3 s later than plain alone.
  it("a hedged and a plain client read a large item in the same second on the SDK's shared agent: the hedged one's loser, cut at its byte bound, never cuts the plain one's request", async function () {
    const { emulator } = fixture;
    const hedgedClient = createTestClient(
      emulator,
      withHedging(
        { endpoint: emulator.endpoint, key: emulator.key, userAgentSuffix: "hot-hedged", connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations } },
        { crossRegion: { threshold: 50, drainLosers: { maxDrainMs: 1000 } }, metadata: false },
      ),
    );
    const plainClient = createTestClient(emulator, { userAgentSuffix: "hot-plain", preferredLocations });
    try {
      const [hedgedItems, plainItems] = [hedgedClient, plainClient].map((client) => client.database(fixture.database).container(fixture.containerId));
      // Past the drain's 1 MiB byte bound.
      await plainItems!.items.upsert({ id: "large", pk: "pk-1", blob: "x".repeat(1_200_000) });
      await hedgedItems!.item("large", "pk-1").read();
      await plainItems!.item("large", "pk-1").read();
      const west = emulator.region("West US");
      west.addFault({ operations: ["pointRead"], delayMs: 300, ifHeaderValue: { name: "user-agent", includes: "hot-hedged" } });
      west.addFault({ operations: ["pointRead"], delayMs: 3000, ifHeaderValue: { name: "user-agent", includes: "hot-plain" } });
      // Both requests signed in one second (the same x-ms-date, so the same signature): copies on the shared agent.
      await new Promise((resolve) => setTimeout(resolve, 1030 - (Date.now() % 1000)));
      const sentAt = performance.now();
      const [plain, hedged] = await Promise.all([
        plainItems!.item("large", "pk-1").read().then((response) => ({ response, ms: performance.now() - sentAt })),
        hedgedItems!.item("large", "pk-1").read(),
      ]);
      emulator.clearFaults();
      assert.equal(getHedgeDiagnostics(hedged.headers)?.terminalState, "hedgeWon");
      assert.equal(plain.response.statusCode, 200);
      // The SDK lists the attempts it retried (an ECONNRESET among them, had the request been cut); none, no list.
      const { failedAttempts } = plain.response.diagnostics.clientSideRequestStatistics as { failedAttempts?: readonly unknown[] };
      assert.deepEqual(failedAttempts ?? [], [], "the plain client's request was never cut");
      // The emulator's own record, which no stall moves: the SDK lists no failedAttempts for a reset it retries (on ce92666's
      // regression the read was cut at 1.3 s and sent again at 2.3 s, failedAttempts empty, 5374 ms in all).
      const plainReads = emulator.requests.filter((request) => request.kind === "pointRead" && request.at >= sentAt && request.headers["user-agent"]?.includes("hot-plain") === true);
      assert.deepEqual(plainReads.map((request) => [request.region, request.status, request.cutByClient]), [["West US", 200, false]], "the plain client's request went out once and was never cut");
      // A cut and retried read came 2.3 s late at the least; a stall of the loaded machine, up to two seconds, is not one.
      assert.ok(plain.ms < 3000 + 2000, `the plain read took ${Math.round(plain.ms)} ms (West US answers it in 3000 ms)`);
    } finally {
      hedgedClient.dispose();
      plainClient.dispose();
    }
  });

  // Found by a hostile review of 30754c7: over a transport that pools its own connections, a losing hedge was drained,
  // its connection not found on the agent to let go of, and held the process for the drain's 5 s bound; plain exits.
  it("over an httpClient of the user's on fetch, hedges that lose to the primary are cut: the script exits as promptly as plain's", async function () {
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 700 });
    for (const region of ["East US", "North Europe"]) fixture.emulator.region(region).addFault({ operations: ["pointRead"], delayMs: straggler });
    const run = await runChild(childOn({ transport: "fetch" }));
    fixture.emulator.clearFaults();
    assert.deepEqual([run.line.status, run.line.terminalState], [200, "primaryWon"]);
    assert.ok(run.afterDisposeMs < 2000, `the process lived ${run.afterDisposeMs} ms after dispose`);
  });

  describe("with an agent of the user's that bounds its sockets, every 8th preferred-region read 3 s late", function () {
    const reads = 24;
    const late = 3000;

    /** 24 point reads one after another; every 8th gets a 3 s delay in West US. @returns their median latency and the requests per read. */
    async function readThrough(client: CosmosClient): Promise<{ p50: number; requestsPerRead: number }> {
      const container = client.database(fixture.database).container(fixture.containerId);
      // The account and container caches, warm before counting.
      await container.item("item-0", "pk-0").read();
      fixture.emulator.resetCounters();
      const latencies: number[] = [];
      for (let i = 0; i < reads; i++) {
        if (i % 8 === 0) fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: late, count: 1 });
        const start = performance.now();
        const response = await container.item(`item-${i % 6}`, `pk-${i % 3}`).read();
        latencies.push(performance.now() - start);
        assert.equal(response.statusCode, 200);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      return { p50: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN, requestsPerRead: fixture.emulator.count("pointRead") / reads };
    }

    for (const maxSockets of [1, 2]) {
      it(`maxSockets: ${maxSockets}: the median and the requests per read are those of drainLosers: false`, async function () {
        const run = async (hedging: HedgingOptions): Promise<{ p50: number; requestsPerRead: number }> => {
          const agent = new http.Agent({ keepAlive: true, maxSockets });
          // @azure/cosmos marks a request to an http endpoint insecure-allowed only with its own agent; the emulator speaks http.
          const transport = createDefaultHttpClient();
          const httpClient: HttpClient = { sendRequest: (request) => transport.sendRequest(Object.assign(request, { allowInsecureConnection: true })) };
          const options = { endpoint: fixture.emulator.endpoint, key: fixture.emulator.key, agent, httpClient, connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations } };
          const client = createTestClient(fixture.emulator, withHedging(options, hedging));
          try {
            return await readThrough(client);
          } finally {
            client.dispose();
            agent.destroy();
            fixture.emulator.clearFaults();
          }
        };
        const drained = await run({ metadata: false });
        const aborted = await run({ crossRegion: { drainLosers: false }, metadata: false });
        // With the loser left holding a socket, the reads behind it each waited out the 500 ms threshold (p50 506 ms before).
        assert.ok(drained.p50 < 250, `p50 ${drained.p50.toFixed(0)} ms (drainLosers: false: ${aborted.p50.toFixed(0)} ms)`);
        assert.equal(drained.requestsPerRead, aborted.requestsPerRead, "the requests per read");
        assert.equal(drained.requestsPerRead, (reads + reads / 8) / reads, "one hedge for each late read, no more");
      });
    }
  });
});
