import assert from "node:assert/strict";
import { ChangeFeedStartFrom, CosmosClient, PluginOn } from "@azure/cosmos";
import type { Container, CosmosClientOptions, PluginConfig } from "@azure/cosmos";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { withHedging } from "../../src/client/withHedging.js";
import { masterKeyAuthorization } from "../../src/cosmos/masterKeySigner.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";

/**
 * The package used the way `@azure/cosmos` users call it: the SDK's own
 * request options, several accounts in one process, paged feeds, session
 * tokens. Outcomes are decided by fault rules far from the threshold: a
 * slow region answers after 600 ms, a hedge fires after 50 ms.
 */
const slow = 600;
const threshold = 50;
const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));

function optionsFor(emulator: Emulator, preferredLocations: string[], extra: Partial<CosmosClientOptions> = {}): CosmosClientOptions {
  return {
    endpoint: emulator.endpoint,
    key: emulator.key,
    ...extra,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations },
  };
}

describe("as users call it, through the real CosmosClient", function () {
  let emulator: Emulator;
  let diagnostics: HedgeDiagnostics[];
  const clients: CosmosClient[] = [];

  before(async function () {
    emulator = await startEmulator();
    const seeder = createTestClient(emulator);
    await seedContainer(seeder, { database: "db", container: "items", items });
    seeder.dispose();
  });

  after(async function () {
    await emulator.close();
  });

  beforeEach(function () {
    diagnostics = [];
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
    emulator.clearFaults();
  });

  /** A CosmosClient of `options`, warmed so that each test sees only its own operation, its counters and records reset. */
  async function containerOf(options: CosmosClientOptions): Promise<Container> {
    const client = new CosmosClient(options);
    clients.push(client);
    const container = client.database("db").container("items");
    await container.item("item-0", "pk").read();
    emulator.resetCounters();
    diagnostics = [];
    return container;
  }

  /** A hedging CosmosClient made with withHedging (see {@link containerOf}). */
  function hedgingContainer(preferred: string[], hedging: HedgingOptions = {}, extra: Partial<CosmosClientOptions> = {}): Promise<Container> {
    return containerOf(
      withHedging(optionsFor(emulator, preferred, extra), {
        crossRegion: { threshold, thresholdStep: threshold },
        onDiagnostics: (record) => diagnostics.push(record),
        ...hedging,
      }),
    );
  }

  function arrivals(kinds: OperationKind[]): Record<string, number> {
    return Object.fromEntries(emulator.regions.map((region) => [region.name, region.count(kinds)]));
  }

  describe("the SDK's own excludedLocations bind every hedge", function () {
    const preferred = ["West US", "East US", "North Europe"];

    it("a point read: the hedge skips the excluded region", async function () {
      const container = await hedgingContainer(preferred);
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const { resource } = await container.item("item-1", "pk").read({ excludedLocations: ["East US"] });
      assert.equal(resource?.value, 1);
      assert.deepEqual(arrivals(["pointRead"]), { "East US": 0, "West US": 1, "North Europe": 1 });
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.deepEqual(record?.arms.map((arm) => arm.region), ["West US", "North Europe"]);
      assert.equal(record?.hedgeWon, true);
    });

    it("a query and its query plan, a read feed and a change feed: no arm reaches the excluded region", async function () {
      const container = await hedgingContainer(preferred);
      const kinds: OperationKind[] = ["query", "queryPlan", "readFeed", "changeFeed"];
      emulator.region("West US").addFault({ operations: kinds, delayMs: slow });
      const excludedLocations = ["east us"];
      const { resources: queried } = await container.items.query("SELECT * FROM c WHERE c.id IN ('item-3', 'item-4', 'item-5')", { excludedLocations }).fetchAll();
      assert.equal(queried.length, 3);
      const { resources: all } = await container.items.readAll({ excludedLocations }).fetchAll();
      assert.equal(all.length, items.length);
      const changes = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), excludedLocations });
      const page = await changes.readNext();
      assert.ok(page.statusCode < 400);
      assert.equal(arrivals(kinds)["East US"], 0, "nothing went to the excluded region");
      assert.ok(diagnostics.some((entry) => entry.hedgeFired), "hedges fired, to North Europe");
      assert.ok(diagnostics.every((entry) => entry.arms.every((arm) => arm.region !== "East US")));
    });

    it("an excludedLocations list the SDK takes but no region name can match is not hedged, and the warning names excludedLocations", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const container = await hedgingContainer(preferred);
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 200 });
        await container.item("item-1", "pk").read({ excludedLocations: ["East\tUS"] });
        assert.deepEqual(arrivals(["pointRead"]), { "East US": 0, "West US": 1, "North Europe": 0 });
        assert.equal(diagnostics.at(-1)?.skipReason, "disabled");
        const lines = logs.packageLines();
        assert.ok(lines.some((line) => line.includes("@azure/cosmos excludedLocations cannot be read")), lines.join("\n"));
        assert.ok(!lines.some((line) => line.includes("without the request plugin")), "the plugin did run");
        assert.ok(!lines.some((line) => line.includes("x-cosmos-hedging")), "no internal header named");
      } finally {
        logs.restore();
      }
    });

    it("without the request plugin (plugins replaced), requests are not hedged at all, and a warning says why", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const hedged = withHedging(optionsFor(emulator, preferred), {
          crossRegion: { threshold, thresholdStep: threshold },
          onDiagnostics: (record) => diagnostics.push(record),
        });
        // An empty list makes @azure/cosmos 4.10.1 throw on every request; `undefined` runs no plugin.
        const client = new CosmosClient({ ...hedged, plugins: undefined } as CosmosClientOptions);
        clients.push(client);
        const container = client.database("db").container("items");
        await container.item("item-0", "pk").read();
        emulator.resetCounters();
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 200 });
        await container.item("item-1", "pk").read({ excludedLocations: ["East US"] });
        assert.deepEqual(arrivals(["pointRead"]), { "East US": 0, "West US": 1, "North Europe": 0 });
        assert.equal(diagnostics.at(-1)?.skipReason, "disabled");
        assert.ok(logs.packageLines().some((line) => line.includes("without the request plugin withHedging installs")));
      } finally {
        logs.restore();
      }
    });
  });

  describe("a request-level hedging setting overrides the client's", function () {
    it("turns hedging on for one read of a client created with crossRegion: false", async function () {
      const container = await hedgingContainer(["West US", "East US"], { crossRegion: false });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const { resource } = await container.item("item-2", "pk").read(hedgingRequestOptions({ hedging: { threshold } }));
      assert.equal(resource?.value, 2);
      const record = diagnostics.find((entry) => entry.operation === "pointRead");
      assert.equal(record?.hedgeWon, true);
      assert.equal(record?.thresholdSource, "request");
    });

    it("honours a header of this package's added to the client's defaultHeaders after the client was made, and keeps it off the wire", async function () {
      const defaultHeaders: Record<string, string> = {};
      const container = await hedgingContainer(["West US", "East US"], {}, { defaultHeaders });
      // The SDK reads the defaultHeaders object on every request: what is added to it later counts.
      defaultHeaders["X-Cosmos-Hedging"] = "off";
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 200 });
      const { resource } = await container.item("item-1", "pk").read();
      assert.equal(resource?.value, 1);
      assert.deepEqual(arrivals(["pointRead"]), { "East US": 0, "West US": 1, "North Europe": 0 }, "not hedged");
      assert.equal(diagnostics.at(-1)?.skipReason, "disabled");
      const sent = emulator.regions.flatMap((region) => region.requests).filter((request) => request.kind === "pointRead");
      assert.ok(sent.length > 0 && sent.every((request) => !Object.keys(request.headers).some((name) => name.startsWith("x-cosmos-hedging"))));
    });

    it("turns hedging on for one read of a client with both kinds of hedging off, whose plain reads cost it nothing and leave no record", async function () {
      const container = await hedgingContainer(["West US", "East US"], { crossRegion: false, metadata: false });
      const plainRead = await container.item("item-1", "pk").read();
      assert.equal(plainRead.resource?.value, 1);
      assert.equal(getHedgeDiagnostics(plainRead), undefined, "no diagnostics record");
      assert.equal(getHedgingDetection(plainRead), undefined, "no detection record");
      assert.equal(plainRead.headers["x-cosmos-hedging-diagnostics"], undefined);
      assert.ok(!diagnostics.some((entry) => entry.operation === "pointRead"), "nothing delivered for the plain read");
      // The SDK's own failover after a 503 is the SDK's alone as well, as it is through plain @azure/cosmos.
      emulator.region("West US").addFault({ operations: ["pointRead"], status: 503, count: 1 });
      const failedOver = await container.item("item-3", "pk").read();
      assert.equal(failedOver.resource?.value, 3);
      assert.deepEqual(arrivals(["pointRead"]), { "East US": 1, "West US": 2, "North Europe": 0 }, "item-1, then item-3 in West US and again in East US");
      assert.equal(getHedgeDiagnostics(failedOver), undefined, "no record of the retry");
      assert.equal(getHedgingDetection(failedOver), undefined);
      assert.ok(!diagnostics.some((entry) => entry.operation === "pointRead"), "nothing delivered for the retry");
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const hedged = await container.item("item-2", "pk").read(hedgingRequestOptions({ hedging: { threshold } }));
      assert.equal(hedged.resource?.value, 2);
      assert.equal(getHedgeDiagnostics(hedged)?.hedgeWon, true);
      assert.equal(getHedgingDetection(hedged)?.hedgingStarted(), true);
    });
  });

  describe("the diagnostics header on what the SDK returns", function () {
    const headerRecord = (headers: unknown): HedgeDiagnostics => JSON.parse(String((headers as Record<string, unknown>)["x-cosmos-hedging-diagnostics"])) as HedgeDiagnostics;
    /** What the header says of a record: a copy of the headers holds the header alone, not the live record (see headerValue). */
    const fromHeaderAlone = (headers: unknown): unknown => summary(getHedgeDiagnostics({ ...(headers as object) }));
    const summary = (record: HedgeDiagnostics | undefined): unknown =>
      record === undefined
        ? undefined
        : {
            operation: record.operation,
            terminalState: record.terminalState,
            winningRegion: record.winningRegion,
            totalRequestCharge: record.totalRequestCharge,
            arms: record.arms.map((arm) => ({ region: arm.region, reason: arm.reason, outcome: arm.outcome, status: arm.status, activityId: arm.activityId })),
          };

    it("a read answered alone, a 404 answered alone, and a hedged read: each one's header is its record, and a query's page keeps its own", async function () {
      const container = await hedgingContainer(["West US", "East US"]);
      const alone = await container.item("item-1", "pk").read();
      assert.equal(alone.resource?.value, 1);
      assert.equal(getHedgeDiagnostics(alone)?.terminalState, "primaryWon");
      assert.deepEqual(fromHeaderAlone(alone.headers), summary(getHedgeDiagnostics(alone)));
      const missing = await container.item("no-such-item", "pk").read();
      assert.equal(missing.statusCode, 404);
      assert.equal(getHedgeDiagnostics(missing)?.arms[0]?.status, 404);
      assert.deepEqual(fromHeaderAlone(missing.headers), summary(getHedgeDiagnostics(missing)));
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const hedged = await container.item("item-2", "pk").read();
      assert.equal(getHedgeDiagnostics(hedged)?.hedgeWon, true);
      assert.equal(headerRecord(hedged.headers).hedgeWon, true);
      emulator.clearFaults();
      const page = await container.items.query("SELECT * FROM c", { maxItemCount: 2 }).fetchNext();
      // A page's headers are private to FeedResponse's type, not at run time: the header is what a JavaScript caller reads.
      assert.equal(headerRecord((page as unknown as { headers: unknown }).headers).operation, "query");
    });

    it("an error the SDK throws for a final status answered alone carries the header of its record", async function () {
      const container = await hedgingContainer(["West US", "East US"]);
      emulator.region("West US").addFault({ operations: ["pointRead"], status: 409, count: 1 });
      const error = await container.item("item-1", "pk").read().then(
        () => assert.fail("the read should have failed"),
        (thrown: unknown) => thrown as { code?: number; headers?: Record<string, unknown> },
      );
      assert.equal(error.code, 409);
      assert.equal(getHedgeDiagnostics(error)?.arms.length, 1);
      assert.deepEqual(fromHeaderAlone(error.headers), summary(getHedgeDiagnostics(error)));
    });
  });

  describe("plugins of the user's appended to the list withHedging returns", function () {
    const preferred = ["West US", "East US", "North Europe"];

    /** Appends a plugin to the list withHedging returned, as a user would after the call. */
    function appendPlugin(options: CosmosClientOptions, plugin: PluginConfig): void {
      const { plugins } = options as { plugins?: PluginConfig[] };
      assert.ok(plugins !== undefined);
      plugins.push(plugin);
    }

    it("an operation plugin that freezes what the SDK returns: the hedged client reads as plain @azure/cosmos does, records and all", async function () {
      const freezing: PluginConfig = {
        on: PluginOn.operation,
        plugin: async (context, _node, next) => {
          const response = await next(context);
          return { ...response, headers: Object.freeze({ ...response.headers }) };
        },
      };
      // @azure/cosmos types its plugins option as internal; it takes it all the same.
      const plain = await containerOf({ ...optionsFor(emulator, preferred), plugins: [freezing] } as CosmosClientOptions);
      assert.equal((await plain.item("item-1", "pk").read()).resource?.value, 1);
      const options = withHedging(optionsFor(emulator, preferred), { crossRegion: { threshold }, onDiagnostics: (record) => diagnostics.push(record) });
      appendPlugin(options, freezing);
      const hedged = await containerOf(options);
      const read = await hedged.item("item-1", "pk").read();
      assert.equal(read.resource?.value, 1);
      assert.equal(Object.isFrozen(read.headers), true);
      assert.equal(diagnostics.at(-1)?.terminalState, "primaryWon");
    });

    it("a request plugin that re-points the attempt to another region: the record's primary is where the request went, and no hedge goes there again", async function () {
      const eastUs = emulator.region("East US").endpoint;
      const repoint: PluginConfig = {
        on: PluginOn.request,
        plugin: (context, _node, next) => {
          if (context.resourceType === "docs") context.endpoint = eastUs;
          return next(context);
        },
      };
      const options = withHedging(optionsFor(emulator, preferred), { crossRegion: { threshold, thresholdStep: threshold }, onDiagnostics: (record) => diagnostics.push(record) });
      appendPlugin(options, repoint);
      const container = await containerOf(options);
      emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slow });
      const read = await container.item("item-1", "pk").read();
      assert.equal(read.resource?.value, 1);
      const record = getHedgeDiagnostics(read);
      assert.equal(record?.arms[0]?.region, "East US", "the primary went where the plugin sent it");
      assert.equal(record?.hedgeWon, true);
      assert.deepEqual(arrivals(["pointRead"]), { "East US": 1, "West US": 1, "North Europe": 0 }, "the hedge went to the next region, not back to East US");
    });
  });

  describe("a region pin against the client's exclusions", function () {
    it("fails before anything is sent, naming the region and the client's excludedRegions", async function () {
      const container = await hedgingContainer(["West US", "East US"], { excludedRegions: ["North Europe"] });
      await assert.rejects(
        container.item("item-1", "pk").read(hedgingRequestOptions({ region: "North Europe" })),
        /Cannot send this read to region "North Europe": the client's excludedRegions \("North Europe"\) exclude it/,
      );
      assert.equal(arrivals(["pointRead"])["North Europe"], 0);
    });
  });

  describe("a paged query", function () {
    it("sends every later page where the SDK sends it, even when a hedge served page 1: a continuation is valid in every region", async function () {
      const container = await hedgingContainer(["East US", "West US", "North Europe"]);
      // Only the first page's primary is slow: a hedge to West US serves page 1; the SDK sends the later pages to East US.
      emulator.region("East US").addFault({ operations: ["query"], delayMs: slow, count: 1 });
      const iterator = container.items.query("SELECT * FROM c", { maxItemCount: 2 });
      const { resources } = await iterator.fetchAll();
      assert.equal(resources.length, items.length);
      const pages = diagnostics.filter((entry) => entry.operation === "query");
      assert.ok(pages.length >= 3, `several pages (${pages.length})`);
      assert.equal(pages[0]?.winningRegion, "West US");
      for (const later of pages.slice(1)) {
        assert.equal(later.primaryRegion, "East US");
        assert.equal(later.winningRegion, "East US");
        assert.equal(later.hedgeFired, false);
      }
      assert.equal(arrivals(["query"])["East US"], pages.length, "every page went first to the SDK's region");
      assert.equal(arrivals(["query"])["West US"], 1, "only page 1's hedge went to West US");
    });
  });

  describe("hedges without the session token (hedgesWithoutSessionToken)", function () {
    const sessionRegions = useEmulator({ emulator: { regions: [{ name: "West US" }, { name: "East US" }] }, items });

    async function readWithSessionToken(hedgesWithoutSessionToken: boolean): Promise<HedgeDiagnostics> {
      const records: HedgeDiagnostics[] = [];
      const client = new CosmosClient(
        withHedging(optionsFor(sessionRegions.emulator, ["West US", "East US"]), {
          crossRegion: { threshold, thresholdStep: threshold, hedgesWithoutSessionToken },
          onDiagnostics: (record) => records.push(record),
        }),
      );
      clients.push(client);
      const container = client.database("db").container("items");
      await container.item("item-0", "pk").read();
      sessionRegions.emulator.resetCounters();
      sessionRegions.emulator.clearFaults();
      // West US is slow; East US lags behind the session: it answers 404/1002 to any read that carries the token.
      sessionRegions.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      sessionRegions.emulator.region("East US").addFault({ operations: ["pointRead"], ifHeader: "x-ms-session-token", status: 404, substatus: 1002 });
      const response = await container.item("item-3", "pk").read({ sessionToken: "0:-1#7" });
      assert.equal(response.resource?.value, 3);
      const record = getHedgeDiagnostics(response.headers) ?? records.find((entry) => entry.operation === "pointRead");
      assert.ok(record !== undefined);
      return record;
    }

    it("off (the default): every arm carries the token, so the lagging hedge answers 404/1002 and the slow primary wins", async function () {
      const record = await readWithSessionToken(false);
      assert.equal(record.terminalState, "primaryWon");
      assert.deepEqual(record.arms.map((arm) => [arm.region, arm.status, arm.subStatus, arm.sessionTokenOmitted]), [
        ["West US", 200, undefined, undefined],
        ["East US", 404, 1002, undefined],
      ]);
      assert.ok(sessionRegions.emulator.region("East US").requests.every((request) => request.headers["x-ms-session-token"] !== undefined));
    });

    it("on: the hedge goes without the token and wins; the primary keeps it; diagnostics mark the arm", async function () {
      const record = await readWithSessionToken(true);
      assert.equal(record.terminalState, "hedgeWon");
      assert.deepEqual(record.arms.map((arm) => [arm.region, arm.sessionTokenOmitted]), [
        ["West US", undefined],
        ["East US", true],
      ]);
      const [primary] = sessionRegions.emulator.region("West US").requests.filter((request) => request.kind === "pointRead");
      const [hedge] = sessionRegions.emulator.region("East US").requests.filter((request) => request.kind === "pointRead");
      assert.equal(primary?.headers["x-ms-session-token"], "0:-1#7");
      assert.equal(hedge?.headers["x-ms-session-token"], undefined);
    });
  });
});

