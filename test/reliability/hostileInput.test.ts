import assert from "node:assert/strict";
import type { Container, CosmosClient } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/topology/regionCache.js";
import type { AccountTopology } from "../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { HedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { hedgingRequestOptions, withRequestHedgingOptions } from "../../src/client/requestOptions.js";
import { withHedging } from "../../src/client/withHedging.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import { masterKeySigner } from "../../src/cosmos/masterKeySigner.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { excludedRegionsPolicy } from "../../src/policies/excludedRegionsPolicy.js";
import { faultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import { metadataHedgingPolicy } from "../../src/policies/metadataHedgingPolicy.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { requestTo } from "../support/hedgingFixtures.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { PlannedTransport } from "../support/plannedTransport.js";

const preferredLocations = ["West US", "East US", "North Europe"];
const database = "hostile";
const containerId = "items";

/** How an error message should show a bad value; `undefined` where only its kind can be named. */
function rendering(value: unknown): string | RegExp {
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return /array/;
  return typeof value === "function" ? /function/ : /object/;
}

/** Whether text holds a raw CR, LF, NUL or another C0 control character, as a forged header or log line would. */
function hasControlCharacter(text: string): boolean {
  return [...text].some((char) => char.charCodeAt(0) < 0x20 || char === "\u007f");
}

function assertNamedError(run: () => unknown, option: string, value: unknown, label: string): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof TypeError || error instanceof RangeError, `${label}: a TypeError or RangeError, not ${String(error)}`);
    assert.ok(error.message.includes(option), `${label}: the message names ${option}: ${error.message}`);
    const shown = rendering(value);
    if (typeof shown === "string") assert.ok(error.message.includes(shown), `${label}: the message shows ${shown}: ${error.message}`);
    else assert.match(error.message, shown, label);
    assert.ok(!hasControlCharacter(error.message), `${label}: no raw control character in the message`);
    return true;
  });
}

