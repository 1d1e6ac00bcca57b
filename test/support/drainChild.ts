/**
 * A short script, run in a child process by the drain integration test: one
 * hedged point read through the real CosmosClient, then `client.dispose()`.
 * It prints one JSON line when it has disposed and another when its event
 * loop has emptied, so that the parent can time how long the process lives on
 * after that. Its settings come in
 * `DRAIN_CHILD` (JSON: endpoint, key, preferred regions, drainLosers, the
 * operation and the transport).
 */
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { fetchTransport } from "./fetchTransport.js";

interface ChildSettings {
  readonly endpoint: string;
  readonly key: string;
  readonly preferredLocations: string[];
  readonly drainLosers: boolean;
  readonly database: string;
  readonly container: string;
  /** `"query"`: a paged query (2 items a page) instead of the point read; `"hotItem"`: two reads of one item at once. */
  readonly operation?: "pointRead" | "query" | "twoQueries" | "twoChangeFeeds" | "hotItem";
  /** The drains' time bound (`drainLosers.maxDrainMs`); unset, the default. */
  readonly maxDrainMs?: number;
  /** `"fetch"`: an `httpClient` of the user's over `fetch`, which pools its own connections and ignores the request's agent. */
  readonly transport?: "fetch";
  /** The client's `connectionPolicy.requestTimeout`; unset, the SDK's default. */
  readonly requestTimeout?: number;
  /** `connectionPolicy.enablePartitionLevelCircuitBreaker`: the SDK cuts each attempt of a read it has a partition for at 2 s. */
  readonly circuitBreaker?: boolean;
}


// The moment nothing is left to keep the process alive, told from inside: the parent, running the emulator beside other
// tests on a loaded machine, may notice the exit a second or two late. (A write to a pipe is synchronous on Linux; where
// the line is lost, the parent's own time stands.)
process.on("exit", () => process.stdout.write(`${JSON.stringify({ exitAt: Date.now() })}\n`));

const settings = JSON.parse(process.env["DRAIN_CHILD"] ?? "{}") as ChildSettings;
const client = new CosmosClient(
  withHedging(
    {
      endpoint: settings.endpoint,
      key: settings.key,
      connectionPolicy: {
        enableBackgroundEndpointRefreshing: false,
        preferredLocations: settings.preferredLocations,
        ...(settings.requestTimeout !== undefined ? { requestTimeout: settings.requestTimeout } : {}),
        ...(settings.circuitBreaker === true ? { enablePartitionLevelCircuitBreaker: true } : {}),
      },
      ...(settings.transport === "fetch" ? { httpClient: fetchTransport() } : {}),
    },
    {
      crossRegion: { threshold: 100, drainLosers: settings.drainLosers && settings.maxDrainMs !== undefined ? { maxDrainMs: settings.maxDrainMs } : settings.drainLosers },
      metadata: false,
    },
  ),
);
const container = client.database(settings.database).container(settings.container);
if (settings.operation === "query") {
  // Every page's primary loses to its hedge and drains: the pages, signed in the same second, differ only in their tokens.
  const { resources } = await container.items.query("SELECT * FROM c", { maxItemCount: 2 }).fetchAll();
  client.dispose();
  process.stdout.write(`${JSON.stringify({ disposedAt: Date.now(), status: resources.length > 0 ? 200 : 0, terminalState: "hedgeWon" })}\n`);
} else if (settings.operation === "twoQueries") {
  // Two queries at once: each one's plan and first page go out together, the same POST signed in the same second, and so
  // do the other's; every hedge of theirs loses and drains.
  const pages = await Promise.all(["SELECT * FROM c", "SELECT c.id FROM c"].map((text) => container.items.query(text).fetchAll()));
  client.dispose();
  process.stdout.write(`${JSON.stringify({ disposedAt: Date.now(), status: pages.every(({ resources }) => resources.length > 0) ? 200 : 0, terminalState: "primaryWon" })}\n`);
} else if (settings.operation === "twoChangeFeeds") {
  // Two change feeds read from the start at once: the same GET, signed in the same second, with no token to tell them apart.
  const pages = await Promise.all([0, 1].map(() => container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }).readNext()));
  client.dispose();
  process.stdout.write(`${JSON.stringify({ disposedAt: Date.now(), status: pages.every((page) => page.statusCode === 200) ? 200 : 0, terminalState: "primaryWon" })}\n`);
} else if (settings.operation === "hotItem") {
  // The same request twice on the agent at once (signed in the same second): neither primary's socket is told apart.
  const responses = await Promise.all([container.item("item-1", "pk-1").read(), container.item("item-1", "pk-1").read()]);
  const states = new Set(responses.map((response) => getHedgeDiagnostics(response.headers)?.terminalState));
  client.dispose();
  const status = responses.every((response) => response.statusCode === 200) ? 200 : 0;
  process.stdout.write(`${JSON.stringify({ disposedAt: Date.now(), status, terminalState: states.size === 1 ? [...states][0] : [...states].join(",") })}\n`);
} else {
  const response = await container.item("item-1", "pk-1").read();
  const record = getHedgeDiagnostics(response.headers);
  client.dispose();
  process.stdout.write(`${JSON.stringify({ disposedAt: Date.now(), status: response.statusCode, terminalState: record?.terminalState })}\n`);
}