describe("one hedging client, one account: two accounts in one process", function () {
  let accountA: Emulator;
  let accountB: Emulator;
  const clients: CosmosClient[] = [];
  const keyA = Buffer.from("account A key").toString("base64");
  const keyB = Buffer.from("account B key").toString("base64");

  before(async function () {
    [accountA, accountB] = await Promise.all([startEmulator({ key: keyA }), startEmulator({ key: keyB })]);
    for (const [emulator, owner] of [
      [accountA, "A"],
      [accountB, "B"],
    ] as const) {
      const seeder = createTestClient(emulator);
      await seedContainer(seeder, { database: "db", container: "items", items: [{ id: "shared-id", pk: "pk", owner }] });
      seeder.dispose();
    }
  });

  after(async function () {
    await Promise.all([accountA.close(), accountB.close()]);
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
  });

  function clientOf(options: CosmosClientOptions): Container {
    const client = new CosmosClient(options);
    clients.push(client);
    return client.database("db").container("items");
  }

  it("a createHedgingHttpClient shared by clients of A and B never re-points A's pinned read to B's region", async function () {
    const logs = captureAzureLogs("warning");
    try {
      const httpClient = createHedgingHttpClient({ crossRegion: { threshold } });
      const a = clientOf({ ...optionsFor(accountA, ["East US", "West US"]), httpClient });
      const b = clientOf({ ...optionsFor(accountB, ["East US", "West US"]), httpClient });
      assert.equal((await a.item("shared-id", "pk").read()).resource?.owner, "A");
      assert.equal((await b.item("shared-id", "pk").read()).resource?.owner, "B");
      accountB.resetCounters();
      const pinned = await a.item("shared-id", "pk").read(hedgingRequestOptions({ region: "West US" }));
      assert.equal(pinned.resource?.owner, "A", "A's read returns A's document");
      assert.equal(accountA.region("West US").count(["pointRead"]), 1);
      assert.equal(accountB.region("West US").count(), 0, "nothing of A's reached B");
      assert.ok(logs.packageLines().some((line) => line.includes("ignoring the database account read from")));
    } finally {
      logs.restore();
    }
  });

  it("withHedging's output reused with B's endpoint and key never re-signs B's requests with A's key", async function () {
    const hedgedA = withHedging(optionsFor(accountA, ["East US", "West US"]), { crossRegion: { threshold } });
    const b = clientOf({ ...hedgedA, endpoint: accountB.endpoint, key: keyB });
    accountB.resetCounters();
    for (let i = 0; i < 10; i++) assert.equal((await b.item("shared-id", "pk").read()).resource?.owner, "B");
    const reads = accountB.regions.flatMap((region) => region.requests).filter((request) => request.kind === "pointRead");
    assert.equal(reads.length, 10);
    for (const read of reads) {
      const date = read.headers["x-ms-date"] ?? "";
      const signedWithB = masterKeyAuthorization(Buffer.from(keyB, "base64"), read.method, `http://h${read.path}`, date);
      assert.equal(read.headers["authorization"], signedWithB, "B's request carries B's signature");
    }
  });
});
