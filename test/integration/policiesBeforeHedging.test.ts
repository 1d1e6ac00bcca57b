import assert from "node:assert/strict";
import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const preferredLocations = ["West US", "East US", "North Europe"];
/** Far beyond the threshold: only a hedge answers before it. */
const slowMs = 800;
const threshold = 150;

/** Freezes the request and every object it holds under a symbol key (metadata another library hung on it). */
function deepFreeze(request: PipelineRequest): PipelineRequest {
  for (const key of Object.getOwnPropertySymbols(request)) {
    const value = (request as unknown as Record<symbol, unknown>)[key];
    if (typeof value === "object" && value !== null) Object.freeze(value);
  }
  return Object.freeze(request);
}

/** What a caller's policy placed before the hedging layer does to each request it passes on. */
const policies: ReadonlyArray<readonly [string, PipelinePolicy["sendRequest"], "hedged" | "unhedged"]> = [
  ["freezes it", (request, next) => next(Object.freeze(request)), "hedged"],
  ["freezes it and what it holds", (request, next) => next(deepFreeze(request)), "hedged"],
  ["seals it", (request, next) => next(Object.seal(request)), "hedged"],
  // Another object than the SDK's: its options stayed with the original, so it must not be hedged anywhere.
  ["passes a proxy of it on", (request, next) => next(new Proxy(request, {})), "unhedged"],
  ["passes a spread copy of it on", (request, next) => next({ ...request }), "unhedged"],
];

/**
 * A policy of the caller's before the hedging layer that freezes, seals,
 * proxies or copies each request, through the real CosmosClient beside a
 * plain one with the same policy over the default transport (from a hostile
 * review): the read ends as plain's, with a slow primary too, and nothing
 * goes to the region the read's `excludedLocations` name. A frozen request
 * is still hedged; a copy, whose SDK options are unknown, is sent unhedged.
 */
describe("a caller's policy before the hedging layer that freezes or copies requests, beside plain @azure/cosmos", function () {
  const fixture = useEmulator({ items: [{ id: "1", pk: "a", value: 1 }] });
  let emulator: Emulator;
  const clients: CosmosClient[] = [];

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
  });

  const base = (): CosmosClientOptions => ({
    endpoint: emulator.endpoint,
    key: emulator.key,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...preferredLocations] },
  });

  async function containerOf(options: CosmosClientOptions): Promise<Container> {
    const client = new CosmosClient(options);
    clients.push(client);
    const container = client.database("db").container("items");
    await container.read();
    return container;
  }

  function plainWith(sendRequest: PipelinePolicy["sendRequest"]): Promise<Container> {
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy({ name: "callerPolicy", sendRequest });
    const transport = createDefaultHttpClient();
    const httpClient: HttpClient = { sendRequest: (request) => pipeline.sendRequest(transport, request) };
    return containerOf({ ...base(), httpClient });
  }

  function hedgedWith(sendRequest: PipelinePolicy["sendRequest"]): Promise<Container> {
    const options = withHedging(base(), { crossRegion: { threshold, budget: false } });
    options.httpClient.pipeline.addPolicy({ name: "callerPolicy", sendRequest }, { phase: "Serialize" });
    return containerOf(options);
  }

  function reads(): Record<string, number> {
    return Object.fromEntries(emulator.regions.map((region) => [region.name, region.count(["pointRead"])]));
  }

  for (const [what, sendRequest, expected] of policies) {
    for (const slow of [false, true]) {
      it(`${what}${slow ? ", its primary region slow" : ""}: the reads end as plain's, none goes to the excluded region, and it is ${slow ? expected : "unhedged"}`, async function () {
        const outcome = async (container: Container): Promise<{ results: unknown[]; reads: Record<string, number>; hedged: boolean }> => {
          emulator.clearFaults();
          emulator.resetCounters();
          if (slow) emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slowMs });
          const results: unknown[] = [];
          let hedged = false;
          for (let read = 0; read < 2; read++) {
            try {
              const response = await container.item("1", "a").read({ excludedLocations: ["East US"] });
              results.push([response.statusCode, response.resource?.value]);
              hedged ||= getHedgeDiagnostics(response)?.hedgeFired === true;
            } catch (error) {
              results.push(`${(error as Error).name}: ${(error as Error).message}`);
            }
          }
          return { results, reads: reads(), hedged };
        };
        const plain = await outcome(await plainWith(sendRequest));
        const hedgedOutcome = await outcome(await hedgedWith(sendRequest));
        assert.deepEqual(hedgedOutcome.results, plain.results);
        assert.deepEqual(plain.results, [[200, 1], [200, 1]]);
        assert.equal(hedgedOutcome.reads["East US"], 0, "nothing went to the excluded region");
        assert.equal(hedgedOutcome.hedged, slow && expected === "hedged");
        if (slow && expected === "hedged") assert.equal(hedgedOutcome.reads["North Europe"], 2, "each read was hedged to the next region the SDK may use");
      });
    }
  }

  it("freezes each upsert: the write ends as plain's, sent once", async function () {
    const freeze: PipelinePolicy["sendRequest"] = (request, next) => next(deepFreeze(request));
    for (const container of [await plainWith(freeze), await hedgedWith(freeze)]) {
      emulator.resetCounters();
      const { statusCode, resource } = await container.items.upsert({ id: "w", pk: "w", value: 7 });
      assert.deepEqual([statusCode === 200 || statusCode === 201, resource?.value], [true, 7]);
      assert.equal(emulator.regions.reduce((sum, region) => sum + region.count(["upsert"]), 0), 1);
    }
  });
});