describe("hostile input", function () {
  this.timeout(30_000);
  const fixture = useEmulator({ database, container: containerId, items: [{ id: "1", pk: "a", value: 1 }], preferredLocations });
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  before(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
  });

  after(function () {
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  describe("malformed database-account bodies", function () {
    let client: CosmosClient;
    let container: Container;
    let hedging: HedgingHttpClient;
    let known: AccountTopology;
    /** When set, replaces the body of every database-account response: the emulator itself only serves JSON. */
    let rawAccountBody: string | undefined;

    before(async function () {
      const base = createDefaultHttpClient();
      const rewriting: HttpClient = {
        async sendRequest(request) {
          const response = await base.sendRequest(request);
          if (rawAccountBody !== undefined && request.method === "GET" && new URL(request.url).pathname === "/") response.bodyAsText = rawAccountBody;
          return response;
        },
      };
      // A threshold far above a healthy read's latency: every read below that must hedge only where a fault makes it slow.
      const made = await fixture.client({ httpClient: rewriting, hedging: { crossRegion: { threshold: 1000 }, metadata: true }, warmUp: { id: "1", pk: "a" } });
      ({ client, container } = made);
      hedging = made.hedging!;
      assert.ok(hedging.regions.topology !== undefined, "the topology was learned from the account");
      known = hedging.regions.topology;
    });

    afterEach(function () {
      rawAccountBody = undefined;
    });

    /** Serves `body` once on the next account read, has the SDK read the account, and returns our warnings. */
    async function serveAccountBody(body: { json: unknown } | { raw: string }): Promise<string[]> {
      if ("raw" in body) rawAccountBody = body.raw;
      else fixture.emulator.region("East US").addFault({ operations: ["accountRead"], body: body.json, count: 1 });
      const logs = captureAzureLogs("warning");
      try {
        // @azure/cosmos may reject the body itself; what matters is what the hedging policies make of it.
        await client.getDatabaseAccount().catch(() => undefined);
      } finally {
        logs.restore();
        rawAccountBody = undefined;
      }
      return logs.packageLines();
    }

    /** The next read succeeds in the region the SDK chose, and its diagnostics know that region. */
    async function assertNextReadRoutedAsBefore(): Promise<void> {
      const { emulator } = fixture;
      emulator.resetCounters();
      const response = await container.item("1", "a").read();
      assert.equal(response.statusCode, 200);
      assert.equal(response.resource?.["value"], 1);
      const diagnostics = getHedgeDiagnostics(response.headers);
      assert.equal(diagnostics?.primaryRegion, "West US");
      assert.equal(diagnostics?.winningRegion, "West US");
      assert.equal(emulator.region("West US").count("pointRead"), 1);
      assert.equal(emulator.count("pointRead"), 1, "the read went nowhere else");
    }

    const locationsOf = (count: number, endpoint: (index: number) => string) =>
      Array.from({ length: count }, (_, index) => ({ name: `Region ${index}`, databaseAccountEndpoint: endpoint(index) }));
    const oneLocation = (databaseAccountEndpoint: unknown) => [{ name: "Elsewhere", databaseAccountEndpoint }];

    const cases: ReadonlyArray<{ name: string; body: { json: unknown } | { raw: string }; secret?: string }> = [
      { name: "not JSON", body: { raw: "<html><body>502 Bad Gateway</body></html>" } },
      { name: "truncated JSON", body: { raw: '{"readableLocations":[{"name":"West US","databaseAccountEndpoint":"http' } },
      { name: "a JSON string", body: { json: "a string" } },
      { name: "JSON null", body: { json: null } },
      { name: "a JSON array", body: { json: [{ readableLocations: [] }] } },
      { name: "readableLocations as a string", body: { json: { readableLocations: "West US", writableLocations: "East US" } } },
      { name: "a location that is a number", body: { json: { readableLocations: [5], writableLocations: [5] } } },
      { name: "a location name that is a number", body: { json: { readableLocations: [{ name: 7, databaseAccountEndpoint: "http://127.0.0.1:1/" }], writableLocations: [] } } },
      { name: "an endpoint that is a number", body: { json: { readableLocations: oneLocation(443), writableLocations: oneLocation(443) } } },
      { name: "empty location lists", body: { json: { readableLocations: [], writableLocations: [] } } },
      { name: "no writable locations", body: { json: { readableLocations: oneLocation("http://127.0.0.1:1/") } } },
      {
        name: "thousands of locations",
        body: { json: { readableLocations: locationsOf(5000, (index) => `http://127.0.0.1:${1024 + index}/`), writableLocations: oneLocation("http://127.0.0.1:1/") } },
      },
      { name: "an ftp endpoint", body: { json: { readableLocations: oneLocation("ftp://127.0.0.1:21/"), writableLocations: oneLocation("ftp://127.0.0.1:21/") } } },
      { name: "a file endpoint", body: { json: { readableLocations: oneLocation("file:///etc/passwd"), writableLocations: oneLocation("file:///etc/passwd") } } },
      { name: "a javascript endpoint", body: { json: { readableLocations: oneLocation("javascript:alert(1)"), writableLocations: oneLocation("javascript:alert(1)") } } },
      { name: "a relative endpoint", body: { json: { readableLocations: oneLocation("/dbs"), writableLocations: oneLocation("/dbs") } } },
      {
        name: "an endpoint with credentials",
        body: {
          json: { readableLocations: oneLocation("http://admin:hunter2-secret@127.0.0.1:1/"), writableLocations: oneLocation("http://admin:hunter2-secret@127.0.0.1:1/") },
        },
        secret: "hunter2-secret",
      },
    ];

    for (const { name, body, secret } of cases) {
      it(`${name}: the previous topology stays, with a warning, and the next read still goes to the right region`, async function () {
        const warnings = await serveAccountBody(body);
        assert.deepEqual(hedging.regions.topology, known, "the topology is unchanged");
        assert.ok(
          warnings.some((line) => /malformed database-account response/.test(line)),
          `a warning says the body was ignored: ${JSON.stringify(warnings)}`,
        );
        if (secret !== undefined) assert.ok(warnings.every((line) => !line.includes(secret)), "the warning does not repeat the credentials");
        await assertNextReadRoutedAsBefore();
      });
    }

    it("flags of the wrong type: a warning, the flag taken as false, and the regions kept", async function () {
      const { emulator } = fixture;
      const location = (region: { name: string; endpoint: string }) => ({ name: region.name, databaseAccountEndpoint: region.endpoint });
      const warnings = await serveAccountBody({
        json: {
          readableLocations: emulator.regions.map(location),
          writableLocations: [location(emulator.regions[0]!)],
          enableMultipleWriteLocations: "yes",
          enablePerPartitionFailoverBehavior: 1,
          disableCrossRegionalHedging: "true",
        },
      });
      const topology = hedging.regions.topology;
      assert.deepEqual(topology?.readRegions, known.readRegions);
      assert.deepEqual(topology?.writeRegions, known.writeRegions);
      assert.equal(topology?.multipleWriteLocations, false);
      assert.equal(topology?.crossRegionalHedgingDisabled, false);
      for (const field of ["enableMultipleWriteLocations", "enablePerPartitionFailoverBehavior", "disableCrossRegionalHedging"]) {
        assert.ok(warnings.some((line) => line.includes(field)), `a warning names ${field}`);
      }
      await assertNextReadRoutedAsBefore();
    });

    it("after all of them, a read whose region is slow is still hedged to the next preferred region", async function () {
      fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 10_000, count: 1 });
      const response = await container.item("1", "a").read();
      assert.equal(response.statusCode, 200);
      const diagnostics = getHedgeDiagnostics(response.headers);
      assert.equal(diagnostics?.hedgeWon, true);
      assert.equal(diagnostics?.winningRegion, "East US");
    });
  });

  describe("region names with CR or LF in the database-account body", function () {
    it("never put a raw line break into a log line, and requests still succeed", async function () {
      const east = { name: "East US", endpoint: "https://crlf-eastus.documents.azure.com:443/" };
      const forgedName = "West US\r\nazure:cosmos-hedging:warning forged log line";
      const west = { name: forgedName, endpoint: "https://crlf-westus.documents.azure.com:443/" };
      const account = JSON.stringify({
        readableLocations: [east, west].map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint })),
        writableLocations: [{ name: east.name, databaseAccountEndpoint: east.endpoint }],
      });
      const transport = new PlannedTransport({ plan: (request) => (new URL(request.url).pathname === "/" ? { status: 200, body: account } : { status: 200 }) });
      const client = createHedgingHttpClient({ httpClient: transport, crossRegion: { threshold: 10 }, metadata: { threshold: 10 } });
      const logs = captureAzureLogs("verbose");
      try {
        await client.sendRequest(requestTo(east, "GET", ""));
        // Excluding the region the SDK chose re-points the read at the other one, which the policies log by name.
        client.regions.setExcludedRegions(["East US"]);
        const response = await client.sendRequest(requestTo(east, "GET", "dbs/db/colls/c/docs/1"));
        assert.equal(response.status, 200);
      } finally {
        logs.restore();
      }
      assert.ok(logs.packageLines().length > 0, "the policies logged");
      assert.deepEqual(
        logs.lines.filter(hasControlCharacter),
        [],
        "a region name from the service must not be able to forge log lines",
      );
    });
  });

  describe("control-header values with CR or LF", function () {
    let container: Container;

    before(async function () {
      ({ container } = await fixture.client({ hedging: { crossRegion: { threshold: 1000 } }, warmUp: { id: "1", pk: "a" } }));
    });

    const badValues = ["West US\r\nx-injected: 1", "West US\n", "\rWest US", "West\u0000US"];

    for (const value of badValues) {
      it(`hedgingRequestOptions rejects ${JSON.stringify(value)} with a TypeError before anything is sent`, async function () {
        const { emulator } = fixture;
        const attempts: Array<[string, () => Promise<unknown>]> = [
          ["region", () => container.item("1", "a").read(hedgingRequestOptions({ region: value }))],
          ["excludedRegions[1]", () => container.item("1", "a").read(hedgingRequestOptions({ excludedRegions: ["North Europe", value] }))],
          ["region", () => container.items.query("SELECT * FROM c", hedgingRequestOptions({ region: value }, { maxItemCount: 1 })).fetchAll()],
          ["region", () => withRequestHedgingOptions({ region: value }, () => container.item("1", "a").read())],
        ];
        for (const [option, attempt] of attempts) {
          await assert.rejects(async () => attempt(), (error: unknown) => {
            assert.ok(error instanceof TypeError, `a TypeError, not ${String(error)}`);
            assert.ok(error.message.includes(option), error.message);
            assert.match(error.message, /CR, LF/);
            assert.ok(!hasControlCharacter(error.message), "the message carries no raw control character");
            return true;
          });
        }
        assert.equal(emulator.count(), 0, "nothing reached any region");
      });
    }

    it("a hand-made control header with CR/LF is dropped with a warning, never reaches the wire, and the read succeeds", async function () {
      const { emulator } = fixture;
      const logs = captureAzureLogs("warning");
      try {
        for (const header of ["x-cosmos-hedging-region", "x-cosmos-hedging-excluded-regions", "x-cosmos-hedging", "X-Cosmos-Hedging-Region"]) {
          const response = await container.item("1", "a").read({ initialHeaders: { [header]: '"East US"\r\nx-injected: 1' } });
          assert.equal(response.statusCode, 200, header);
        }
      } finally {
        logs.restore();
      }
      const onTheWire = emulator.regions.flatMap((region) => region.requests.flatMap((request) => Object.keys(request.headers)));
      assert.deepEqual(onTheWire.filter((name) => name.startsWith("x-cosmos-hedging") || name === "x-injected"), []);
      assert.ok(logs.packageLines().some((line) => line.includes("x-cosmos-hedging-region")), "the garbage header was reported");
      assert.ok(!logs.lines.some(hasControlCharacter), "no log line carries the raw CR/LF");
    });
  });

  describe("options of every public factory", function () {
    const numbers: readonly unknown[] = [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "100", true, {}, [], () => 1];
    const topology = { readRegions: [{ name: "East US", endpoint: "https://acct-eastus.documents.azure.com/" }] };

    const table: ReadonlyArray<{ factory: string; option: string; values: readonly unknown[]; make: (value: any) => unknown }> = [
      { factory: "crossRegionHedgingPolicy", option: "threshold", values: [...numbers, null], make: (threshold) => crossRegionHedgingPolicy({ threshold }) },
      { factory: "crossRegionHedgingPolicy", option: "thresholdStep", values: [...numbers, null], make: (thresholdStep) => crossRegionHedgingPolicy({ thresholdStep }) },
      { factory: "crossRegionHedgingPolicy", option: "requestTimeout", values: numbers, make: (requestTimeout) => crossRegionHedgingPolicy({ requestTimeout }) },
      { factory: "crossRegionHedgingPolicy", option: "enabled", values: ["yes", 1, null, {}], make: (enabled) => crossRegionHedgingPolicy({ enabled }) },
      { factory: "crossRegionHedgingPolicy", option: "enableMultiWriteRegionHedge", values: ["true", 1, null], make: (flag) => crossRegionHedgingPolicy({ enableMultiWriteRegionHedge: flag }) },
      { factory: "crossRegionHedgingPolicy", option: "signer", values: ["sign", 5, {}], make: (signer) => crossRegionHedgingPolicy({ signer }) },
      { factory: "crossRegionHedgingPolicy", option: "onDiagnostics", values: ["log", 5, {}], make: (onDiagnostics) => crossRegionHedgingPolicy({ onDiagnostics }) },
      { factory: "crossRegionHedgingPolicy", option: "regions", values: [{}, "East US", 5], make: (regions) => crossRegionHedgingPolicy({ regions }) },
      { factory: "crossRegionHedgingPolicy", option: "options", values: ["x", 5, null, []], make: (options) => crossRegionHedgingPolicy(options) },
      { factory: "metadataHedgingPolicy", option: "threshold", values: [...numbers, null], make: (threshold) => metadataHedgingPolicy({ threshold }) },
      { factory: "metadataHedgingPolicy", option: "threshold", values: [60_000, 90_000], make: (threshold) => metadataHedgingPolicy({ threshold }) },
      { factory: "metadataHedgingPolicy", option: "requestTimeout", values: numbers, make: (requestTimeout) => metadataHedgingPolicy({ requestTimeout }) },
      { factory: "metadataHedgingPolicy", option: "maxConcurrentHedges", values: [...numbers, 1.5], make: (maxConcurrentHedges) => metadataHedgingPolicy({ maxConcurrentHedges }) },
      { factory: "metadataHedgingPolicy", option: "enabled", values: ["true", 1, null], make: (enabled) => metadataHedgingPolicy({ enabled }) },
      { factory: "metadataHedgingPolicy", option: "signer", values: ["sign", 5], make: (signer) => metadataHedgingPolicy({ signer }) },
      { factory: "metadataHedgingPolicy", option: "onDiagnostics", values: ["log", 5], make: (onDiagnostics) => metadataHedgingPolicy({ onDiagnostics }) },
      { factory: "metadataHedgingPolicy", option: "regions", values: [{}, "East US"], make: (regions) => metadataHedgingPolicy({ regions }) },
      { factory: "metadataHedgingPolicy", option: "options", values: ["x", 5, null, []], make: (options) => metadataHedgingPolicy(options) },
      { factory: "excludedRegionsPolicy", option: "regions", values: [{}, "East US", 5], make: (regions) => excludedRegionsPolicy({ regions }) },
      { factory: "excludedRegionsPolicy", option: "options", values: ["x", 5, null, []], make: (options) => excludedRegionsPolicy(options) },
      { factory: "faultInjectionPolicy", option: "rules[0].delayMs", values: [-1, Number.NaN, Number.POSITIVE_INFINITY, "100", null, {}], make: (delayMs) => faultInjectionPolicy({ rules: [{ delayMs }] }) },
      { factory: "faultInjectionPolicy", option: "rules[0].responseDelayMs", values: [-1, Number.NaN, Number.POSITIVE_INFINITY, "100"], make: (responseDelayMs) => faultInjectionPolicy({ rules: [{ responseDelayMs }] }) },
      { factory: "faultInjectionPolicy", option: "rules[0].probability", values: [-0.1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "0.5"], make: (probability) => faultInjectionPolicy({ rules: [{ delayMs: 1, probability }] }) },
      { factory: "faultInjectionPolicy", option: "rules[0].count", values: [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "1"], make: (count) => faultInjectionPolicy({ rules: [{ delayMs: 1, count }] }) },
      { factory: "faultInjectionPolicy", option: "rules[0].result.status", values: [99, 600, 503.5, Number.NaN, "503"], make: (status) => faultInjectionPolicy({ rules: [{ result: { status } }] }) },
      { factory: "faultInjectionPolicy", option: "rules[0].result.subStatus", values: [-1, 1.5, Number.NaN, "3"], make: (subStatus) => faultInjectionPolicy({ rules: [{ result: { status: 503, subStatus } }] }) },
      { factory: "faultInjectionPolicy", option: "seed", values: [1.5, Number.NaN, Number.POSITIVE_INFINITY, "1"], make: (seed) => faultInjectionPolicy({ rules: [], seed }) },
      { factory: "faultInjectionPolicy", option: "enabled", values: ["yes", 1], make: (enabled) => faultInjectionPolicy({ rules: [], enabled }) },
      { factory: "faultInjectionPolicy", option: "rules", values: ["x", 5, null, {}], make: (rules) => faultInjectionPolicy({ rules }) },
      { factory: "faultInjectionPolicy", option: "options", values: [null, "x", 5], make: (options) => faultInjectionPolicy(options) },
      { factory: "createHedgingHttpClient", option: "threshold", values: [...numbers, null], make: (threshold) => createHedgingHttpClient({ crossRegion: { threshold } }) },
      { factory: "createHedgingHttpClient", option: "thresholdStep", values: numbers, make: (thresholdStep) => createHedgingHttpClient({ crossRegion: { thresholdStep } }) },
      { factory: "createHedgingHttpClient", option: "threshold", values: numbers, make: (threshold) => createHedgingHttpClient({ metadata: { threshold } }) },
      { factory: "createHedgingHttpClient", option: "maxConcurrentHedges", values: numbers, make: (maxConcurrentHedges) => createHedgingHttpClient({ metadata: { maxConcurrentHedges } }) },
      { factory: "createHedgingHttpClient", option: "requestTimeout", values: numbers, make: (requestTimeout) => createHedgingHttpClient({ requestTimeout }) },
      { factory: "createHedgingHttpClient", option: "crossRegion", values: ["fast", 5, null], make: (crossRegion) => createHedgingHttpClient({ crossRegion }) },
      { factory: "createHedgingHttpClient", option: "metadata", values: ["on", 5, null], make: (metadata) => createHedgingHttpClient({ metadata }) },
      { factory: "createHedgingHttpClient", option: "preferredRegions", values: ["West US", 5, null], make: (preferredRegions) => createHedgingHttpClient({ preferredRegions }) },
      { factory: "createHedgingHttpClient", option: "preferredRegions[1]", values: [5, "", null], make: (name) => createHedgingHttpClient({ preferredRegions: ["West US", name] }) },
      { factory: "createHedgingHttpClient", option: "excludedRegions", values: ["West US", 5], make: (excludedRegions) => createHedgingHttpClient({ excludedRegions }) },
      { factory: "createHedgingHttpClient", option: "httpClient", values: [{}, 5, "x"], make: (httpClient) => createHedgingHttpClient({ httpClient }) },
      { factory: "createHedgingHttpClient", option: "signer", values: [5, "x"], make: (signer) => createHedgingHttpClient({ signer }) },
      { factory: "createHedgingHttpClient", option: "onDiagnostics", values: [5, "x"], make: (onDiagnostics) => createHedgingHttpClient({ onDiagnostics }) },
      { factory: "createHedgingHttpClient", option: "options", values: ["x", 5, null], make: (options) => createHedgingHttpClient(options) },
      { factory: "withHedging", option: "cosmosClientOptions", values: ["x", 5, null], make: (options) => withHedging(options) },
      { factory: "withHedging", option: "hedgingOptions", values: ["x", 5, null], make: (options) => withHedging({ endpoint: "https://acct.documents.azure.com/" }, options) },
      {
        factory: "withHedging",
        option: "requestTimeout",
        values: [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, "5000"],
        make: (requestTimeout) => withHedging({ endpoint: "https://acct.documents.azure.com/", connectionPolicy: { requestTimeout } }),
      },
      { factory: "withHedging", option: "threshold", values: numbers, make: (threshold) => withHedging({ endpoint: "https://acct.documents.azure.com/" }, { crossRegion: { threshold } }) },
      { factory: "RegionCache", option: "RegionCache options", values: ["x", 5, null], make: (options) => new RegionCache(options) },
      { factory: "RegionCache", option: "topology", values: ["x", 5, null], make: (value) => new RegionCache({ topology: value }) },
      { factory: "RegionCache", option: "topology.readRegions", values: ["East US", 5, {}], make: (readRegions) => new RegionCache({ topology: { readRegions } }) },
      { factory: "RegionCache", option: "topology.readRegions[0]", values: [5, "East US", null], make: (region) => new RegionCache({ topology: { readRegions: [region] } }) },
      {
        factory: "RegionCache",
        option: "topology.readRegions[0].name",
        values: ["", 5, null],
        make: (name) => new RegionCache({ topology: { readRegions: [{ name, endpoint: "https://acct-eastus.documents.azure.com/" }] } }),
      },
      { factory: "RegionCache", option: "topology.readRegions[0].endpoint", values: [5, "not a url", {}], make: (endpoint) => new RegionCache({ topology: { readRegions: [{ name: "East US", endpoint }] } }) },
      { factory: "RegionCache", option: "topology.writeRegions", values: ["East US", 5], make: (writeRegions) => new RegionCache({ topology: { ...topology, writeRegions } }) },
      { factory: "RegionCache", option: "topology.multipleWriteLocations", values: ["yes", 1, null], make: (flag) => new RegionCache({ topology: { ...topology, multipleWriteLocations: flag } }) },
      { factory: "RegionCache", option: "preferredRegions", values: ["West US", 5], make: (preferredRegions) => new RegionCache({ preferredRegions }) },
      { factory: "RegionCache", option: "excludedRegions", values: ["West US", 5], make: (excludedRegions) => new RegionCache({ excludedRegions }) },
      { factory: "RegionCache.setTopology", option: "topology", values: ["x", null], make: (value) => new RegionCache().setTopology(value) },
      { factory: "RegionCache.setPreferredRegions", option: "preferredRegions", values: ["West US", 5, null], make: (value) => new RegionCache().setPreferredRegions(value) },
      { factory: "RegionCache.setExcludedRegions", option: "excludedRegions", values: ["West US", 5, null], make: (value) => new RegionCache().setExcludedRegions(value) },
      { factory: "hedgingRequestOptions", option: "request hedging options", values: ["x", 5, null, []], make: (options) => hedgingRequestOptions(options) },
      { factory: "hedgingRequestOptions", option: "region", values: [5, "", null, {}], make: (region) => hedgingRequestOptions({ region }) },
      { factory: "hedgingRequestOptions", option: "excludedRegions", values: ["West US", 5, {}], make: (excludedRegions) => hedgingRequestOptions({ excludedRegions }) },
      { factory: "hedgingRequestOptions", option: "excludedRegions[0]", values: [5, "", null], make: (name) => hedgingRequestOptions({ excludedRegions: [name] }) },
      { factory: "hedgingRequestOptions", option: "hedging", values: [true, "off", null, 5], make: (hedging) => hedgingRequestOptions({ hedging }) },
      { factory: "hedgingRequestOptions", option: "hedging.threshold", values: [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, "5", null], make: (threshold) => hedgingRequestOptions({ hedging: { threshold } }) },
      { factory: "hedgingRequestOptions", option: "hedging.thresholdStep", values: [-1, Number.NaN, Number.NEGATIVE_INFINITY, "5"], make: (thresholdStep) => hedgingRequestOptions({ hedging: { thresholdStep } }) },
      { factory: "hedgingRequestOptions", option: "requestOptions", values: ["x", 5, null], make: (requestOptions) => hedgingRequestOptions({}, requestOptions) },
      { factory: "withRequestHedgingOptions", option: "fn", values: ["x", 5, null], make: (fn) => withRequestHedgingOptions({}, fn) },
    ];

    for (const factory of new Set(table.map((row) => row.factory))) {
      const rows = table.filter((row) => row.factory === factory);
      it(`${factory}: every bad ${[...new Set(rows.map((row) => row.option))].join(", ")} is a TypeError or RangeError naming the option and the value`, function () {
        for (const { option, values, make } of rows) {
          for (const value of values) assertNamedError(() => make(value), option, value, `${factory} ${option}=${String(value)}`);
        }
      });
    }

    it("masterKeySigner: a bad key is a TypeError naming the key but never repeating it", function () {
      for (const key of ["", "   ", "not base64!", "c2VjcmV0LWtleQ==tail", 5, null, {}]) {
        assert.throws(
          () => masterKeySigner(key as string),
          (error: unknown) => {
            assert.ok(error instanceof TypeError);
            assert.match(error.message, /\bkey\b/);
            if (typeof key === "string" && key.trim() !== "") assert.ok(!error.message.includes(key.trim()), "the key is not in the message");
            return true;
          },
        );
      }
    });

    it("unknown option names are rejected by name where the shape is closed", function () {
      assertNamedError(() => hedgingRequestOptions({ regoin: "West US" } as never), "regoin", "regoin", "hedgingRequestOptions");
      assertNamedError(() => hedgingRequestOptions({ hedging: { treshold: 5 } } as never), "treshold", "treshold", "hedgingRequestOptions hedging");
      assertNamedError(() => faultInjectionPolicy({ rules: [{ delayMs: 1, regoin: "x" }] } as never), "regoin", "regoin", "faultInjectionPolicy rule");
      assertNamedError(() => faultInjectionPolicy({ rules: [], sed: 1 } as never), "sed", "sed", "faultInjectionPolicy options");
    });
  });

  describe(`garbage in ${metadataHedgingEnvironmentVariable}`, function () {
    const garbage = ["1", "yes", "enabled", "true false", "tru\u0000e", "false\r\nx-injected: 1", "x".repeat(500)];

    afterEach(function () {
      delete process.env[metadataHedgingEnvironmentVariable];
    });

    for (const value of garbage) {
      it(`${JSON.stringify(value.slice(0, 24))}: a warning naming the variable, and a cold client's first read still succeeds`, async function () {
        process.env[metadataHedgingEnvironmentVariable] = value;
        // From before the client exists: the value is warned about when the client is created.
        const logs = captureAzureLogs("warning");
        const { container } = await fixture.client({ hedging: { metadata: { threshold: 1000 } } });
        try {
          // A Collection read: the metadata policy considers it, and so reads the switch.
          assert.equal((await container.read()).statusCode, 200);
          const response = await container.item("1", "a").read();
          assert.equal(response.statusCode, 200);
          assert.equal(response.resource?.["value"], 1);
        } finally {
          logs.restore();
        }
        const warnings = logs.packageLines().filter((line) => line.includes(metadataHedgingEnvironmentVariable));
        assert.equal(warnings.length, 1, `one warning: ${JSON.stringify(logs.packageLines())}`);
        assert.match(warnings[0] ?? "", /"true" and "false"/);
        assert.ok(!hasControlCharacter(warnings[0] ?? ""), "the raw value's control characters stay escaped");
        assert.ok((warnings[0] ?? "").length < 400, "a long value is cut short");
      });
    }
  });
});
