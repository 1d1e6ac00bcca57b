import assert from "node:assert/strict";
import http from "node:http";
import type { Container, CosmosClient } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/topology/regionCache.js";
import { signedHeaders, startEmulator } from "../emulator/index.js";
import type { Emulator } from "../emulator/index.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";
import { arrivalOf } from "../support/wire.js";

const preferredLocations = ["West US", "East US"];

/** A raw GET on a fresh connection, so that no pooled socket outlives the test; signed with `headers` (default: the emulator's key, now). */
function rawGet(
  emulator: Emulator,
  url: string,
  headers: http.OutgoingHttpHeaders = signedHeaders(emulator.key, "GET", new URL(url).pathname),
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      })
      .on("error", reject);
  });
}

async function readAccount(emulator: Emulator): Promise<Record<string, unknown>> {
  const response = await rawGet(emulator, emulator.endpoint);
  assert.equal(response.status, 200);
  assert.equal(Number(response.headers["content-length"]), Buffer.byteLength(response.body));
  return JSON.parse(response.body) as Record<string, unknown>;
}

async function elapsed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const resource of process.getActiveResourcesInfo()) counts.set(resource, (counts.get(resource) ?? 0) + 1);
  return counts;
}

// Node's timers are millisecond-granular, so a measured delay can come out a fraction of a millisecond short.
const timerSlackMs = 5;

