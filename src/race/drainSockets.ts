import type { Agent } from "node:http";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "../cosmos/headers.js";
import { reachesCoreTransport } from "./armAbort.js";

/** What a drain may do to the connection of a request it cannot abort through a signal. */
export interface DrainedConnection {
  /** Stops the connection from keeping the process alive while it drains. */
  release(): void;
  /** Closes the connection: the request fails, its socket leaves the pool. */
  destroy(): void;
  /** The request settled after {@link DrainedConnection.destroy}: nothing of it is left to close. */
  settled(): void;
}

/** The parts of a Node.js `ClientRequest` and socket that a drain reads and uses. */
interface ClientRequestLike {
  readonly method?: string;
  readonly path?: string;
  getHeader?(name: string): unknown;
  destroy?(): void;
}
interface SocketLike {
  readonly _httpMessage?: ClientRequestLike | null;
  unref?(): void;
}

/**
 * Whether a request's connection agent bounds its sockets
 * (`maxSockets` or `maxTotalSockets`, both unbounded by default). A loser
 * left to drain there holds a socket a waiting request of the same client
 * needs, so such a race aborts its losers instead (see {@link HedgingRace}).
 */
export function boundsSockets(request: PipelineRequest): boolean {
  const agent = request.agent as { maxSockets?: unknown; maxTotalSockets?: unknown } | undefined;
  if (agent === undefined || agent === null) return false;
  return isBound(agent.maxSockets) || isBound(agent.maxTotalSockets);
}

/**
 * Whether a race may send the caller's request as its primary without a
 * signal of its own, leaving it to drain when it loses: only where the
 * drain can manage its connection. That is a request going straight to
 * core-rest-pipeline's Node.js transport (which connects through the
 * request's `agent`, as `@azure/cosmos` always sets it), on an agent that
 * does not bound its sockets. Anywhere else the primary is sent eagerly.
 */
export function primaryMayDrain(request: PipelineRequest): boolean {
  return reachesCoreTransport(request) && agentPoolsSockets(request);
}

/**
 * Whether a request's agent keeps a pool of sockets a drain can manage
 * (see {@link drainedConnectionOf}) without bounding them: what
 * {@link primaryMayDrain} asks of a request it knows goes to core's transport.
 */
export function agentPoolsSockets(request: PipelineRequest): boolean {
  const agent = request.agent as { sockets?: unknown } | undefined;
  return typeof agent?.sockets === "object" && agent.sockets !== null && !boundsSockets(request);
}

