import { randomUUID } from "node:crypto";
import http from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { classifyShape } from "../../src/cosmos/operationKind.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import type { AuthorizationVerdict } from "./authorization.js";
import type { FaultDecision, FaultRule } from "./faults.js";
import type { PartitionLayout } from "./partitions.js";

/**
 * One request as it reached a region. Recorded on arrival, before any fault
 * or latency; the fields about its end are filled in when it ends.
 */
export interface RecordedRequest {
  readonly method: string;
  /** The path and query, as sent. */
  readonly path: string;
  readonly kind: OperationKind;
  /** The region that received it. */
  readonly region: string;
  /** Request headers, lower-case names; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  /** Arrival time, from `performance.now()`. */
  readonly at: number;
  /** The master-key signature check: `"valid"`, or why the request was answered 401. */
  readonly authorization: AuthorizationVerdict;
  /** When the request ended (answered, reset or cut), from `performance.now()`; `undefined` while in flight. */
  readonly endedAt: number | undefined;
  /** The status of the answer written in full; `undefined` if none was. */
  readonly status: number | undefined;
  /** The client closed the connection before the answer was written: an aborted request, as the service sees it. */
  readonly cutByClient: boolean;
  /**
   * The request was passed on to the backend (no fault answered or reset it, and the
   * client had not gone by then): a write that reached the service, whether or not its
   * client waited for the answer.
   */
  readonly forwarded: boolean;
}

type RequestRecord = { -readonly [Field in keyof RecordedRequest]: RecordedRequest[Field] };

/** Timers the emulator owns, so that closing it can cancel every pending one. */
export class TimerSet {
  private readonly pending = new Set<NodeJS.Timeout>();

  /** Runs `callback` after `ms`; the returned function cancels it. */
  schedule(ms: number, callback: () => void): () => void {
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      callback();
    }, ms);
    this.pending.add(timer);
    return () => {
      clearTimeout(timer);
      this.pending.delete(timer);
    };
  }

  clear(): void {
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
  }
}

/** What every regional proxy shares: the backend and the account description. */
export interface ProxyTarget {
  readonly agent: http.Agent;
  readonly backendPort: number;
  readonly timers: TimerSet;
  /** The backend's database-account body, rewritten to describe the emulated account. */
  accountBody(backendBody: Buffer): Buffer;
  /** Checks a request's master-key signature, as the service does before anything else. */
  authorize(request: { method: string; path: string; header(name: string): string | undefined }): AuthorizationVerdict;
  /** Whether the emulator is closing: connections it closes itself are not cut by a client. */
  closing: boolean;
  /** How the account's containers are split into partition key ranges. */
  readonly partitions: PartitionLayout;
}

/** The request header that carries an {@link EmulatorRegion.predict} token. */
export const predictionHeader = "x-emulator-prediction";

/** What a regional proxy asks of its region for each request. */
export interface RegionBehaviour {
  readonly name: string;
  readonly latencyMs: number;
  arrived(request: RecordedRequest): void;
  ended(): void;
  decide(kind: OperationKind, predictionToken?: string, headers?: Readonly<Record<string, unknown>>, range?: () => string | undefined): FaultDecision | undefined;
}

// Connection-level headers describe one hop; the proxy manages its own connections on each side.
const hopByHopHeaders: ReadonlySet<string> = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]);
// The proxy buffers (and may rewrite) response bodies, so it computes their length itself.
const droppedResponseHeaders: ReadonlySet<string> = new Set([...hopByHopHeaders, "content-length"]);

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

function withoutHeaders(headers: IncomingHttpHeaders, drop: ReadonlySet<string>): http.OutgoingHttpHeaders {
  const kept: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !drop.has(name)) kept[name] = value;
  }
  return kept;
}

/** Sends an answer; with `bodyLater`, only its headers and first byte now, and the rest when `bodyLater` calls back. */
function send(res: http.ServerResponse, status: number, headers: http.OutgoingHttpHeaders, body: Buffer, bodyLater?: (rest: () => void) => void): void {
  if (res.destroyed || res.headersSent) return;
  // 204 and 304 must not carry a body or a length.
  const bodyless = status === 204 || status === 304;
  res.writeHead(status, bodyless ? headers : { ...headers, "content-length": body.length });
  if (bodyLater === undefined || bodyless || body.length < 2) {
    res.end(bodyless ? undefined : body);
    return;
  }
  res.write(body.subarray(0, 1));
  bodyLater(() => {
    if (!res.destroyed) res.end(body.subarray(1));
  });
}

function errorCode(status: number): string {
  return (http.STATUS_CODES[status] ?? "Error").replace(/[^A-Za-z]/g, "");
}

