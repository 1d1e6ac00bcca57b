import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { setImmediate } from "node:timers/promises";
import type { TLSSocket } from "node:tls";
import { generate } from "selfsigned";
import { classifyShape } from "../../src/cosmos/operationKind.js";
import { DelayLine } from "./delayLine.js";
import type { Emulator, EmulatorRegion } from "./emulator.js";

/** What the WAN mode counts per region: what a real network charges round trips for. */
export interface WanCounters {
  /** TCP connections clients opened to the region. */
  tcpConnections: number;
  /** TLS handshakes completed with a new session (a full handshake). */
  fullHandshakes: number;
  /** TLS handshakes that resumed an earlier session. */
  resumedHandshakes: number;
}

/**
 * The response header in which a front says how many requests its TLS
 * connection has carried, this one included: `1` marks a response that
 * paid for a new connection.
 */
export const connectionRequestHeader = "x-wan-connection-request";

/** Options of {@link startWan}. */
export interface WanOptions {
  /** The round-trip time to each region, by name, in milliseconds; a region left out has 0. */
  rttMs?: Record<string, number>;
  /** The highest TLS version the HTTPS fronts accept. Default `"TLSv1.3"`. */
  maxTlsVersion?: "TLSv1.2" | "TLSv1.3";
  /**
   * Milliseconds a front keeps an idle connection open before closing it,
   * as a real server's keep-alive timeout does (Node's own default is 5000).
   * Default 600000: long enough that no connection of a test or benchmark
   * expires unless it asks for it.
   */
  keepAliveTimeoutMs?: number;
}

function assertRtt(name: string, rttMs: number): void {
  if (!(rttMs >= 0 && Number.isFinite(rttMs))) throw new RangeError(`rttMs of ${name} must be a finite number >= 0; got ${rttMs}`);
}

function zeroCounters(): WanCounters {
  return { tcpConnections: 0, fullHandshakes: 0, resumedHandshakes: 0 };
}

/** One region seen over the emulated WAN: a TCP path with a round-trip time, ending at an HTTPS front. */
export class WanRegion {
  private rtt: number;
  private counts = zeroCounters();
  private open = 0;

  /** @internal Use {@link startWan}. */
  constructor(
    /** The emulator region behind the front. */
    readonly region: EmulatorRegion,
    /** The regional endpoint over the WAN, `https://127.0.0.1:PORT/`. */
    readonly endpoint: string,
    rttMs: number,
  ) {
    this.rtt = rttMs;
  }

  get name(): string {
    return this.region.name;
  }

  /** The round-trip time, changeable at runtime; applies to chunks sent afterwards. */
  get rttMs(): number {
    return this.rtt;
  }

  set rttMs(value: number) {
    assertRtt(this.name, value);
    this.rtt = value;
  }

  /** What the region has counted since the last reset. */
  get counters(): Readonly<WanCounters> {
    return { ...this.counts };
  }

  resetCounters(): void {
    this.counts = zeroCounters();
  }

  /** TCP connections to the region open now, of every client together: the size of their pools for it, idle and busy sockets alike. Not reset by {@link WanRegion.resetCounters}. */
  get openConnections(): number {
    return this.open;
  }

  /** @internal */
  countConnection(): void {
    this.counts.tcpConnections += 1;
    this.open += 1;
  }

  /** @internal */
  countClosed(): void {
    this.open -= 1;
  }

  /** @internal */
  countHandshake(resumed: boolean): void {
    if (resumed) this.counts.resumedHandshakes += 1;
    else this.counts.fullHandshakes += 1;
  }
}

interface WanParts {
  readonly regions: WanRegion[];
  readonly servers: net.Server[];
  readonly fronts: https.Server[];
  readonly sockets: Set<net.Socket>;
  readonly lines: Set<DelayLine>;
  readonly agent: http.Agent;
}

/**
 * The emulator reached as over a wide-area network: per region, a TCP proxy
 * that charges the round-trip time per round trip (each chunk is delayed by
 * half the RTT in each direction, and a new connection's first bytes by one
 * more RTT, its connect), in front of an HTTPS front that terminates TLS and
 * forwards to the region's HTTP proxy. The database-account response seen
 * through these endpoints lists them, so a `CosmosClient` given
 * {@link Wan.endpoint}, and an `https.Agent` trusting {@link Wan.ca}, routes by
 * region over the WAN, paying for every new connection and handshake as it
 * would against Azure.
 */
