import assert from "node:assert/strict";
import http from "node:http";
import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
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

/**
 * What a caller's policy placed before the hedging layer does to each
 * request it passes on. With a policy of the caller's in the pipeline, a
 * read's losing primary cannot drain (its connection is out of the race's
 * reach), so the race must be able to cut it, through a signal it sets on
 * the request: a frozen request takes none, and goes alone, as plain's.
 */
const policies: ReadonlyArray<readonly [string, PipelinePolicy["sendRequest"], "hedged" | "unhedged"]> = [
  ["freezes it", (request, next) => next(Object.freeze(request)), "unhedged"],
  ["freezes it and what it holds", (request, next) => next(deepFreeze(request)), "unhedged"],
  ["seals it", (request, next) => next(Object.seal(request)), "hedged"],
  // Another object than the SDK's, which carries the original's options along: hedged within them.
  ["passes a proxy of it on", (request, next) => next(new Proxy(request, {})), "hedged"],
  ["passes a spread copy of it on", (request, next) => next({ ...request }), "hedged"],
];

/**
 * A policy of the caller's before the hedging layer that freezes, seals,
 * proxies or copies each request, through the real CosmosClient beside a
 * plain one with the same policy over the default transport (from a hostile
 * review): the read ends as plain's, with a slow primary too, and nothing
 * goes to the region the read's `excludedLocations` name. A sealed request,
 * a copy and a proxy are still hedged, within the SDK's options; a frozen
 * one, whose primary the race could not cut, is sent alone; the client's
 * own exclusions and a pinned region still steer each of them.
 */
describe("a caller's policy before the hedging layer that freezes or copies requests, beside plain @azure/cosmos", function () {
  const fixture = useEmulator({ items: [{ id: "1", pk: "a", value: 1 }] });
  let emulator: Emulator;

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  const base = (): CosmosClientOptions => ({
    endpoint: emulator.endpoint,
    key: emulator.key,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...preferredLocations] },
  });

  async function containerOf(options: CosmosClientOptions): Promise<Container> {
    const client = fixture.adopt(new CosmosClient(options));
    const container = client.database("db").container("items");
    await container.read();
    return container;
  }

  function plainWith(sendRequest: PipelinePolicy["sendRequest"], options = base()): Promise<Container> {
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy({ name: "callerPolicy", sendRequest });
    const transport = createDefaultHttpClient();
    const httpClient: HttpClient = { sendRequest: (request) => pipeline.sendRequest(transport, request) };
    return containerOf({ ...options, httpClient });
  }

  function hedgedWith(sendRequest: PipelinePolicy["sendRequest"], given = base()): Promise<Container> {
    const options = withHedging(given, { crossRegion: { threshold, budget: false } });
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

  for (const [what, sendRequest] of policies) {
    it(`${what}: the client's excludedRegions and a pinned region still steer it`, async function () {
      const options = withHedging(base(), { excludedRegions: ["West US"], crossRegion: { threshold, budget: false } });
      options.httpClient.pipeline.addPolicy({ name: "callerPolicy", sendRequest }, { phase: "Serialize" });
      const container = await containerOf(options);
      emulator.resetCounters();
      emulator.clearFaults();
      const excluded = await container.item("1", "a").read();
      const pinned = await container.item("1", "a").read(hedgingRequestOptions({ region: "North Europe" }));
      assert.deepEqual([excluded.statusCode, excluded.resource?.value, pinned.statusCode, pinned.resource?.value], [200, 1, 200, 1]);
      assert.deepEqual(reads(), { "East US": 1, "West US": 0, "North Europe": 1 }, "the excluded region is skipped, the pin honoured");
    });
  }

  it("freezes each read over an agent of one socket: the read after a late one is as fast as plain's, and none is sent twice", async function () {
    // With an agent of its own, @azure/cosmos leaves allowInsecureConnection unset, which the loopback emulator needs.
    const freeze: PipelinePolicy["sendRequest"] = (request, next) => next(Object.freeze(Object.assign(request, { allowInsecureConnection: true })));
    const run = async (hedged: boolean): Promise<{ second: number; reads: number }> => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const options: CosmosClientOptions = { ...base(), agent };
      try {
        const container = hedged ? await hedgedWith(freeze, options) : await plainWith(freeze, options);
        emulator.resetCounters();
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1500, count: 1 });
        await container.item("1", "a").read();
        const started = performance.now();
        await container.item("1", "a").read();
        return { second: performance.now() - started, reads: emulator.regions.reduce((sum, region) => sum + region.count(["pointRead"]), 0) };
      } finally {
        agent.destroy();
      }
    };
    const plain = await run(false);
    const hedged = await run(true);
    assert.ok(plain.second < threshold && hedged.second < threshold, `the second read took ${hedged.second.toFixed(0)} ms hedged, ${plain.second.toFixed(0)} ms plain`);
    assert.deepEqual([hedged.reads, plain.reads], [2, 2]);
  });

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