describe("multi-region emulator", function () {
  let emulator: Emulator;
  let client: CosmosClient;
  let container: Container;

  before(async function () {
    emulator = await startEmulator();
    client = createTestClient(emulator, { preferredLocations });
    container = await seedContainer(client, {
      database: "db",
      container: "items",
      items: [
        { id: "1", pk: "a", value: 1 },
        { id: "2", pk: "b", value: 2 },
      ],
    });
  });

  after(async function () {
    client.dispose();
    await emulator.close();
  });

  beforeEach(function () {
    emulator.clearFaults();
    emulator.resetCounters();
    for (const region of emulator.regions) region.latencyMs = 0;
  });

  describe("routing", function () {
    it("serves reads from the first preferred region", async function () {
      const { resource } = await container.item("1", "a").read();
      assert.equal(resource?.["value"], 1);
      assert.equal(emulator.region("West US").count("pointRead"), 1);
      assert.equal(emulator.region("East US").count("pointRead"), 0);
      assert.equal(emulator.count("pointRead"), 1);
    });

    it("sends writes to the write region even when another region is preferred", async function () {
      await container.items.create({ id: "w1", pk: "w" });
      assert.equal(emulator.region("East US").count("create"), 1);
      assert.equal(emulator.region("West US").count("create"), 0);
    });

    it("counts and records requests by kind", async function () {
      await container.item("1", "a").read();
      await container.items.upsert({ id: "w2", pk: "w" });
      await container.items.query("SELECT * FROM c").fetchAll();

      assert.equal(emulator.count("pointRead"), 1);
      assert.equal(emulator.count(["create", "upsert"]), 1);
      assert.ok(emulator.region("West US").count("query") >= 1);
      const west = emulator.region("West US");
      assert.equal(west.count(), west.requests.length);
      const read = west.requests.find((request) => request.kind === "pointRead");
      assert.ok(read);
      assert.equal(read.method, "GET");
      assert.equal(read.path, "/dbs/db/colls/items/docs/1");
      assert.equal(read.headers["x-ms-documentdb-partitionkey"], '["a"]');
      assert.ok(read.at > 0);

      emulator.resetCounters();
      assert.equal(emulator.count(), 0);
      assert.equal(west.requests.length, 0);
    });
    it("keeps client connections alive", async function () {
      const agent = new http.Agent({ keepAlive: true });
      try {
        const get = () =>
          new Promise<boolean>((resolve, reject) => {
            const request = http.get(emulator.endpoint, { agent, headers: signedHeaders(emulator.key, "GET", "/") }, (res) => {
              res.resume();
              res.on("end", () => resolve(request.reusedSocket));
            });
            request.on("error", reject);
          });
        assert.equal(await get(), false);
        assert.equal(await get(), true);
      } finally {
        agent.destroy();
      }
    });
  });

  describe("faults", function () {
    it("applies a rule with every: n to the first request of each n that match it", async function () {
      const west = emulator.region("West US");
      west.addFault({ operations: ["pointRead"], status: 404, every: 3 });
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await container.item("1", "a").read()).statusCode);
      assert.deepEqual(statuses, [404, 200, 200, 404, 200, 200, 404]);
      assert.throws(() => west.addFault({ every: 0 }), /every must be a whole number >= 1/);
    });

    it("applies a rule with ifHeaderValue only to requests whose header contains the value", async function () {
      const tagged = createTestClient(emulator, { preferredLocations, userAgentSuffix: "tagged-client" });
      try {
        const fault = emulator.region("West US").addFault({ operations: ["pointRead"], status: 404, ifHeaderValue: { name: "user-agent", includes: "tagged-client" } });
        assert.equal((await container.item("1", "a").read()).statusCode, 200);
        assert.equal((await tagged.database("db").container("items").item("1", "a").read()).statusCode, 404);
        assert.equal(fault.applied, 1);
      } finally {
        tagged.dispose();
      }
    });

    it("with responseDelayMs, forwards at once and holds the answer: the write is done before the client hears of it", async function () {
      const east = emulator.region("East US");
      east.addFault({ operations: ["create"], responseDelayMs: 400 });
      const created = container.items.create({ id: "held", pk: "w", value: 7 });
      const arrival = await arrivalOf(emulator, (request) => request.kind === "create");
      await new Promise((resolve) => setTimeout(resolve, 150));
      // Read behind the client's back, with the fault-free rule of another kind: the document is already there.
      assert.equal((await container.item("held", "w").read()).statusCode, 200);
      assert.equal((await created).statusCode, 201);
      assert.ok(performance.now() - arrival.at >= 400 - timerSlackMs);
      assert.equal(arrival.forwarded, true);
    });

    it("with bodyDelayMs, sends the answer's headers at once and the rest of its body later: an abort meanwhile meets the client reading it", async function () {
      emulator.region("West US").addFault({ operations: ["pointRead"], bodyDelayMs: 300 });
      assert.ok((await elapsed(() => container.item("1", "a").read())) >= 300 - timerSlackMs, "the whole answer waits for its body");
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const error = await container
        .item("1", "a")
        .read({ abortSignal: controller.signal })
        .then(
          () => undefined,
          (failure: { name?: string; code?: unknown }) => failure,
        );
      // Core's transport had the status and headers: what it reports is the body it could not read, not an abort.
      assert.deepEqual([error?.name, error?.code], ["RestError", "PARSE_ERROR"]);
    });

    it("records whether a request reached the backend: not when a fault answered it", async function () {
      emulator.region("West US").addFault({ operations: ["pointRead"], status: 503, count: 1 });
      await container.item("1", "a").read();
      const reads = emulator.requests.filter((request) => request.kind === "pointRead");
      assert.deepEqual(reads.map((request) => [request.status, request.forwarded]), [
        [503, false],
        [200, true],
      ]);
    });

    it("delays exactly the operations a rule names", async function () {
      const fault = emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 300 });
      assert.ok((await elapsed(() => container.item("1", "a").read())) >= 300 - timerSlackMs);
      await container.items.query("SELECT * FROM c").fetchAll();
      assert.ok(emulator.region("West US").count("query") >= 1);
      assert.equal(fault.applied, 1, "the query was not delayed");
    });

    it("adds the region's base latency to every request", async function () {
      emulator.region("West US").latencyMs = 150;
      assert.ok((await elapsed(() => container.item("1", "a").read())) >= 150 - timerSlackMs);
      // East US, the write region, has no latency: far below West's, whatever the load of the machine.
      emulator.region("West US").latencyMs = 5000;
      assert.ok((await elapsed(() => container.items.create({ id: "w3", pk: "w" }))) < 2500);
    });

    it("draws a random delay within the given range", async function () {
      const west = emulator.region("West US");
      west.addFault({ operations: ["pointRead"], delayMs: { min: 60, max: 120 } });
      const drawn = Array.from({ length: 200 }, () => west.predict("pointRead").cost);
      assert.ok(drawn.every((cost) => cost >= 60 && cost <= 120), `drawn: ${Math.min(...drawn)}..${Math.max(...drawn)}`);
      assert.ok(Math.max(...drawn) - Math.min(...drawn) > 30, "the draws spread over the range");
      assert.ok((await elapsed(() => container.item("1", "a").read())) >= 60 - timerSlackMs);
    });

    it("fails exactly the operations a rule names, at most count times", async function () {
      const west = emulator.region("West US");
      const fault = west.addFault({ operations: ["pointRead"], status: 404, count: 2 });
      assert.equal((await container.item("1", "a").read()).statusCode, 404);
      const { resources } = await container.items.query("SELECT * FROM c").fetchAll();
      assert.ok(resources.length >= 2);
      assert.equal((await container.item("1", "a").read()).statusCode, 404);
      assert.equal((await container.item("1", "a").read()).statusCode, 200);
      assert.equal(fault.applied, 2);
      assert.equal(west.count("pointRead"), 3);
    });

    it("answers a status fault without the backend, with Cosmos headers", async function () {
      emulator.region("East US").addFault({ operations: ["accountRead"], status: 503, substatus: 21008 });
      const response = await rawGet(emulator, emulator.endpoint);
      assert.equal(response.status, 503);
      assert.equal(response.headers["x-ms-substatus"], "21008");
      assert.equal(response.headers["x-ms-request-charge"], "1");
      assert.equal(response.headers["content-type"], "application/json");
      assert.match(String(response.headers["x-ms-activity-id"]), /^[0-9a-f-]{36}$/);
      assert.equal((JSON.parse(response.body) as { code: string }).code, "ServiceUnavailable");
    });

    it("moves a read that met a 503 to the next preferred region", async function () {
      const fault = emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
      assert.equal((await container.item("1", "a").read()).statusCode, 200);
      assert.equal(fault.applied, 1);
      assert.equal(emulator.region("West US").count("pointRead"), 1);
      assert.equal(emulator.region("East US").count("pointRead"), 1);
    });

    it("sends extra headers, so a throttled read is retried after the given pause", async function () {
      const fault = emulator.region("West US").addFault({
        operations: ["pointRead"],
        status: 429,
        headers: { "x-ms-retry-after-ms": "20" },
        count: 1,
      });
      assert.equal((await container.item("1", "a").read()).statusCode, 200);
      assert.equal(fault.applied, 1);
      assert.equal(emulator.region("West US").count("pointRead"), 2);
    });

    it("answers with a canned body", async function () {
      emulator.region("West US").addFault({ operations: ["pointRead"], body: { id: "1", pk: "a", value: "stale" } });
      const { statusCode, resource } = await container.item("1", "a").read();
      assert.equal(statusCode, 200);
      assert.equal(resource?.["value"], "stale");
    });

    it("resets the connection", async function () {
      const fault = emulator.region("East US").addFault({ operations: ["create"], connectionReset: true, count: 1 });
      await assert.rejects(container.items.create({ id: "r1", pk: "r" }), { code: "ECONNRESET" });
      assert.equal((await container.item("r1", "r").read()).statusCode, 404);
      await container.items.create({ id: "r1", pk: "r" });
      assert.equal(fault.applied, 1);
    });

    it("does not forward a request whose client gave up during the delay", async function () {
      emulator.region("East US").addFault({ operations: ["create"], delayMs: 10_000 });
      const controller = new AbortController();
      const creating = container.items.create({ id: "a1", pk: "x" }, { abortSignal: controller.signal });
      await arrivalOf(emulator, (request) => request.kind === "create");
      controller.abort();
      await assert.rejects(creating, { name: "AbortError" });
      await emulator.idle();
      assert.equal(emulator.region("East US").requests[0]?.cutByClient, true);
      assert.equal(emulator.region("East US").count("create"), 1);
      emulator.clearFaults();
      assert.equal((await container.item("a1", "x").read()).statusCode, 404);
    });

    it("draws fault probabilities from the seed, repeatably", async function () {
      async function pattern(seed: number): Promise<string> {
        const seeded = await startEmulator({ seed });
        const seededClient = createTestClient(seeded, { preferredLocations });
        try {
          const items = await seedContainer(seededClient, { database: "db", container: "items", items: [{ id: "1", pk: "a" }] });
          seeded.region("West US").addFault({ operations: ["pointRead"], status: 404, probability: 0.5 });
          let outcomes = "";
          for (let i = 0; i < 16; i++) outcomes += (await items.item("1", "a").read()).statusCode === 404 ? "x" : ".";
          return outcomes;
        } finally {
          seededClient.dispose();
          await seeded.close();
        }
      }
      const first = await pattern(7);
      assert.equal(await pattern(7), first);
      assert.match(first, /x/);
      assert.match(first, /\./);
      assert.notEqual(await pattern(8), first);
    });
  });
});