export class Wan {
  /** The PEM certificate of every front, generated when the WAN starts; give it to an `https.Agent` as `ca`. */
  readonly ca: string;
  readonly regions: readonly WanRegion[];
  private closing: Promise<void> | undefined;

  /** @internal Use {@link startWan}. */
  constructor(
    ca: string,
    private readonly parts: WanParts,
  ) {
    this.ca = ca;
    this.regions = parts.regions;
  }

  /** The endpoint a `CosmosClient` is given: the first region's. */
  get endpoint(): string {
    return this.regions[0]!.endpoint;
  }

  region(name: string): WanRegion {
    const found = this.regions.find((region) => region.name === name);
    if (found === undefined) throw new Error(`No WAN region ${JSON.stringify(name)}; have ${this.regions.map((r) => r.name).join(", ")}`);
    return found;
  }

  /** Every region's counters added up. */
  get counters(): WanCounters {
    const total = zeroCounters();
    for (const region of this.regions) {
      const counts = region.counters;
      total.tcpConnections += counts.tcpConnections;
      total.fullHandshakes += counts.fullHandshakes;
      total.resumedHandshakes += counts.resumedHandshakes;
    }
    return total;
  }

  resetCounters(): void {
    for (const region of this.regions) region.resetCounters();
  }

  /** Closes every proxy, front, connection and pending delay. Idempotent; the emulator itself stays open. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const { servers, fronts, sockets, lines, agent } = this.parts;
    for (const line of lines) line.stop();
    lines.clear();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    const closed: Promise<void>[] = [
      ...servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      ...fronts.map(
        (front) =>
          new Promise<void>((resolve) => {
            front.close(() => resolve());
            front.closeAllConnections();
          }),
      ),
    ];
    agent.destroy();
    await Promise.all(closed);
    // 'close' fires before libuv releases the handles, in the close-callbacks phase that follows the next check phase.
    await setImmediate();
    await setImmediate();
  }
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function certificate(): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: "commonName", value: "cosmos-hedging WAN emulator" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notAfterDate: new Date(Date.now() + 24 * 3600_000),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }, { type: 2, value: "localhost" }] },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

// Connection-level headers describe one hop; the front manages its own connections on each side.
const hopByHopHeaders: ReadonlySet<string> = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]);

function withoutHopByHop(headers: http.IncomingHttpHeaders, drop: ReadonlySet<string> = hopByHopHeaders): http.OutgoingHttpHeaders {
  const kept: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !drop.has(name)) kept[name] = value;
  }
  return kept;
}

const accountHeadersDropped: ReadonlySet<string> = new Set([...hopByHopHeaders, "content-length"]);

/** The account body with each region's endpoint replaced by its WAN endpoint. */
function rewriteAccount(body: Buffer, endpoints: ReadonlyMap<string, string>): Buffer {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
  } catch {
    return body;
  }
  for (const field of ["readableLocations", "writableLocations"]) {
    const locations = parsed[field];
    if (!Array.isArray(locations)) continue;
    parsed[field] = locations.map((location: { name?: string; databaseAccountEndpoint?: string }) => {
      const endpoint = location.name !== undefined ? endpoints.get(location.name) : undefined;
      return endpoint !== undefined ? { ...location, databaseAccountEndpoint: endpoint } : location;
    });
  }
  return Buffer.from(JSON.stringify(parsed));
}

const requestsOnConnection = new WeakMap<object, number>();

/** Forwards one request from the front to the region's HTTP proxy; a client that goes away cancels it there too. */
function forward(region: EmulatorRegion, agent: http.Agent, endpoints: ReadonlyMap<string, string>, req: http.IncomingMessage, res: http.ServerResponse): void {
  const carried = (requestsOnConnection.get(req.socket) ?? 0) + 1;
  requestsOnConnection.set(req.socket, carried);
  res.setHeader(connectionRequestHeader, String(carried));
  const target = new URL(region.endpoint);
  const method = req.method ?? "GET";
  const path = req.url ?? "/";
  const isAccountRead = classifyShape({ method, url: `https://127.0.0.1${path}`, header: () => undefined }) === "accountRead";
  const upstream = http.request({
    host: target.hostname,
    port: target.port,
    method,
    path,
    headers: withoutHopByHop(req.headers),
    agent,
  });
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  // A reset from the region (a fault) reaches the client as a reset, as it would through a real front.
  upstream.on("error", () => req.socket.destroy());
  upstream.on("response", (regionRes) => {
    const status = regionRes.statusCode ?? 502;
    if (!isAccountRead || status !== 200) {
      res.writeHead(status, withoutHopByHop(regionRes.headers));
      regionRes.pipe(res);
      return;
    }
    const chunks: Buffer[] = [];
    regionRes.on("data", (chunk: Buffer) => chunks.push(chunk));
    regionRes.on("end", () => {
      const body = rewriteAccount(Buffer.concat(chunks), endpoints);
      res.writeHead(status, { ...withoutHopByHop(regionRes.headers, accountHeadersDropped), "content-length": body.length });
      res.end(body);
    });
  });
  req.pipe(upstream);
}

