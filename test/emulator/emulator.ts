import http from "node:http";
import { setImmediate } from "node:timers/promises";
import type { AddressInfo } from "node:net";
import { createHttpServer } from "@vercel/cosmosdb-server";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { seededRandom } from "../../src/testing/seededRandom.js";
import { allowedClockSkewMs, verifyAuthorization } from "./authorization.js";
import { FaultList } from "./faults.js";
import type { FaultDecision, FaultHandle, FaultRule } from "./faults.js";
import { TimerSet, serveRegionRequest } from "./proxy.js";
import { PartitionLayout } from "./partitions.js";
import type { ProxyTarget, RecordedRequest, RegionBehaviour } from "./proxy.js";

/** One emulated region. */
export interface EmulatorRegionSpec {
  name: string;
  /** Base latency added to every request that reaches the region, standing for a cross-region round trip. */
  latencyMs?: number;
}

/** The account-level settings the database-account response reports. */
export interface EmulatorAccountSettings {
  /** The write regions, by name; default the first region, or every region with `multipleWriteLocations`. */
  writeRegions?: string[];
  multipleWriteLocations?: boolean;
  perPartitionFailover?: boolean;
  /** Reported as `disableCrossRegionalHedging` while set; `undefined` removes the field. */
  disableCrossRegionalHedging?: boolean | undefined;
}

export interface EmulatorOptions extends EmulatorAccountSettings {
  /** Default East US, West US, North Europe, without latency. */
  regions?: EmulatorRegionSpec[];
  /** Seeds the PRNG behind fault probabilities and random delays, so that runs repeat. Default 1. */
  seed?: number;
  /** Keep every request in {@link EmulatorRegion.requests}; benchmarks turn this off to bound memory. Default true. */
  recordRequests?: boolean;
  /** How far a request's `x-ms-date` may be from the emulator's clock before it is refused with 401; default 15 minutes, as the service. */
  allowedClockSkewMs?: number;
  /** The account's master key (base64), so that two emulated accounts can have different keys. Default a fixed made-up key. */
  key?: string;
  /** An Entra ID (AAD) token the account also accepts (`aadCredentials` of the SDK); default none. */
  aadToken?: string;
  /**
   * How many partition key ranges every container is split into, evenly
   * over the hash space (see `PartitionLayout`); default 1, the backend's
   * own. With more, a cross-partition query the SDK plans
   * (`forceQueryPlan`) fans out range by range, and a fault rule may name
   * one range (`FaultRule.partitionKeyRange`).
   */
  partitionKeyRanges?: number;
}

/**
 * Idle keep-alive connections are closed by {@link Emulator.close}, not by a
 * server timeout: a server closing an idle socket just as a client reuses it
 * shows up as a spurious reset (or 502) in a benchmark.
 */
const idleConnectionMs = 10 * 60_000;

/** A made-up master key; base64, as the SDK needs to sign with it. */
const emulatorKey = Buffer.from("cosmos-hedging emulator key").toString("base64");

const defaultRegions: readonly EmulatorRegionSpec[] = [{ name: "East US" }, { name: "West US" }, { name: "North Europe" }];

function kindsOf(kind: OperationKind | OperationKind[] | undefined): ReadonlySet<OperationKind> | undefined {
  if (kind === undefined) return undefined;
  return new Set(Array.isArray(kind) ? kind : [kind]);
}

function assertLatency(latencyMs: number): void {
  if (!(latencyMs >= 0 && Number.isFinite(latencyMs))) throw new RangeError(`latencyMs must be a finite number >= 0; got ${latencyMs}`);
}

/** One region of the emulated account: a loopback proxy in front of the shared backend. */
export class EmulatorRegion implements RegionBehaviour {
  private latency = 0;
  private readonly faults: FaultList;
  private counts = new Map<OperationKind, number>();
  private log: RecordedRequest[] = [];
  private readonly predictions = new Map<string, FaultDecision | undefined>();
  private predictionCount = 0;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  /** @internal Use {@link startEmulator}. */
  constructor(
    readonly name: string,
    /** The regional endpoint, `http://127.0.0.1:PORT/`. */
    readonly endpoint: string,
    latencyMs: number,
    random: () => number,
    private readonly recordRequests: boolean,
  ) {
    this.latencyMs = latencyMs;
    this.faults = new FaultList(random);
  }

  /** Base latency of every request, changeable at runtime; applies to requests that arrive afterwards. */
  get latencyMs(): number {
    return this.latency;
  }

  set latencyMs(value: number) {
    assertLatency(value);
    this.latency = value;
  }