function isBound(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** The parts of a Node.js `Agent`'s pool that {@link socketFreeFor} reads, each list by the agent's connection name. */
interface PoolLike {
  readonly maxSockets?: unknown;
  readonly maxTotalSockets?: unknown;
  readonly totalSocketCount?: unknown;
  readonly sockets?: Readonly<Record<string, readonly unknown[] | undefined>>;
  readonly freeSockets?: Readonly<Record<string, readonly unknown[] | undefined>>;
  readonly requests?: Readonly<Record<string, readonly unknown[] | undefined>>;
}

/** How many entries the lists of `lists` hold for connections whose agent name starts with `origin`. */
function countFor(lists: PoolLike["sockets"], origin: string): number {
  let count = 0;
  for (const name in lists) if (name.startsWith(origin)) count += lists[name]?.length ?? 0;
  return count;
}

/** Node's name of a connection to `url`, "host:port:localAddress...", as far as the agent's lists are keyed by it; `undefined` for no URL. */
export function connectionPrefix(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  // The port is filled in before Node asks the agent.
  return `${parsed.hostname}:${parsed.port || (parsed.protocol === "http:" ? "80" : "443")}:`;
}

/**
 * What a new request of `request`'s agent to the connection named `origin`
 * (see {@link connectionPrefix}) would meet, as Node's `Agent.addRequest`
 * decides: `free`, a socket at once (a free one, or room for a new one;
 * always where the agent bounds nothing); `origin`, a wait because the
 * agent's `maxSockets` for that host is reached, or requests for it are
 * queued already; `total`, a wait because its `maxTotalSockets` is.
 */
export function socketWaitAt(request: PipelineRequest, origin: string): "free" | "origin" | "total" {
  if (!boundsSockets(request)) return "free";
  const agent = request.agent as PoolLike;
  if (countFor(agent.requests, origin) > 0) return "origin";
  if (countFor(agent.freeSockets, origin) > 0) return "free";
  if (isBound(agent.maxSockets) && countFor(agent.sockets, origin) >= agent.maxSockets) return "origin";
  return isBound(agent.maxTotalSockets) && isBound(agent.totalSocketCount) && agent.totalSocketCount >= agent.maxTotalSockets ? "total" : "free";
}

/**
 * Whether a hedge of `request` to `endpoint` would get a socket of its
 * agent at once (see {@link socketWaitAt}). Where the agent bounds its
 * sockets, a hedge that would wait in the agent's queue holds up the
 * requests of the SDK's that queue behind it (its own retry of a failed
 * region goes there), for a race that its primary may end before the hedge
 * is even sent; so it is not sent. Asked only as a hedge launches.
 */
export function socketFreeFor(request: PipelineRequest, endpoint: string): boolean {
  if (!boundsSockets(request)) return true;
  const origin = connectionPrefix(endpoint);
  if (origin === undefined) return true;
  if (socketWaitAt(request, origin) !== "free") return false;
  const agent = request.agent as PoolLike;
  if (!isBound(agent.maxTotalSockets) || !isBound(agent.totalSocketCount)) return true;
  // Under a bound on every host together, a hedge leaves the last socket to the SDK: cut, it would free a socket only
  // for its own host (Node gives another host's queued request a socket only while that host has none), and the
  // SDK's next request elsewhere would wait for its own host's slowest request.
  return countFor(agent.freeSockets, origin) > 0 || agent.totalSocketCount + 1 < agent.maxTotalSockets;
}

/** How many sockets of `request`'s agent carry a request on the connection named `origin` now. */
export function activeSocketsAt(request: PipelineRequest, origin: string): number {
  return countFor((request.agent as PoolLike | undefined)?.sockets, origin);
}

/**
 * The headers that tell apart requests of one path signed in the same second (the signature covers neither body nor
 * these): a feed's pages (the continuation, the change feed's etag, the partition key range, the feed range), and
 * queries, whose plan and first page `@azure/cosmos` sends at once as the same POST, told apart by the plan's marker,
 * and each query iterator's requests by its correlated activity id.
 */
const identityHeaders = [
  CosmosHeaders.continuation,
  CosmosHeaders.ifNoneMatch,
  "x-ms-documentdb-partitionkeyrangeid",
  "x-ms-documentdb-partitionkey",
  "x-ms-start-epk",
  "x-ms-end-epk",
  CosmosHeaders.isQueryPlan,
  "x-ms-cosmos-correlated-activityid",
] as const;

function sameTokens(message: ClientRequestLike, request: PipelineRequest): boolean {
  return identityHeaders.every((name) => {
    const sent = message.getHeader?.(name);
    const own = request.headers.get(name);
    return (sent === undefined ? undefined : String(sent)) === own;
  });
}

/** The sockets of `request`'s agent carrying a request alike to it (see {@link drainedConnectionOf}); `undefined` when it names no agent that lists its sockets, or no URL. */
function socketsAlike(request: PipelineRequest): SocketLike[] | undefined {
  const agent = request.agent as (Agent & { sockets?: Record<string, SocketLike[] | undefined> }) | undefined;
  if (agent === undefined || agent === null || typeof agent.sockets !== "object" || agent.sockets === null) return undefined;
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return undefined;
  }
  const path = url.pathname + url.search;
  const authorization = request.headers.get(CosmosHeaders.authorization);
  const date = request.headers.get(CosmosHeaders.date);
  const alike: SocketLike[] = [];
  for (const sockets of Object.values(agent.sockets)) {
    for (const socket of sockets ?? []) {
      const message = socket._httpMessage;
      if (message === undefined || message === null || typeof message.getHeader !== "function") continue;
      if (message.method !== request.method || message.path !== path) continue;
      if (String(message.getHeader("host") ?? "") !== url.host) continue;
      if (message.getHeader(CosmosHeaders.authorization) !== authorization || message.getHeader(CosmosHeaders.date) !== date) continue;
      // The pages of one feed, a query's plan and its first page, two queries: signed in the same second, they differ only here.
      if (!sameTokens(message, request)) continue;
      alike.push(socket);
    }
  }
  return alike;
}

/**
 * The connection of a request in flight on its agent, found when a drain
 * starts (a rare moment: a hedge fired and the race was decided), so that a
 * read that never drains pays nothing for it. The agent's active sockets
 * each name the `ClientRequest` they carry (`_httpMessage`, the agent's own
 * link); the request is the one with the arm's method, path, host,
 * signature and identity headers (page tokens, query markers). When more than one request matches (concurrent copies of the
 * same read to the same region within the signature's second) none is
 * returned, but `null`: releasing another caller's connection could let the
 * process exit under a request that caller awaits (see
 * {@link closeWhenEveryCopyOverdue} for such a drain's bound). `undefined`: the request
 * is not on its agent (it names none, or a transport of the caller's that
 * pools its own connections sent it).
 */