/**
 * Puts the emulator behind an emulated WAN (see {@link Wan}): one TCP proxy
 * and one HTTPS front per region, on 127.0.0.1 with ephemeral ports, and a
 * certificate generated now with `selfsigned`. Give the emulator's regions
 * no `latencyMs` of their own: the round trips are charged here, and fault
 * rules (delays, errors, resets) still apply at the region.
 */
export async function startWan(emulator: Emulator, options: WanOptions = {}): Promise<Wan> {
  const rtts = options.rttMs ?? {};
  const keepAliveTimeout = options.keepAliveTimeoutMs ?? 10 * 60_000;
  if (!(keepAliveTimeout > 0 && Number.isFinite(keepAliveTimeout))) throw new RangeError(`keepAliveTimeoutMs must be a finite number > 0; got ${keepAliveTimeout}`);
  for (const [name, rtt] of Object.entries(rtts)) {
    emulator.region(name);
    assertRtt(name, rtt);
  }
  const { key, cert } = await certificate();
  const agent = new http.Agent({ keepAlive: true });
  const parts: WanParts = { regions: [], servers: [], fronts: [], sockets: new Set(), lines: new Set(), agent };
  const endpoints = new Map<string, string>();
  const wan = new Wan(cert, parts);
  try {
    for (const region of emulator.regions) {
      // By default idle keep-alive connections are closed by Wan.close(), not by a timer racing a client's reuse.
      const front = https.createServer(
        { key, cert, maxVersion: options.maxTlsVersion ?? "TLSv1.3", keepAliveTimeout },
        (req, res) => forward(region, agent, endpoints, req, res),
      );
      parts.fronts.push(front);
      const frontPort = await listen(front);
      // The region's endpoint needs the proxy's port, so the proxy's handlers find the region here once it exists.
      const slot: { region?: WanRegion } = {};
      front.on("secureConnection", (socket: TLSSocket) => slot.region?.countHandshake(socket.isSessionReused()));
      const proxy = net.createServer({ allowHalfOpen: true }, (client) => {
        if (slot.region === undefined) {
          client.destroy();
          return;
        }
        connect(slot.region, client, frontPort, parts);
      });
      parts.servers.push(proxy);
      const port = await listen(proxy);
      const wanRegion = new WanRegion(region, `https://127.0.0.1:${port}/`, rtts[region.name] ?? 0);
      slot.region = wanRegion;
      parts.regions.push(wanRegion);
      endpoints.set(region.name, wanRegion.endpoint);
    }
    return wan;
  } catch (error) {
    await wan.close();
    throw error;
  }
}

/** Joins a client's connection to the region's front through one delay line each way. */
function connect(region: WanRegion, client: net.Socket, frontPort: number, parts: WanParts): void {
  region.countConnection();
  // The client's first bytes leave once its connect has taken a round trip, then travel half of one.
  const connectedAt = performance.now() + region.rttMs;
  const server = net.connect({ host: "127.0.0.1", port: frontPort, allowHalfOpen: true });
  const up = new DelayLine(client, server, () => Math.max(performance.now(), connectedAt) + region.rttMs / 2);
  const down = new DelayLine(server, client, () => performance.now() + region.rttMs / 2);
  parts.sockets.add(client);
  parts.sockets.add(server);
  parts.lines.add(up);
  parts.lines.add(down);
  let closed = 0;
  const onClose = (): void => {
    // A reset on either side ends the path: nothing queued is delivered after it.
    up.stop();
    down.stop();
    client.destroy();
    server.destroy();
    closed += 1;
    if (closed === 1) region.countClosed();
    if (closed < 2) return;
    parts.sockets.delete(client);
    parts.sockets.delete(server);
    parts.lines.delete(up);
    parts.lines.delete(down);
  };
  client.on("error", () => undefined);
  server.on("error", () => undefined);
  client.once("close", onClose);
  server.once("close", onClose);
}