function answerUnauthorized(res: http.ServerResponse, verdict: AuthorizationVerdict): void {
  const body = {
    code: "Unauthorized",
    message: `The input authorization token can't serve the request (emulator: ${verdict}).`,
  };
  send(res, 401, { "content-type": "application/json", "x-ms-activity-id": randomUUID() }, Buffer.from(JSON.stringify(body)));
}

function answerFault(res: http.ServerResponse, rule: FaultRule): void {
  const status = rule.status ?? 200;
  const payload =
    rule.body !== undefined
      ? rule.body
      : status >= 400
        ? { code: errorCode(status), message: `Fault injected by the emulator: ${status}${rule.substatus !== undefined ? `/${rule.substatus}` : ""}` }
        : undefined;
  const headers: http.OutgoingHttpHeaders = {
    "content-type": "application/json",
    "x-ms-activity-id": randomUUID(),
    "x-ms-request-charge": "1",
    ...(rule.substatus !== undefined ? { "x-ms-substatus": String(rule.substatus) } : {}),
    ...rule.headers,
  };
  send(res, status, headers, payload === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(payload)));
}

/**
 * Serves one request that reached a region: records it, refuses it with 401
 * if its signature does not check out, otherwise waits the region's latency
 * plus any fault delay (cancelled if the client goes away), then applies the
 * fault or forwards to the backend.
 */
export function serveRegionRequest(
  region: RegionBehaviour,
  target: ProxyTarget,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const method = req.method ?? "GET";
  const path = req.url ?? "/";
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  };
  const kind = classifyShape({ method, url: `http://127.0.0.1${path}`, header });
  const record: RequestRecord = {
    method,
    path,
    kind,
    region: region.name,
    headers: flattenHeaders(req.headers),
    at: performance.now(),
    authorization: target.authorize({ method, path, header }),
    endedAt: undefined,
    status: undefined,
    cutByClient: false,
    forwarded: false,
  };
  region.arrived(record);

  let cancelDelay: (() => void) | undefined;
  let upstream: http.ClientRequest | undefined;
  let resetByRule = false;
  res.on("close", () => {
    if (!res.writableFinished) {
      // A hedge loser is aborted by its client: stop waiting and never reach the backend for it.
      record.cutByClient = !resetByRule && !target.closing;
      cancelDelay?.();
      upstream?.destroy();
    } else {
      record.status = res.statusCode;
    }
    record.endedAt = performance.now();
    region.ended();
  });

  if (record.authorization !== "valid") {
    // Refused before any fault rule sees it, as the service checks the signature first; the round trip still costs the latency.
    const refuse = (): void => {
      cancelDelay = undefined;
      req.resume();
      answerUnauthorized(res, record.authorization);
    };
    if (region.latencyMs > 0) cancelDelay = target.timers.schedule(region.latencyMs, refuse);
    else refuse();
    return;
  }

  const prediction = req.headers[predictionHeader];
  const decision = region.decide(kind, typeof prediction === "string" ? prediction : undefined, req.headers, () => target.partitions.rangeOfRequest(header, path));

  const act = (): void => {
    cancelDelay = undefined;
    if (res.destroyed) return;
    const rule = decision?.rule;
    if (rule?.connectionReset === true) {
      resetByRule = true;
      req.socket.destroy();
    } else if (rule !== undefined && (rule.status !== undefined || rule.body !== undefined)) {
      // Drain the unread request body so that the connection stays usable.
      req.resume();
      answerFault(res, rule);
    } else if (namesGoneRange(target.partitions, req)) {
      req.resume();
      answerFault(res, { status: 410, substatus: 1002, body: { code: "Gone", message: "The partition key range named by the request was split (emulator)." } });
    } else if (kind === "queryPlan") {
      record.forwarded = true;
      answerQueryPlan(kind, target, req, res, (forwarded) => {
        upstream = forwarded;
      });
    } else {
      record.forwarded = true;
      const hold = rule?.responseDelayMs ?? 0;
      const bodyDelayMs = rule?.bodyDelayMs ?? 0;
      const bodyLater =
        bodyDelayMs > 0
          ? (rest: () => void): void => {
              cancelDelay = target.timers.schedule(bodyDelayMs, rest);
            }
          : undefined;
      upstream = forward(kind, target, req, res, (answer) => {
        if (hold > 0 && !res.destroyed) cancelDelay = target.timers.schedule(hold, answer);
        else answer();
      }, bodyLater);
    }
  };

  const delayMs = region.latencyMs + (decision?.delayMs ?? 0);
  if (delayMs > 0) cancelDelay = target.timers.schedule(delayMs, act);
  else act();
}

/**
 * The backend numbers partition key ranges (`"id": 0`); the service names
 * them with strings (`"id": "0"`), and `@azure/cosmos` relies on it: a range
 * id of number 0 is falsy, and the SDK then skips what it does per range
 * (the 2000 ms per-attempt timeout of point reads with the partition-level
 * circuit breaker, for one).
 */