describe("emulated account", function () {
  it("names partition key ranges with strings, as the service does", async function () {
    const emulator = await startEmulator();
    const client = createTestClient(emulator);
    try {
      await seedContainer(client, { database: "db", container: "ranges" });
      const { resources } = await client.database("db").container("ranges").readPartitionKeyRanges().fetchAll();
      assert.ok(resources.length > 0);
      assert.ok(resources.every((range) => typeof range.id === "string"), JSON.stringify(resources.map((range) => range.id)));
    } finally {
      client.dispose();
      await emulator.close();
    }
  });

  it("splits every container into partitionKeyRanges ranges over the hash space, hash version 2, splits a range at runtime, and refuses a count out of bounds", async function () {
    await assert.rejects(() => startEmulator({ partitionKeyRanges: 0 }), /partitionKeyRanges must be a whole number from 1 to 16; got 0/);
    await assert.rejects(() => startEmulator({ partitionKeyRanges: 2.5 }), /got 2\.5/);
    const emulator = await startEmulator({ partitionKeyRanges: 4 });
    const client = createTestClient(emulator);
    try {
      const container = await seedContainer(client, { database: "db", container: "split", items: Array.from({ length: 20 }, (_, i) => ({ id: `${i}`, pk: `key-${i}` })) });
      const { resources } = await container.readPartitionKeyRanges().fetchAll();
      assert.deepEqual(
        resources.map(({ id, minInclusive, maxExclusive }) => [id, minInclusive, maxExclusive]),
        [["0", "", "10"], ["1", "10", "20"], ["2", "20", "30"], ["3", "30", "FF"]],
      );
      const { resource } = await container.read();
      assert.deepEqual(resource?.partitionKey, { paths: ["/pk"], kind: "Hash", version: 2 });
      // Each range's pages hold its own keys: together every row once.
      emulator.resetCounters();
      const { resources: rows } = await container.items.query<{ id: string }>("SELECT * FROM c", { forceQueryPlan: true, maxItemCount: 3 }).fetchAll();
      assert.deepEqual(rows.map((row) => Number(row.id)).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
      const ranges = new Set(emulator.requests.filter((request) => request.kind === "query").map((request) => request.headers["x-ms-documentdb-partitionkeyrangeid"]));
      assert.deepEqual([...ranges].sort(), ["0", "1", "2", "3"]);
      assert.equal(emulator.requests.filter((request) => request.kind === "queryPlan").length, 1, "the plan answered by the emulator");
      // A split: the range feed lists the two halves, naming their parent, and a page asked of the parent is gone.
      assert.deepEqual(emulator.splitPartitionKeyRange("1"), ["4", "5"]);
      assert.throws(() => emulator.splitPartitionKeyRange("1"), /no partition key range "1" to split; have 0, 4, 5, 2, 3/);
      const { resources: after } = await container.readPartitionKeyRanges().fetchAll();
      assert.deepEqual(
        after.map(({ id, minInclusive, maxExclusive, parents }) => [id, minInclusive, maxExclusive, parents]),
        [["0", "", "10", []], ["4", "10", "1800", ["1"]], ["5", "1800", "20", ["1"]], ["2", "20", "30", []], ["3", "30", "FF", []]],
      );
      const feedPath = "/dbs/db/colls/split/docs";
      const page = (range: string): ReturnType<typeof rawGet> =>
        rawGet(emulator, `${emulator.region("West US").endpoint}${feedPath.slice(1)}`, { ...signedHeaders(emulator.key, "GET", feedPath), "x-ms-documentdb-partitionkeyrangeid": range });
      const gone = await page("1");
      assert.deepEqual([gone.status, gone.headers["x-ms-substatus"]], [410, "1002"]);
      const rowsOf = async (range: string): Promise<number[]> => (JSON.parse((await page(range)).body) as { Documents: Array<{ id: string }> }).Documents.map((row) => Number(row.id));
      const byRange = await Promise.all(["0", "4", "5", "2", "3"].map(rowsOf));
      assert.deepEqual(byRange.flat().sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i), "every row in one range of five");
      assert.ok(byRange[1]!.length > 0 && byRange[2]!.length > 0, `both halves hold rows: ${JSON.stringify(byRange)}`);
    } finally {
      client.dispose();
      await emulator.close();
    }
  });

  it("lists the regional proxies, and setAccount changes the next account read", async function () {
    const emulator = await startEmulator();
    try {
      const endpoints = emulator.regions.map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint }));
      const initial = await readAccount(emulator);
      assert.deepEqual(initial["readableLocations"], endpoints);
      assert.deepEqual(initial["writableLocations"], endpoints.slice(0, 1));
      assert.equal(initial["enableMultipleWriteLocations"], false);
      assert.equal(initial["enablePerPartitionFailoverBehavior"], false);
      assert.ok(!("disableCrossRegionalHedging" in initial));
      assert.equal(emulator.count("accountRead"), 1);

      emulator.setAccount({ multipleWriteLocations: true, perPartitionFailover: true, disableCrossRegionalHedging: true });
      const multiWrite = await readAccount(emulator);
      assert.deepEqual(multiWrite["writableLocations"], endpoints);
      assert.equal(multiWrite["enableMultipleWriteLocations"], true);
      assert.equal(multiWrite["enablePerPartitionFailoverBehavior"], true);
      assert.equal(multiWrite["disableCrossRegionalHedging"], true);

      emulator.setAccount({ writeRegions: ["North Europe"], disableCrossRegionalHedging: undefined });
      const moved = await readAccount(emulator);
      assert.deepEqual(moved["writableLocations"], [endpoints[2]]);
      assert.equal(moved["enableMultipleWriteLocations"], true);
      assert.ok(!("disableCrossRegionalHedging" in moved));
      assert.throws(() => emulator.setAccount({ writeRegions: ["Mars"] }));
    } finally {
      await emulator.close();
    }
  });

  it("routes writes to the preferred region once the account allows multiple write regions", async function () {
    const emulator = await startEmulator({ multipleWriteLocations: true });
    const client = createTestClient(emulator, { preferredLocations });
    try {
      await seedContainer(client, { database: "db", container: "items", items: [{ id: "1", pk: "a" }] });
      assert.equal(emulator.region("West US").count(["create", "upsert"]), 1);
      assert.equal(emulator.region("East US").count(["create", "upsert"]), 0);
    } finally {
      client.dispose();
      await emulator.close();
    }
  });

  it("teaches a RegionCache in the client's HTTP path the topology", async function () {
    const emulator = await startEmulator({ perPartitionFailover: true, disableCrossRegionalHedging: false });
    const cache = new RegionCache({ preferredRegions: preferredLocations });
    const inner = createDefaultHttpClient();
    const httpClient: HttpClient = {
      sendRequest: async (request) => {
        const response = await inner.sendRequest(request);
        cache.observe(request, response);
        return response;
      },
    };
    const client = createTestClient(emulator, { preferredLocations, httpClient });
    try {
      await client.getDatabaseAccount();
      const topology = cache.topology;
      assert.ok(topology);
      assert.deepEqual(
        topology.readRegions.map((region) => region.name),
        emulator.regions.map((region) => region.name),
      );
      assert.deepEqual(
        topology.readRegions.map((region) => region.endpoint),
        emulator.regions.map((region) => region.endpoint),
      );
      assert.deepEqual(topology.writeRegions, [{ name: "East US", endpoint: emulator.endpoint }]);
      assert.equal(topology.multipleWriteLocations, false);
      assert.equal(topology.perPartitionFailover, true);
      assert.equal(topology.crossRegionalHedgingDisabled, false);
      assert.equal(cache.regionOf(`${emulator.region("West US").endpoint}dbs/db`)?.name, "West US");
      assert.deepEqual(
        cache.applicableRegions("read").map((region) => region.name),
        preferredLocations,
      );
    } finally {
      client.dispose();
      await emulator.close();
    }
  });
});