  /** Installs a fault rule after the existing ones; the first applicable rule wins. */
  addFault(rule: FaultRule): FaultHandle {
    return this.faults.add(rule);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** How many requests (of the given kinds) reached the region, faulted or aborted ones included. */
  count(kind?: OperationKind | OperationKind[]): number {
    const kinds = kindsOf(kind);
    let total = 0;
    for (const [counted, n] of this.counts) if (kinds === undefined || kinds.has(counted)) total += n;
    return total;
  }

  /** The requests that reached the region since the last reset, in arrival order. */
  get requests(): readonly RecordedRequest[] {
    return this.log;
  }

  resetCounters(): void {
    this.counts = new Map();
    this.log = [];
  }

  /** @internal Called by the region's proxy on each arrival. */
  arrived(request: RecordedRequest): void {
    this.counts.set(request.kind, (this.counts.get(request.kind) ?? 0) + 1);
    if (this.recordRequests) this.log.push(request);
    this.inFlight++;
  }

  /** @internal Called by the region's proxy when a request has been answered, reset or cut. */
  ended(): void {
    this.inFlight--;
    if (this.inFlight > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once no request is in flight in the region: every one that arrived has been answered, reset or cut. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Draws now what the region will do to the next request of that kind that
   * carries the returned token in {@link predictionHeader}: the benchmarks'
   * oracle asks every region and sends the request only where it will be
   * fastest. `cost` is the latency the region will add (base latency plus the
   * fault's delay), infinite when the fault fails the request.
   */
  predict(kind: OperationKind): { token: string; cost: number } {
    const decision = this.faults.decide(kind);
    const token = `${this.name}#${++this.predictionCount}`;
    this.predictions.set(token, decision);
    const fails = decision !== undefined && (decision.rule.connectionReset === true || (decision.rule.status ?? 200) >= 400);
    return { token, cost: fails ? Number.POSITIVE_INFINITY : this.latency + (decision?.delayMs ?? 0) };
  }

  /** @internal Called by the region's proxy on each arrival: a predicted request gets what was drawn for it. */
  decide(kind: OperationKind, predictionToken?: string, headers?: Readonly<Record<string, unknown>>, range?: () => string | undefined): FaultDecision | undefined {
    if (predictionToken !== undefined && this.predictions.has(predictionToken)) {
      const decision = this.predictions.get(predictionToken);
      this.predictions.delete(predictionToken);
      return decision;
    }
    return this.faults.decide(kind, headers, range);
  }
}

interface AccountState {
  writeRegions: string[] | undefined;
  multipleWriteLocations: boolean;
  perPartitionFailover: boolean;
  disableCrossRegionalHedging: boolean | undefined;
}

/** The account settings, and the database-account body they make of the backend's. */
class EmulatedAccount {
  private state: AccountState = {
    writeRegions: undefined,
    multipleWriteLocations: false,
    perPartitionFailover: false,
    disableCrossRegionalHedging: undefined,
  };

  /** `regions` is read at each use: proxies exist, and may be asked, before every region is known. */
  constructor(private readonly regions: readonly EmulatorRegion[]) {}

  update(settings: EmulatorAccountSettings): void {
    if (settings.writeRegions !== undefined) {
      if (settings.writeRegions.length === 0) throw new RangeError("writeRegions must name at least one region");
      for (const name of settings.writeRegions) this.region(name);
    }
    this.state = {
      writeRegions: settings.writeRegions !== undefined ? [...settings.writeRegions] : this.state.writeRegions,
      multipleWriteLocations: settings.multipleWriteLocations ?? this.state.multipleWriteLocations,
      perPartitionFailover: settings.perPartitionFailover ?? this.state.perPartitionFailover,
      disableCrossRegionalHedging:
        "disableCrossRegionalHedging" in settings ? settings.disableCrossRegionalHedging : this.state.disableCrossRegionalHedging,
    };
  }

  region(name: string): EmulatorRegion {
    const found = this.regions.find((region) => region.name === name);
    if (found === undefined) throw new Error(`No emulated region ${JSON.stringify(name)}; have ${this.regions.map((r) => r.name).join(", ")}`);
    return found;
  }

  /** The backend's account body, rewritten to list the regional proxies and the settings. */
  render(backendBody: Buffer): Buffer {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(backendBody.toString("utf8")) as Record<string, unknown>;
    } catch {
      return backendBody;
    }
    const location = (region: EmulatorRegion) => ({ name: region.name, databaseAccountEndpoint: region.endpoint });
    const { writeRegions, multipleWriteLocations, perPartitionFailover, disableCrossRegionalHedging } = this.state;
    const writers =
      writeRegions !== undefined
        ? writeRegions.map((name) => this.region(name))
        : multipleWriteLocations
          ? this.regions
          : this.regions.slice(0, 1);
    body["readableLocations"] = this.regions.map(location);
    body["writableLocations"] = writers.map(location);
    body["enableMultipleWriteLocations"] = multipleWriteLocations;
    body["enablePerPartitionFailoverBehavior"] = perPartitionFailover;
    if (disableCrossRegionalHedging === undefined) delete body["disableCrossRegionalHedging"];
    else body["disableCrossRegionalHedging"] = disableCrossRegionalHedging;
    return Buffer.from(JSON.stringify(body));
  }
}

interface EmulatorParts {
  key: string;
  regions: EmulatorRegion[];
  account: EmulatedAccount;
  target: { closing: boolean };
  proxies: http.Server[];
  backend: http.Server;
  agent: http.Agent;
  timers: TimerSet;
  partitions: PartitionLayout;
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A multi-region Cosmos DB account on loopback: one cosmosdb-server backend behind one proxy per region. */
export class Emulator {
  /** The account's master key (base64): every region checks each request's signature against it, as the service does. */
  readonly key: string;
  readonly regions: readonly EmulatorRegion[];
  private closing: Promise<void> | undefined;

  /** @internal Use {@link startEmulator}. */
  constructor(private readonly parts: EmulatorParts) {
    this.key = parts.key;
    this.regions = parts.regions;
  }

  /** The endpoint a `CosmosClient` is given: the first region's proxy. */
  get endpoint(): string {
    return this.regions[0]!.endpoint;
  }

  region(name: string): EmulatorRegion {
    return this.parts.account.region(name);
  }

  /**
   * Splits a partition key range of every container in two, as the service
   * splits a partition that outgrew itself: from now on the range feed lists
   * the two new ranges, and a request naming the old one (a page of a query
   * fanned out before) is answered 410/1002 in every region, as the service
   * answers it. @returns the new ranges' ids.
   */
  splitPartitionKeyRange(id: string): [string, string] {
    return this.parts.partitions.splitRange(id);
  }

  /** Changes what the next database-account response says; fields left out keep their value. */
  setAccount(settings: EmulatorAccountSettings): void {
    this.parts.account.update(settings);
  }

  /** Requests (of the given kinds) that reached any region. */
  count(kind?: OperationKind | OperationKind[]): number {
    return this.regions.reduce((total, region) => total + region.count(kind), 0);
  }

  resetCounters(): void {
    for (const region of this.regions) region.resetCounters();
  }

  /** Every request that reached any region since the last reset, in arrival order. */
  get requests(): readonly RecordedRequest[] {
    return this.regions.flatMap((region) => region.requests).sort((a, b) => a.at - b.at);
  }

  /** Resolves once no request is in flight in any region: what the service saw of the requests sent so far is complete. */
  async idle(): Promise<void> {
    await Promise.all(this.regions.map((region) => region.idle()));
  }

  clearFaults(): void {
    for (const region of this.regions) region.clearFaults();
  }

  /** Closes every server, connection, agent socket and pending timer. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const { proxies, backend, agent, timers, target } = this.parts;
    target.closing = true;
    timers.clear();
    // Client-facing sockets first: their close aborts in-flight forwards before the agent and backend go.
    const closed = proxies.map(closeServer);
    agent.destroy();
    closed.push(closeServer(backend));
    await Promise.all(closed);
    // 'close' fires before libuv releases the handles, in the close-callbacks phase that follows the next check phase.
    await setImmediate();
    await setImmediate();
  }
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Starts the backend and one proxy per region, all on 127.0.0.1 with ephemeral ports. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const specs = options.regions ?? defaultRegions;
  if (specs.length === 0) throw new RangeError("an emulator needs at least one region");
  if (new Set(specs.map((spec) => spec.name)).size !== specs.length) throw new RangeError("region names must be unique");
  for (const spec of specs) assertLatency(spec.latencyMs ?? 0);
  const seed = options.seed ?? 1;
  const skewMs = options.allowedClockSkewMs ?? allowedClockSkewMs;
  const key = options.key ?? emulatorKey;
  const keyBytes = Buffer.from(key, "base64");
  if (!(skewMs >= 0)) throw new RangeError(`allowedClockSkewMs must be >= 0; got ${skewMs}`);
  const partitions = new PartitionLayout(options.partitionKeyRanges ?? 1);

  const backend = createHttpServer({ keepAlive: true, keepAliveTimeout: idleConnectionMs });
  const agent = new http.Agent({ keepAlive: true });
  const timers = new TimerSet();
  const proxies: http.Server[] = [];
  const regions: EmulatorRegion[] = [];
  const account = new EmulatedAccount(regions);
  try {
    const backendPort = await listen(backend);
    const target: ProxyTarget = {
      agent,
      backendPort,
      timers,
      accountBody: (body) => account.render(body),
      authorize: (request) => verifyAuthorization(keyBytes, request, Date.now(), skewMs, options.aadToken),
      closing: false,
      partitions,
    };
    await Promise.all(
      specs.map(async (spec, index) => {
        // No client knows the port before startEmulator returns, so regions[index] exists by the first request.
        const proxy = http.createServer({ keepAliveTimeout: idleConnectionMs }, (req, res) =>
          serveRegionRequest(regions[index]!, target, req, res),
        );
        proxies[index] = proxy;
        const port = await listen(proxy);
        // Each region draws from its own sequence, so that traffic to one region cannot shift another's faults.
        const random = seededRandom((seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0);
        regions[index] = new EmulatorRegion(spec.name, `http://127.0.0.1:${port}/`, spec.latencyMs ?? 0, random, options.recordRequests ?? true);
      }),
    );
    account.update(options);
    return new Emulator({ key, regions, account, target, proxies, backend, agent, timers, partitions });
  } catch (error) {
    agent.destroy();
    await Promise.all([backend, ...proxies].filter((server) => server.listening).map(closeServer));
    throw error;
  }
}
