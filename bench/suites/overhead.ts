import { performance } from "node:perf_hooks";
import { createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpClient, Pipeline, PipelineRequest } from "@azure/core-rest-pipeline";
// The built package, as users run it (not the TypeScript sources through a loader).
import { createHedgingHttpClient } from "cosmos-hedging";
import { markdownTable } from "../support/table.js";

/** The overhead microbenchmark's settings. */
export interface OverheadSettings {
  requestsPerMode: number;
  rounds: number;
}

export const defaultOverheadSettings: OverheadSettings = { requestsPerMode: 100_000, rounds: 5 };

/** One mode's figures. */
export interface OverheadRow {
  mode: string;
  requestsPerSecond: number;
  relative: number;
  heapGrowthMb: number;
}

const endpoint = "https://acct-eastus.documents.azure.com/";

/** A transport that answers at once, so that only the pipeline's own cost is measured. */
const instantTransport: HttpClient = {
  sendRequest: async (request) => ({
    request,
    status: 200,
    headers: createHttpHeaders({ "x-ms-request-charge": "1", "x-ms-activity-id": "00000000-0000-0000-0000-000000000000" }),
    bodyAsText: '{"id":"item"}',
  }),
};

function pointRead(): PipelineRequest {
  return createPipelineRequest({
    url: `${endpoint}dbs/db/colls/items/docs/item`,
    method: "GET",
    headers: createHttpHeaders({ authorization: "type%3Dmaster%26ver%3D1.0%26sig%3Dx", "x-ms-documentdb-partitionkey": '["item"]' }),
  });
}

interface Contender {
  mode: string;
  send: (request: PipelineRequest) => Promise<unknown>;
}

function contenders(): Contender[] {
  const bare: Pipeline = createEmptyPipeline();
  // A single-region account: the policies look at every request and hedge none, the path most requests take.
  const hedging = createHedgingHttpClient({ httpClient: instantTransport, crossRegion: true, metadata: true });
  hedging.regions.setTopology({ readRegions: [{ name: "East US", endpoint }] });
  return [
    { mode: "bare pipeline", send: (request) => bare.sendRequest(instantTransport, request) },
    { mode: "hedging client, pass-through", send: (request) => hedging.sendRequest(request) },
  ];
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

/**
 * Sends the same point read through a bare core-rest-pipeline pipeline and
 * through the hedging client on a single-region account, in alternating
 * rounds so that a noisy machine slows both alike.
 */
export async function runOverheadSuite(settings = defaultOverheadSettings): Promise<OverheadRow[]> {
  const modes = contenders();
  const perRound = Math.ceil(settings.requestsPerMode / settings.rounds);
  const elapsed = new Map<string, number>();
  const growth = new Map<string, number>();
  for (const contender of modes) {
    for (let i = 0; i < 2000; i++) await contender.send(pointRead());
  }
  for (let round = 0; round < settings.rounds; round++) {
    for (const contender of modes) {
      const before = heapMb();
      const start = performance.now();
      for (let i = 0; i < perRound; i++) await contender.send(pointRead());
      elapsed.set(contender.mode, (elapsed.get(contender.mode) ?? 0) + performance.now() - start);
      growth.set(contender.mode, (growth.get(contender.mode) ?? 0) + heapMb() - before);
    }
  }
  const rate = (mode: string): number => (perRound * settings.rounds) / ((elapsed.get(mode) ?? 1) / 1000);
  const baseline = rate(modes[0]!.mode);
  return modes.map((contender) => ({
    mode: contender.mode,
    requestsPerSecond: rate(contender.mode),
    relative: rate(contender.mode) / baseline,
    heapGrowthMb: growth.get(contender.mode) ?? 0,
  }));
}

/** The suite's table. */
export function overheadTable(rows: readonly OverheadRow[], settings = defaultOverheadSettings): string {
  return markdownTable(
    ["mode", "requests", "requests/s", "relative throughput", "heap growth MB"],
    rows.map((row) => [
      row.mode,
      String(settings.requestsPerMode),
      row.requestsPerSecond.toFixed(0),
      `${(row.relative * 100).toFixed(1)}%`,
      row.heapGrowthMb.toFixed(1),
    ]),
  );
}

/** What one hedging client holds, fresh and after it has learned from its traffic. */
export interface ClientMemoryRow {
  state: string;
  clients: number;
  bytesPerClient: number;
}

const threeRegions = [
  { name: "East US", endpoint },
  { name: "West US", endpoint: "https://acct-westus.documents.azure.com/" },
  { name: "North Europe", endpoint: "https://acct-northeurope.documents.azure.com/" },
];

/**
 * Heap per hedging client: `clients` clients on a three-region account,
 * measured fresh and again after each has sent `requestsPerClient` point
 * reads (latency windows, ranking state and metrics filled), so that what
 * a process pays per client is stated, not guessed.
 */
export async function measureClientMemory(clients = 200, requestsPerClient = 2000): Promise<ClientMemoryRow[]> {
  const before = heapMb();
  const made = Array.from({ length: clients }, () => {
    const client = createHedgingHttpClient({ httpClient: instantTransport, preferredRegions: threeRegions.map((region) => region.name) });
    client.regions.setTopology({ readRegions: threeRegions });
    return client;
  });
  const fresh = heapMb();
  for (const client of made) {
    for (let i = 0; i < requestsPerClient; i++) await client.sendRequest(pointRead());
  }
  const used = heapMb();
  const perClient = (megabytes: number): number => (megabytes * 1024 * 1024) / clients;
  // Keeps every client reachable until the heap has been read.
  if (made.length !== clients) throw new Error("a client was lost");
  return [
    { state: "fresh (topology set, no request yet)", clients, bytesPerClient: perClient(fresh - before) },
    { state: `after ${requestsPerClient} point reads each`, clients, bytesPerClient: perClient(used - before) },
  ];
}

/** The memory table. */
export function clientMemoryTable(rows: readonly ClientMemoryRow[]): string {
  return markdownTable(
    ["client state", "clients", "heap per client"],
    rows.map((row) => [row.state, String(row.clients), `${(row.bytesPerClient / 1024).toFixed(1)} KiB`]),
  );
}