function withStringRangeIds(body: Buffer): Buffer {
  let feed: { PartitionKeyRanges?: Array<Record<string, unknown>> };
  try {
    feed = JSON.parse(body.toString("utf8")) as typeof feed;
  } catch {
    return body;
  }
  if (!Array.isArray(feed.PartitionKeyRanges)) return body;
  for (const range of feed.PartitionKeyRanges) {
    if (typeof range["id"] === "number") range["id"] = String(range["id"]);
    if (Array.isArray(range["parents"])) range["parents"] = range["parents"].map(String);
  }
  return Buffer.from(JSON.stringify(feed));
}

/** Forwards a request to the backend; `deliver` is handed the writing of the answer, to write it now or later. */
function forward(
  kind: OperationKind,
  target: ProxyTarget,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  deliver: (answer: () => void) => void,
  bodyLater?: (rest: () => void) => void,
  requestBody?: Buffer,
): http.ClientRequest {
  const upstream = http.request({
    host: "127.0.0.1",
    port: target.backendPort,
    method: req.method,
    path: req.url,
    headers: withoutHeaders(req.headers, hopByHopHeaders),
    agent: target.agent,
  });
  const fail = (): void => {
    if (res.destroyed) return;
    if (res.headersSent) res.destroy();
    else send(res, 502, { "content-type": "application/json" }, Buffer.from(JSON.stringify({ code: "BadGateway", message: "The emulator backend did not answer." })));
  };
  upstream.on("error", fail);
  upstream.on("response", (backendRes) => {
    const chunks: Buffer[] = [];
    backendRes.on("data", (chunk: Buffer) => chunks.push(chunk));
    backendRes.on("error", fail);
    backendRes.on("end", () => {
      const status = backendRes.statusCode ?? 502;
      let body: Buffer = Buffer.concat(chunks);
      if (kind === "accountRead" && status === 200) body = target.accountBody(body);
      if ((kind === "partitionKeyRangeReadFeed" || kind === "partitionKeyRangeReadFeedContinuation") && status === 200) body = withStringRangeIds(body);
      body = asPartitioned(target.partitions, kind, req, status, body);
      const headers = withoutHeaders(backendRes.headers, droppedResponseHeaders);
      deliver(() => send(res, status, headers, body, bodyLater));
    });
  });
  if (requestBody === undefined) req.pipe(upstream);
  else upstream.end(requestBody);
  return upstream;
}

/** Whether the request names a partition key range that has since been split, which the service answers 410/1002. */
function namesGoneRange(layout: PartitionLayout, req: http.IncomingMessage): boolean {
  const range = req.headers["x-ms-documentdb-partitionkeyrangeid"];
  return typeof range === "string" && layout.isGone(range);
}

/**
 * The backend's answer as the service's would be where the backend ignores
 * the partitioning: a feed page asked of one partition key holds that key's
 * documents only, and where the layout splits the containers, the answer is
 * a split container's (see {@link PartitionLayout}).
 */
function asPartitioned(layout: PartitionLayout, kind: OperationKind, req: http.IncomingMessage, status: number, body: Buffer): Buffer {
  if (status >= 300) return body;
  const path = req.url ?? "/";
  const key = req.headers["x-ms-documentdb-partitionkey"];
  const feed = kind === "query" || kind === "readFeed" || kind === "changeFeed";
  if (feed && typeof key === "string") body = layout.filterFeedByKey(body, key, path);
  if (/^\/?dbs\/[^/]+\/colls(\/[^/?]+)?\/?(\?|$)/.test(path)) return layout.noteContainers(body, path);
  if (!layout.split) return body;
  if (kind === "partitionKeyRangeReadFeed" || kind === "partitionKeyRangeReadFeedContinuation") return layout.rewriteRanges(body);
  const range = req.headers["x-ms-documentdb-partitionkeyrangeid"];
  if (typeof range === "string" && feed) return layout.filterFeed(body, range, path);
  return body;
}

/**
 * The backend plans no query: it runs a plan request as the query itself.
 * A simple query's plan is answered here, as the service would answer it;
 * any other goes to the backend as before.
 */
function answerQueryPlan(kind: OperationKind, target: ProxyTarget, req: http.IncomingMessage, res: http.ServerResponse, forwarded: (upstream: http.ClientRequest) => void): void {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const requestBody = Buffer.concat(chunks);
    const plan = target.partitions.queryPlanFor(requestBody);
    if (res.destroyed) return;
    if (plan === undefined) {
      forwarded(forward(kind, target, req, res, (answer) => answer(), undefined, requestBody));
      return;
    }
    // One request unit, as the backend charges every reply.
    send(res, 200, { "content-type": "application/json", "x-ms-activity-id": randomUUID(), "x-ms-request-charge": "1" }, plan);
  });
}