export function drainedConnectionOf(request: PipelineRequest): DrainedConnection | null | undefined {
  const alike = socketsAlike(request);
  if (alike === undefined || alike.length === 0) return undefined;
  if (alike.length > 1) return null;
  const socket = alike[0]!;
  return {
    // The agent refs a pooled socket again when it hands it to the next request.
    release: () => socket.unref?.(),
    destroy: () => socket._httpMessage?.destroy?.(),
    settled: () => undefined,
  };
}

/**
 * The connection a drain holds of its request (see {@link drainedConnectionOf}),
 * copies included: where copies of the request share its agent, neither
 * socket is let go of (either may be another caller's), and destroying it
 * puts it under its copies' common bound (see {@link closeWhenEveryCopyOverdue},
 * looked at again every `recheckMs`), which it leaves once it has settled.
 * `undefined`: the request is not on its agent.
 */
export function drainConnection(request: PipelineRequest, recheckMs: number): DrainedConnection | undefined {
  const connection = drainedConnectionOf(request);
  if (connection !== null) return connection;
  let withdraw: (() => void) | undefined;
  return {
    release: () => undefined,
    destroy: () => {
      withdraw ??= closeWhenEveryCopyOverdue(request, recheckMs);
    },
    settled: () => withdraw?.(),
  };
}

/** Drained requests past their bound whose copies share their agent, each group the copies of one request. */
interface OverdueCopies {
  /** One of them, to find the copies on the agent by. */
  readonly sample: PipelineRequest;
  readonly overdue: Set<PipelineRequest>;
  recheck: ReturnType<typeof setInterval> | undefined;
}

const overdueCopies: OverdueCopies[] = [];

function copiesOf(a: PipelineRequest, b: PipelineRequest): boolean {
  return (
    a.agent === b.agent &&
    a.method === b.method &&
    a.url === b.url &&
    a.headers.get(CosmosHeaders.authorization) === b.headers.get(CosmosHeaders.authorization) &&
    a.headers.get(CosmosHeaders.date) === b.headers.get(CosmosHeaders.date) &&
    identityHeaders.every((name) => a.headers.get(name) === b.headers.get(name))
  );
}

function forget(group: OverdueCopies): void {
  if (group.recheck !== undefined) clearInterval(group.recheck);
  group.recheck = undefined;
  const at = overdueCopies.indexOf(group);
  if (at !== -1) overdueCopies.splice(at, 1);
}

/** Closes the copies on the agent once each of them is an overdue drain; whether the group is done. */
function closeIfEveryCopyOverdue(group: OverdueCopies): boolean {
  const alike = socketsAlike(group.sample) ?? [];
  // Each overdue copy holds one of these sockets until it settles and is withdrawn: more sockets, and some are a
  // caller's; fewer, and one has just settled. Only the same number is every copy overdue.
  if (alike.length !== group.overdue.size && alike.length !== 0) return false;
  for (const socket of alike) socket._httpMessage?.destroy?.();
  forget(group);
  return true;
}

/**
 * The bound of a drained request whose connection {@link drainedConnectionOf}
 * could not tell from its copies' (the same read sent twice at once: a hot
 * item), which the race cannot abort (the caller's own primary). Plain
 * `@azure/cosmos` bounds each copy by its `requestTimeout`; once a hedge has
 * answered, the SDK no longer does, and a copy whose region never answers
 * would keep the process alive for good. So when every copy on the agent is
 * such an overdue drain, they are all closed, as a lone drain's connection is
 * at its bound; while a copy is still some caller's, none is, and the copies
 * are looked at again every `recheckMs` (a timer that keeps nothing alive).
 * @returns withdraws the request, once it has settled after all.
 */
export function closeWhenEveryCopyOverdue(request: PipelineRequest, recheckMs: number): () => void {
  const found = overdueCopies.find((each) => copiesOf(each.sample, request));
  const copies: OverdueCopies = found ?? { sample: request, overdue: new Set(), recheck: undefined };
  if (found === undefined) overdueCopies.push(copies);
  copies.overdue.add(request);
  if (!closeIfEveryCopyOverdue(copies) && copies.recheck === undefined) {
    copies.recheck = setInterval(() => closeIfEveryCopyOverdue(copies), recheckMs);
    (copies.recheck as { unref?: () => void }).unref?.();
  }
  return () => {
    copies.overdue.delete(request);
    if (copies.overdue.size === 0) forget(copies);
  };
}