describe("emulator lifecycle", function () {
  it("starts in under 2 seconds", async function () {
    let emulator: Emulator | undefined;
    const took = await elapsed(async () => {
      emulator = await startEmulator();
    });
    await emulator?.close();
    assert.ok(took < 2000, `took ${took} ms`);
  });

  it("leaves no handles or timers behind after close", async function () {
    // Mocha arms this test's timeout only after the test function first yields; count it in the baseline.
    await new Promise((resolve) => setImmediate(resolve));
    const before = resourceCounts();
    const emulator = await startEmulator({ regions: [{ name: "East US", latencyMs: 5 }, { name: "West US" }] });
    const client = createTestClient(emulator, { preferredLocations });
    const container = await seedContainer(client, { database: "db", container: "items", items: [{ id: "1", pk: "a" }] });
    await container.item("1", "a").read();
    // A request aborted while delayed, and one still delayed when the emulator closes: both timers must go.
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 10_000 });
    await assert.rejects(container.item("1", "a").read({ abortSignal: AbortSignal.timeout(20) }));
    emulator.region("East US").addFault({ operations: ["accountRead"], delayMs: 10_000 });
    const pending = assert.rejects(rawGet(emulator, emulator.endpoint));
    await new Promise((resolve) => setTimeout(resolve, 20));
    client.dispose();
    await emulator.close();
    await pending;

    const after = resourceCounts();

    for (const [resource, count] of after) {
      assert.ok(count <= (before.get(resource) ?? 0), `${resource}: ${before.get(resource) ?? 0} before, ${count} after`);
    }
  });
});
