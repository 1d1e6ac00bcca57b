import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { eastUs, northEurope, query, requestTo, westUs } from "../support/hedgingFixtures.js";
import { PlannedTransport } from "../support/plannedTransport.js";
import type { Plan, Wait } from "../support/plannedTransport.js";

const regions: readonly RegionEndpoint[] = [eastUs, westUs, northEurope];
const warmupRequests = 5_000;
const soakRequests = 100_000;
const concurrency = 64;
const maxHeapGrowthBytes = 20 * 1024 * 1024;
const idHeader = "x-soak-request";
const origins = regions.map((region) => new URL(region.endpoint).origin);

/** `global.gc`, exposed by `--expose-gc` (the reliability mocharc sets it) or, failing that, switched on here. */
function garbageCollector(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

/** A deterministic draw in [0, 1) for request `id` and `salt`, so that no per-request plan has to be kept in memory. */
function draw(id: number, salt: number): number {
  let x = Math.imul(id ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 1, 0xc2b2ae35);
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  return (x >>> 0) / 2 ** 32;
}

/**
 * Real waits: an answer "without delay" comes on the next turn of the event
 * loop (setImmediate), a slow one after a few real milliseconds, longer
 * than the 2 ms threshold so that a hedge fires.
 */
const realWait: Wait = (ms, callback) => {
  if (ms === 0) {
    const immediate = setImmediate(callback);
    return () => clearImmediate(immediate);
  }
  const timer = setTimeout(callback, ms);
  return () => clearTimeout(timer);
};

function planFor(request: PipelineRequest): Plan {
  const id = Number(request.headers.get(idHeader));
  const region = origins.indexOf(new URL(request.url).origin);
  const roll = draw(id, region);
  if (region === 0) {
    // The primary: transient (a hedge at once), slow (a hedge after the threshold) or fast.
    if (roll < 0.25) return { status: 503 };
    if (roll < 0.5) return { status: 200, delayMs: 4 + Math.floor(roll * 4) };
    return { status: 200, requestCharge: 1 };
  }
  return roll < 0.1 ? { status: 503 } : { status: 200, requestCharge: 1 };
}

function requestFor(id: number, signal: AbortSignal): PipelineRequest {
  const kind = draw(id, 7);
  const request =
    kind < 0.5
      ? requestTo(eastUs, "GET", `dbs/db/colls/c/docs/${id % 100}`, { abortSignal: signal })
      : kind < 0.7
        ? query(eastUs, signal)
        : requestTo(eastUs, "GET", kind < 0.85 ? "dbs/db/colls/c" : "dbs/db/colls/c/pkranges", { abortSignal: signal });
  request.headers.set(idHeader, String(id));
  return request;
}

/** File-system requests of the test runner and its loader, which come and go on their own. */
const runnerResources: ReadonlySet<string> = new Set(["FSReqCallback", "FSReqPromise", "CloseReq", "StatWatcher"]);

/** The active handles and requests, as a sorted multiset of resource types. */
function activeResources(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((type) => !runnerResources.has(type))
    .sort();
}

function megabytes(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

describe("soak", function () {
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => {
    warnings.push(warning);
  };

  before(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
    process.on("warning", onWarning);
  });

  after(function () {
    process.off("warning", onWarning);
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  it(`${soakRequests} hedged requests grow the heap by less than 20 MB, warn nothing and leave no handle behind`, async function () {
    this.timeout(120_000);
    const gc = garbageCollector();
    // Mocha arms this test's timeout timer only after the test function first yields; let it, and the loader's file reads, settle.
    await new Promise((resolve) => setTimeout(resolve, 10));
    const baselineResources = activeResources();
    const transport = new PlannedTransport({ plan: planFor, wait: realWait, record: false });
    let hedged = 0;
    let considered = 0;
    let aborted = 0;
    const client = createHedgingHttpClient({
      httpClient: transport,
      crossRegion: { threshold: 2, thresholdStep: 2, budget: false },
      metadata: { threshold: 2 },
      onDiagnostics: (diagnostics: HedgeDiagnostics) => {
        considered += 1;
        if (diagnostics.hedgeFired) hedged += 1;
      },
    });
    client.regions.setTopology({ readRegions: regions });

    let nextId = 0;
    const runRequests = async (count: number): Promise<void> => {
      const end = nextId + count;
      const worker = async (): Promise<void> => {
        while (nextId < end) {
          const id = nextId++;
          // Each request has its own signal, as every attempt of @azure/cosmos does; some are aborted mid-flight.
          const controller = new AbortController();
          const pending = client.sendRequest(requestFor(id, controller.signal));
          if (draw(id, 11) < 0.02) setImmediate(() => controller.abort());
          try {
            await pending;
          } catch (error) {
            if (!(error instanceof Error && error.name === "AbortError")) throw error;
            aborted += 1;
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    };

    await runRequests(warmupRequests);
    gc();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    considered = 0;
    hedged = 0;
    aborted = 0;
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    await runRequests(soakRequests);
    // The last races' losers drain on: each answers within a few real milliseconds, so a second is far beyond them.
    for (let waited = 0; transport.inFlight > 0 && waited < 1000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    gc();
    gc();
    const growth = process.memoryUsage().heapUsed - heapBefore;

    console.log(
      `      soak: ${soakRequests} requests in ${seconds.toFixed(1)} s (${cpuSeconds.toFixed(1)} s of CPU), ${hedged} hedged, ${aborted} aborted, heap growth ${megabytes(growth)} MB`,
    );
    assert.equal(considered, soakRequests, "every request went through a hedging policy");
    // A quarter of the primaries answer 4 to 7 ms late, past the 2 ms threshold: each of those fires a hedge, however fast
    // the machine (a slower one also hedges some of the rest, whose answers its busy loop delays).
    assert.ok(hedged > soakRequests * 0.2, `only ${hedged} requests fired a hedge`);
    assert.ok(aborted > 0, "some requests were aborted");
    assert.ok(growth < maxHeapGrowthBytes, `the heap grew by ${megabytes(growth)} MB`);
    assert.equal(transport.inFlight, 0, "no request is left in flight");
    assert.deepEqual(
      warnings.map((warning) => `${warning.name}: ${warning.message}`),
      [],
      "process warnings (MaxListenersExceededWarning among them)",
    );
    // Closed handles leave the list on the turn after they close.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(activeResources(), baselineResources, "active handles and requests are back to the baseline");
  });
});
