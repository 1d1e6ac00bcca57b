import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { activeSocketsAt, boundsSockets, connectionPrefix, socketWaitAt } from "./drainSockets.js";

/** A hedge in flight on an agent that bounds its sockets: the host of its connection, and how it gives the socket up. */
interface Holder {
  readonly prefix: string;
  readonly giveUp: () => void;
}

/** The hedges holding a socket, by the agent whose pool they hold it in. */
const holders = new WeakMap<object, Set<Holder>>();
/** How many hedges hold a socket across every agent: while none does, a request of the SDK's costs one comparison here. */
let held = 0;
/** The requests of the SDK's a hedge already gave its socket up to, each counted once however many layers ask. */
const servedRequests = new WeakSet<PipelineRequest>();
/** The hedges registered, which a policy of this package below the race may see pass: a hedge never cuts another. */
const hedges = new WeakSet<PipelineRequest>();

/**
 * Registers a hedge sent on an agent that bounds its sockets (`maxSockets`,
 * `maxTotalSockets`): a hedge is sent only when a socket is free for it at
 * once (see `socketFreeFor`), but it then holds that socket until its race
 * ends, and a request of the SDK's that comes later for the same host (a
 * write, another operation's read) would wait in the agent's queue behind
 * a request plain `@azure/cosmos` never sent. {@link yieldSocketsTo} calls
 * `giveUp` then, and the hedge is cut.
 * @returns the release to call once the hedge has settled; `undefined` where the agent bounds nothing.
 */
export function holdSocket(arm: PipelineRequest, giveUp: () => void): (() => void) | undefined {
  if (!boundsSockets(arm)) return undefined;
  const prefix = connectionPrefix(arm.url);
  if (prefix === undefined) return undefined;
  const agent = arm.agent as object;
  let pool = holders.get(agent);
  if (pool === undefined) holders.set(agent, (pool = new Set()));
  const holder: Holder = { prefix, giveUp };
  pool.add(holder);
  hedges.add(arm);
  held += 1;
  return () => {
    if (pool.delete(holder)) held -= 1;
  };
}

/**
 * Called with each request of the SDK's before it is sent: when it would
 * wait for a socket of its agent that a hedge holds, the newest such hedge
 * gives the socket up (is cut; its race goes on without it), so that the
 * SDK's request gets a socket as it would have without hedging. A hedge to
 * the same host; where the agent's `maxTotalSockets` is what is full, a
 * hedge to another host only while the request's own host has no socket
 * busy, since Node gives a queued request of another host the freed socket
 * only then. One hedge a request.
 */
export function yieldSocketsTo(request: PipelineRequest): void {
  if (held === 0) return;
  const agent = request.agent as object | undefined;
  if (agent === undefined || agent === null) return;
  const pool = holders.get(agent);
  if (pool === undefined || pool.size === 0 || servedRequests.has(request) || hedges.has(request)) return;
  const prefix = connectionPrefix(request.url);
  if (prefix === undefined) return;
  const wait = socketWaitAt(request, prefix);
  if (wait === "free") return;
  let sameHost: Holder | undefined;
  let anyHost: Holder | undefined;
  for (const holder of pool) {
    anyHost = holder;
    if (holder.prefix === prefix) sameHost = holder;
  }
  const newest = sameHost ?? (wait === "total" && activeSocketsAt(request, prefix) === 0 ? anyHost : undefined);
  if (newest === undefined) return;
  pool.delete(newest);
  held -= 1;
  servedRequests.add(request);
  newest.giveUp();
}
