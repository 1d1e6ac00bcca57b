import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { RestError, createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelinePolicy } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { withHedging } from "../../src/client/withHedging.js";
import { hedgeDiagnosticsHeaderName } from "../../src/cosmos/headers.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { excludedRegionsPolicy } from "../../src/policies/excludedRegionsPolicy.js";
import { faultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import { metadataHedgingPolicy } from "../../src/policies/metadataHedgingPolicy.js";
import type { Emulator } from "../emulator/index.js";
import { createTestClient } from "../support/cosmos.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { requestTo } from "../support/hedgingFixtures.js";
import { LeakCheck, useFakeClock } from "../support/leakCheck.js";
import { captureAzureLogs } from "../support/logCapture.js";
import type { LogCapture } from "../support/logCapture.js";
import { PlannedTransport } from "../support/plannedTransport.js";

const preferredLocations = ["West US", "East US", "North Europe"];
const database = "secure";
const containerId = "items";
const controlHeaderPrefix = "x-cosmos-hedging";

/** Everything a user can read back from a request: diagnostics (object and header), error messages, log lines. */
class Exposure {
  readonly texts: string[] = [];

  diagnostics(record: HedgeDiagnostics | undefined): void {
    if (record !== undefined) this.texts.push(JSON.stringify(record));
  }

  /** A response or an error of `@azure/cosmos`, or a pipeline response. */
  outcome(value: unknown): void {
    this.diagnostics(getHedgeDiagnostics(value));
    const headers = (value as { headers?: unknown } | undefined)?.headers;
    if (typeof headers === "object" && headers !== null) {
      const header =
        typeof (headers as { get?: unknown }).get === "function"
          ? (headers as { get(name: string): string | undefined }).get(hedgeDiagnosticsHeaderName)
          : (headers as Record<string, unknown>)[hedgeDiagnosticsHeaderName];
      if (typeof header === "string") this.texts.push(header);
    }
    if (value instanceof Error) this.texts.push(value.message, String(value));
  }

  /** Asserts that no text contains any of the secrets. */
  assertFreeOf(secrets: readonly string[], what: string): void {
    assert.ok(this.texts.length > 0, `${what}: something was collected`);
    for (const secret of secrets) {
      const leaks = this.texts.filter((text) => text.includes(secret));
      assert.deepEqual(leaks, [], `${what} contains a secret (${secret.slice(0, 12)}…)`);
    }
  }
}

/** Runs `work`, recording its outcome (a response or an error) into `exposure`; never throws. */
async function expose(exposure: Exposure, work: () => Promise<unknown>): Promise<unknown> {
  try {
    const value = await work();
    exposure.outcome(value);
    return value;
  } catch (error) {
    exposure.outcome(error);
    return error;
  }
}

/** The forms an `authorization` header value can take in text: as sent, URL-decoded, and its bare signature. */
function authorizationForms(value: string): string[] {
  const decoded = decodeURIComponent(value);
  const signature = /sig=([^&]+)/.exec(decoded)?.[1];
  return [value, decoded, ...(signature !== undefined && signature.length >= 16 ? [signature] : [])];
}

describe("security", function () {
  this.timeout(30_000);
  const fixture = useEmulator({
    database,
    container: containerId,
    items: Array.from({ length: 4 }, (_, index) => ({ id: String(index), pk: `pk-${index % 2}`, value: index })),
  });
  let emulator: Emulator;
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  before(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
  });

  after(function () {
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  describe("per-request control headers never reach the wire", function () {
    /** A pipeline holding one policy alone, as a core-client user would add it, over the real transport. */
    function alone(policy: PipelinePolicy): HttpClient {
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(policy);
      const transport = createDefaultHttpClient();
      return { sendRequest: (request) => pipeline.sendRequest(transport, request) };
    }

    const configurations: ReadonlyArray<{ name: string; httpClient: () => HttpClient | undefined; hedging?: HedgingOptions }> = [
      { name: "withHedging, every kind of hedging on", httpClient: () => undefined, hedging: { crossRegion: { threshold: 20 }, metadata: { threshold: 20 } } },
      { name: "withHedging, hedging off", httpClient: () => undefined, hedging: { crossRegion: false, metadata: false } },
      { name: "crossRegionHedgingPolicy alone", httpClient: () => alone(crossRegionHedgingPolicy({ threshold: 20 })) },
      { name: "metadataHedgingPolicy alone", httpClient: () => alone(metadataHedgingPolicy({ enabled: true, threshold: 20 })) },
      { name: "excludedRegionsPolicy alone", httpClient: () => alone(excludedRegionsPolicy()) },
    ];

    const expectedKinds: readonly OperationKind[] = [
      "accountRead",
      "collectionRead",
      "partitionKeyRangeReadFeed",
      "pointRead",
      "query",
      "changeFeed",
      "create",
      "upsert",
      "replace",
      "patch",
      "delete",
      "batch",
    ];

    for (const configuration of configurations) {
      it(`${configuration.name}: reads, queries, writes and metadata reads carry none to any region`, async function () {
        const own = configuration.httpClient();
        const options =
          own !== undefined
            ? { endpoint: emulator.endpoint, key: emulator.key, httpClient: own, connectionPolicy: { preferredLocations } }
            : withHedging({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations } }, configuration.hedging);
        const client = createTestClient(emulator, options);
        emulator.resetCounters();
        // Slow reads in the preferred region, so that hedges (copies of the requests) go out too.
        emulator.region("West US").addFault({ operations: ["pointRead", "query", "collectionRead", "partitionKeyRangeReadFeed"], delayMs: 60 });
        const controls = hedgingRequestOptions({ excludedRegions: ["North Europe"], hedging: { threshold: 10, thresholdStep: 10 } });
        const off = hedgingRequestOptions({ hedging: false });
        try {
          const container = client.database(database).container(containerId);
          await client.getDatabaseAccount(controls);
          await container.read(controls);
          await container.readPartitionKeyRanges(controls).fetchAll();
          await container.item("0", "pk-0").read(controls);
          await container.item("1", "pk-1").read(hedgingRequestOptions({ region: "East US" }));
          await container.items.query("SELECT * FROM c", hedgingRequestOptions({ excludedRegions: ["North Europe"] }, { maxItemCount: 2 })).fetchAll();
          await container.items.query("SELECT * FROM c WHERE c.pk = 'pk-0'", { ...off, partitionKey: "pk-0" }).fetchAll();
          await container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("pk-0") }).readNext();
          const suffix = configuration.name.replace(/\W+/g, "-");
          await container.items.create({ id: `created-${suffix}`, pk: "pk-0" }, controls);
          await container.items.upsert({ id: `upserted-${suffix}`, pk: "pk-0" }, off);
          await container.item("2", "pk-0").replace({ id: "2", pk: "pk-0", value: 2 }, controls);
          await container.item("2", "pk-0").patch([{ op: "set", path: "/patched", value: true }], controls);
          await container.item(`created-${suffix}`, "pk-0").delete(controls);
          await container.items.batch([{ operationType: "Create", resourceBody: { id: `batched-${suffix}`, pk: "pk-1" } }], "pk-1", controls);
        } finally {
          client.dispose();
        }
        const seen = emulator.regions.flatMap((region) => region.requests);
        for (const kind of expectedKinds) assert.ok(seen.some((request) => request.kind === kind), `a ${kind} reached the emulator`);
        const leaked = seen.flatMap((request) =>
          Object.keys(request.headers)
            .filter((name) => name.startsWith(controlHeaderPrefix))
            .map((name) => `${request.kind}: ${name}`),
        );
        assert.deepEqual(leaked, []);
      });
    }
  });

  describe("no authorization value, key or token in diagnostics, logs or errors", function () {
    let logs: LogCapture;

    beforeEach(function () {
      logs = captureAzureLogs("verbose");
    });

    afterEach(function () {
      logs.restore();
    });

    it("with a master key, across hedged successes, failures, aborts and injected faults, metadata reads and writes included", async function () {
      const exposure = new Exposure();
      const options = withHedging(
        { endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations, requestTimeout: 600 } },
        { crossRegion: { threshold: 20, thresholdStep: 20 }, metadata: { threshold: 20 }, onDiagnostics: (record) => exposure.diagnostics(record) },
      );
      const hedging = options.httpClient as HedgingHttpClient;
      const faults = faultInjectionPolicy({ regions: hedging.regions, rules: [], seed: 3 });
      hedging.pipeline.addPolicy(faults, { afterPhase: "Sign" });
      const client = createTestClient(emulator, options);
      try {
        emulator.resetCounters();
        const container: Container = client.database(database).container(containerId);
        // A cold client with slow metadata in the preferred region: the Collection and PartitionKeyRange reads hedge.
        emulator.region("West US").addFault({ operations: ["collectionRead", "partitionKeyRangeReadFeed"], delayMs: 200, count: 4 });
        await expose(exposure, () => container.items.query("SELECT * FROM c").fetchAll());
        // A hedged success.
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 300, count: 1 });
        await expose(exposure, () => container.item("0", "pk-0").read());
        // Final failures: a missing item, a conflicting create.
        await expose(exposure, () => container.item("missing", "pk-0").read());
        await expose(exposure, () => container.items.create({ id: "0", pk: "pk-0" }));
        // Every region failing.
        for (const region of emulator.regions) region.addFault({ operations: ["pointRead"], status: 503, count: 3 });
        await expose(exposure, () => container.item("1", "pk-1").read());
        emulator.clearFaults();
        // An abort while hedges are in flight.
        for (const region of emulator.regions) region.addFault({ operations: ["pointRead"], delayMs: 400, count: 1 });
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 60);
        await expose(exposure, () => container.item("2", "pk-0").read({ abortSignal: controller.signal }));
        emulator.clearFaults();
        // Injected faults: a synthetic 503, a reset and a timeout, on reads and on a write.
        faults.addRule({ region: "West US", operations: ["pointRead"], result: { status: 503, subStatus: 3 }, count: 1 });
        faults.addRule({ region: "East US", operations: ["pointRead"], connectionReset: true, count: 1 });
        faults.addRule({ region: "North Europe", operations: ["pointRead"], timeout: true, count: 1 });
        await expose(exposure, () => container.item("3", "pk-1").read());
        faults.clearRules();
        faults.addRule({ operations: ["create"], connectionReset: true, count: 1 });
        await expose(exposure, () => container.items.create({ id: "reset-write", pk: "pk-0" }));
        faults.clearRules();
        faults.addRule({ operations: ["upsert"], timeout: true, count: 1 });
        await expose(exposure, () => container.items.upsert({ id: "timed-out-write", pk: "pk-0" }));
      } finally {
        faults.clearRules();
        client.dispose();
      }

      const authorizations = new Set(
        emulator.regions.flatMap((region) => region.requests.map((request) => request.headers["authorization"]).filter((value): value is string => value !== undefined)),
      );
      assert.ok(authorizations.size > 5, "signed requests reached the service");
      const secrets = [emulator.key, Buffer.from(emulator.key, "base64").toString("utf8"), ...[...authorizations].flatMap(authorizationForms)];
      exposure.texts.push(...logs.lines);
      assert.ok(logs.packageLines().length > 0, "this package logged something at verbose level");
      exposure.assertFreeOf(secrets, "diagnostics, errors and log lines");
      assert.ok(
        exposure.texts.some((text) => text.includes('"hedgeWon":true')) && exposure.texts.some((text) => text.includes('"terminalState":"aborted"')),
        "the scenario covered a hedged success and an abort",
      );
    });

    it("with an AAD or resource token, even when the transport's errors echo the authorization header", async function () {
      const token = "eyJhbGciOiJSUzI1NiJ9.eyJvaWQiOiJzZWNyZXQtdXNlciJ9.c2lnbmF0dXJlLW9mLWEtc2VjcmV0LXRva2Vu";
      const resourceSignature = "cmVzb3VyY2UtdG9rZW4tc2lnbmF0dXJlLXNlY3JldA==";
      const authorizations = [
        encodeURIComponent(`type=aad&ver=1.0&sig=${token}`),
        encodeURIComponent(`type=resource&ver=1.0&sig=${resourceSignature}`),
        `Bearer ${token}`,
      ];
      const regions: readonly RegionEndpoint[] = [
        { name: "East US", endpoint: "https://tok-eastus.documents.azure.com:443/" },
        { name: "West US", endpoint: "https://tok-westus.documents.azure.com:443/" },
        { name: "North Europe", endpoint: "https://tok-northeurope.documents.azure.com:443/" },
      ];
      const exposure = new Exposure();
      const transport = new PlannedTransport({
        plan(request) {
          const auth = request.headers.get("authorization") ?? "";
          const region = regions.findIndex((candidate) => new URL(candidate.endpoint).origin === new URL(request.url).origin);
          if (region === 0) return { status: 200, delayMs: 60 };
          // Transports that echo request headers into their errors exist; the diagnostics must not pass that on.
          if (region === 1) return { error: new RestError(`connect ECONNRESET while sending {"authorization":"${auth}"} authorization: ${auth}`, { code: "ECONNRESET" }), delayMs: 5 };
          return { status: 503, subStatus: 0, delayMs: 5 };
        },
      });
      const client = createHedgingHttpClient({
        httpClient: transport,
        crossRegion: { threshold: 10, thresholdStep: 10, budget: false },
        metadata: { threshold: 10 },
        onDiagnostics: (record) => exposure.diagnostics(record),
      });
      client.regions.setTopology({ readRegions: regions });
      // A hedged point read, a hedged metadata read, and a point read the caller aborts with hedges in flight.
      const cases = [{ path: "dbs/db/colls/c/docs/1" }, { path: "dbs/db/colls/c" }, { path: "dbs/db/colls/c/docs/1", abortAfterMs: 30 }];
      for (const authorization of authorizations) {
        for (const { path, abortAfterMs } of cases) {
          const controller = new AbortController();
          const request = requestTo(regions[0]!, "GET", path, { headers: { authorization }, abortSignal: controller.signal });
          if (abortAfterMs !== undefined) setTimeout(() => controller.abort(), abortAfterMs);
          await expose(exposure, () => client.sendRequest(request));
        }
      }
      exposure.texts.push(...logs.lines);
      assert.ok(exposure.texts.some((text) => text.includes("ECONNRESET")), "the echoing transport error made it into the diagnostics");
      exposure.assertFreeOf([token, resourceSignature, ...authorizations.flatMap(authorizationForms)], "diagnostics, errors and log lines");
    });
  });

  describe("hedges go only to the account's own endpoints, never from https to http", function () {
    const hosts = ["acct-a.documents.azure.com", "acct-b.documents.azure.com", "acct-c.documents.azure.com", "10.1.2.3", "evil.example.com"];
    const endpointArbitrary = fc
      .record({ scheme: fc.constantFrom("https", "http"), host: fc.constantFrom(...hosts), port: fc.constantFrom("", ":443", ":80", ":8081") })
      .map(({ scheme, host, port }) => new URL(`${scheme}://${host}${port}/`).href);

    it("property: every arm's origin is the request's or a topology endpoint's, an unknown host is not hedged, https never goes to http", async function () {
      const scenario = fc.record({
        endpoints: fc.uniqueArray(endpointArbitrary, { minLength: 1, maxLength: 4, selector: (endpoint) => new URL(endpoint).origin }),
        target: fc.oneof(fc.nat(), endpointArbitrary),
        path: fc.constantFrom("dbs/db/colls/c/docs/1", "dbs/db/colls/c", "dbs/db/colls/c/pkranges"),
      });
      let hedgedCases = 0;
      let unknownHostCases = 0;
      await fc.assert(
        fc.asyncProperty(scenario, async ({ endpoints, target, path }) => {
          const regions = endpoints.map((endpoint, index) => ({ name: `Region ${index}`, endpoint }));
          const requestEndpoint = typeof target === "number" ? endpoints[target % endpoints.length]! : target;
          const requestOrigin = new URL(requestEndpoint).origin;
          const topologyOrigins = new Set(endpoints.map((endpoint) => new URL(endpoint).origin));
          const clock = useFakeClock();
          const leaks = new LeakCheck(clock);
          try {
            const transport = new PlannedTransport({ plan: () => ({ status: 200, delayMs: 500 }) });
            const seen: HedgeDiagnostics[] = [];
            const client = createHedgingHttpClient({
              httpClient: transport,
              crossRegion: { threshold: 10, thresholdStep: 10, budget: false },
              metadata: { threshold: 10 },
              onDiagnostics: (record) => seen.push(record),
            });
            client.regions.setTopology({ readRegions: regions });
            const request = requestTo({ name: "target", endpoint: requestEndpoint }, "GET", path, { abortSignal: leaks.controller().signal });
            const pending = client.sendRequest(request);
            await clock.tickAsync(500);
            assert.equal((await pending).status, 200);
            // The losers drain: each answers 500 ms after its launch.
            await clock.tickAsync(500);
            const origins = transport.arms.map((arm) => arm.origin);
            assert.ok(origins.length >= 1);
            if (origins.length > 1) hedgedCases += 1;
            for (const origin of origins) assert.ok(origin === requestOrigin || topologyOrigins.has(origin), `an arm went to ${origin}, which the account does not list`);
            if (requestEndpoint.startsWith("https:")) assert.ok(origins.every((origin) => origin.startsWith("https:")), `an https request went to http: ${origins.join(", ")}`);
            if (!topologyOrigins.has(requestOrigin)) {
              unknownHostCases += 1;
              assert.deepEqual(origins, [requestOrigin], "a request to an unknown host goes there alone");
              assert.equal(seen[0]?.skipReason, "unknownRegion");
            }
            await leaks.verify();
          } finally {
            await leaks.verify().catch(() => undefined);
            clock.restore();
          }
        }),
        { numRuns: 100 },
      );
      assert.ok(hedgedCases > 10 && unknownHostCases > 10, `too few cases hedged (${hedgedCases}) or went to an unknown host (${unknownHostCases})`);
    });

    it("a mixed-scheme account: an https request's hedges skip the http region, and neither routing nor pinning moves it there", async function () {
      const secureEast: RegionEndpoint = { name: "East US", endpoint: "https://mix-eastus.documents.azure.com:443/" };
      const plainWest: RegionEndpoint = { name: "West US", endpoint: "http://mix-westus.documents.azure.com:80/" };
      const secureNorth: RegionEndpoint = { name: "North Europe", endpoint: "https://mix-northeurope.documents.azure.com:443/" };
      const transport = new PlannedTransport({
        plan: (request) => ({ status: 200, delayMs: new URL(request.url).hostname.startsWith("mix-eastus") ? 80 : 5 }),
      });
      const client = createHedgingHttpClient({
        httpClient: transport,
        crossRegion: { threshold: 10, thresholdStep: 10, budget: false },
        metadata: { threshold: 10 },
        preferredRegions: ["East US", "West US", "North Europe"],
      });
      client.regions.setTopology({ readRegions: [secureEast, plainWest, secureNorth], writeRegions: [secureEast, plainWest], multipleWriteLocations: true });

      const send = (path: string, init: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string } = {}) =>
        client.sendRequest(requestTo(secureEast, init.method ?? "GET", path, { ...(init.headers ? { headers: init.headers } : {}), ...(init.body ? { body: init.body } : {}) }));

      const read = await send("dbs/db/colls/c/docs/1");
      assert.equal(getHedgeDiagnostics(read)?.winningRegion, "North Europe");
      const metadata = await send("dbs/db/colls/c");
      assert.equal(getHedgeDiagnostics(metadata)?.hedgeWon, true);
      const excluded = await send("dbs/db/colls/c/docs/1", { headers: hedgingRequestOptions({ excludedRegions: ["East US", "North Europe"] }).initialHeaders });
      assert.equal(excluded.status, 200);
      await assert.rejects(
        send("dbs/db/colls/c/docs/1", { headers: hedgingRequestOptions({ region: "West US" }).initialHeaders }),
        (error: unknown) => error instanceof RangeError && /another scheme/.test(error.message),
      );
      const onlyPlainLeft = createHedgingHttpClient({ httpClient: transport, crossRegion: { threshold: 10, budget: false } });
      onlyPlainLeft.regions.setTopology({ readRegions: [secureEast, plainWest] });
      const single = await onlyPlainLeft.sendRequest(requestTo(secureEast, "GET", "dbs/db/colls/c/docs/1"));
      assert.equal(getHedgeDiagnostics(single)?.skipReason, "singleRegion");

      const plainOrigin = new URL(plainWest.endpoint).origin;
      assert.deepEqual(
        transport.arms.filter((arm) => arm.origin === plainOrigin || arm.request.url.startsWith("http:")).map((arm) => arm.request.url),
        [],
        "no https request was ever sent over http",
      );
    });

    it("through the real CosmosClient: a request to a host the account does not list is sent there alone, never hedged", async function () {
      const alias = await startAlias(emulator.region("East US").endpoint, 150);
      const client = new CosmosClient(
        withHedging(
          {
            endpoint: alias.endpoint,
            key: emulator.key,
            // Without endpoint discovery, @azure/cosmos sends everything to the endpoint it was given: a host the topology does not list.
            connectionPolicy: { enableEndpointDiscovery: false, enableBackgroundEndpointRefreshing: false, preferredLocations },
          },
          { crossRegion: { threshold: 20 }, metadata: { threshold: 20 } },
        ),
      );
      try {
        const container = client.database(database).container(containerId);
        await container.read();
        emulator.resetCounters();
        const response = await container.item("0", "pk-0").read();
        assert.equal(response.statusCode, 200);
        assert.equal(getHedgeDiagnostics(response.headers)?.skipReason, "unknownRegion");
        assert.equal(emulator.region("West US").count(), 0);
        assert.equal(emulator.region("North Europe").count(), 0);
        assert.equal(emulator.region("East US").count("pointRead"), 1, "the read went through the alias alone");
      } finally {
        client.dispose();
        await alias.close();
      }
    });
  });
});

/** A loopback HTTP forwarder in front of one regional endpoint: a host name the account's topology does not list. */
async function startAlias(target: string, delayMs: number): Promise<{ endpoint: string; close(): Promise<void> }> {
  const targetUrl = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      const upstream = http.request(
        { host: targetUrl.hostname, port: targetUrl.port, method: req.method, path: req.url, headers: req.headers, agent },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    }, delayMs);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        agent.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
