import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { classifyOperation } from "../cosmos/operationKind.js";
import { RateLimitedLog, logger } from "../log.js";
import { topologyChangeLines } from "./topologyLog.js";
import { normalizeRegionName, regionKey } from "./regionNames.js";
import { describe, isRegionName, optionKeys, optionsObject, regionNameLimits, regionNameList } from "../options.js";
import { packageInfo } from "../packageInfo.js";

/** One region of the account: its name and its regional endpoint. */
export interface RegionEndpoint {
  /** The region's name as the account reports it, for example `"West US 2"`. */
  readonly name: string;
  /** The regional endpoint, for example `"https://myaccount-westus2.documents.azure.com:443/"`. */
  readonly endpoint: string;
}

/** What a database-account response says about the account's regions. */
export interface AccountTopology {
  /** The read regions, in the account's order. */
  readonly readRegions: readonly RegionEndpoint[];
  /** The write regions, in the account's order (one on a single-write account). */
  readonly writeRegions: readonly RegionEndpoint[];
  /** `enableMultipleWriteLocations`: every write region accepts writes. */
  readonly multipleWriteLocations: boolean;
  /** `enablePerPartitionFailoverBehavior`: per-partition automatic failover (PPAF), which turns hedging on by default. */
  readonly perPartitionFailover: boolean;
  /** `disableCrossRegionalHedging`: the account operator's switch that suppresses all hedging while set. */
  readonly crossRegionalHedgingDisabled: boolean;
}

/** A topology given explicitly, for clients that never read the database account. */
export interface AccountTopologyInit {
  /** The read regions, in the account's order; at least one. */
  readRegions: readonly RegionEndpoint[];
  /** The write regions; defaults to the first read region. */
  writeRegions?: readonly RegionEndpoint[];
  /** Whether every write region accepts writes. Default `false`. */
  multipleWriteLocations?: boolean;
  /** Whether the account has per-partition automatic failover. Default `false`. */
  perPartitionFailover?: boolean;
  /** Whether the account operator has switched hedging off. Default `false`. */
  crossRegionalHedgingDisabled?: boolean;
}

/** Options of a {@link RegionCache}. */
export interface RegionCacheOptions {
  /** A topology to start with; replaced by the next database-account response that flows through the pipeline. */
  topology?: AccountTopologyInit;
  /** The preferred-region order (the `preferredLocations` of `@azure/cosmos`). Empty means the account's order. */
  preferredRegions?: readonly string[];
  /** Regions that no request and no hedge may go to, client-wide. */
  excludedRegions?: readonly string[];
  /**
   * The endpoint of the account this cache serves (the `endpoint` of
   * `@azure/cosmos`). The cache learns only from that account's
   * database-account responses, read from this endpoint or from one of the
   * account's regional endpoints; another account's are ignored, so its
   * requests pass through the policies untouched. Default: the account of
   * the first database-account response the cache learns from.
   */
  accountEndpoint?: string;
}

/**
 * The `regions` option of a policy: the cache given, shared with the client's
 * other policies, or a new one that learns the topology from the traffic.
 * Anything else is a `TypeError` that names the option and the value.
 */
export function regionCacheOption(value: unknown): RegionCache {
  if (value === undefined) return new RegionCache();
  if (value instanceof RegionCache || isBrandedRegionCache(value)) return value;
  throw new TypeError(`regions must be a RegionCache; got ${describe(value)}.`);
}

/**
 * The mark of a RegionCache of this version of the package, whichever build
 * (ESM or CommonJS) made it: an app that loads both (an ESM app with a
 * CommonJS dependency) may hand one build's cache to the other's policies,
 * which `instanceof` alone would refuse.
 */
const regionCacheBrand = Symbol.for(`${packageInfo.name}@${packageInfo.version} RegionCache`);

function isBrandedRegionCache(value: unknown): value is RegionCache {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[regionCacheBrand] === true;
}

/** Whether an operation reads (any read region) or writes (write regions only). */
export type RegionAccess = "read" | "write";

/**
 * A read region that the region ranking of the `crossRegionHedgingPolicy`
 * has demoted, because hedges to another region kept beating it: reads go
 * first to that region instead, until the demoted one serves well again.
 */
export interface RegionDemotion {
  /** The demoted region, as named when it was demoted. */
  readonly region: string;
  /** The region that beat it; it takes the demoted region's place in the read order. */
  readonly inFavourOf: string;
}

/** The most locations a database-account response may list before it is treated as malformed. */
const maxLocations = 256;

/** How many URL prefixes {@link RegionCache.regionOf} remembers: a few per region, scanned on every request. */
const maxRememberedPrefixes = 16;

class MalformedTopology extends Error {}

function parseEndpoint(where: string, value: unknown, Failure: new (message: string) => Error): string {
  if (typeof value !== "string") throw new Failure(`${where} must be a URL string; got ${describe(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Failure(`${where} is not a URL: ${describe(value)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new Failure(`${where} must be an http(s) URL; got scheme ${describe(url.protocol)}`);
  }
  if (url.username !== "" || url.password !== "") {
    // Credentials in an endpoint would travel into diagnostics and logs.
    throw new Failure(`${where} must not carry credentials`);
  }
  return url.href;
}

function parseLocations(where: string, value: unknown, Failure: new (message: string) => Error): RegionEndpoint[] {
  if (!Array.isArray(value)) throw new Failure(`${where} must be an array; got ${describe(value)}`);
  if (value.length > maxLocations) throw new Failure(`${where} lists ${value.length} locations, more than ${maxLocations}`);
  return value.map((entry: unknown, index) => {
    if (entry === null || typeof entry !== "object") {
      throw new Failure(`${where}[${index}] must be an object; got ${describe(entry)}`);
    }
    const { name } = entry as { name?: unknown };
    if (typeof name !== "string" || name.trim() === "") {
      throw new Failure(`${where}[${index}].name must be a non-empty string; got ${describe(name)}`);
    }
    // Region names end up in log lines and diagnostics: a line break in one could forge a log line.
    if (!isRegionName(name)) {
      throw new Failure(`${where}[${index}].name must be at most ${regionNameLimits.maxRegionNameLength} characters with no control character; got ${describe(name)}`);
    }
    const endpoint = parseEndpoint(
      `${where}[${index}].endpoint`,
      (entry as { endpoint?: unknown; databaseAccountEndpoint?: unknown }).endpoint ??
        (entry as { databaseAccountEndpoint?: unknown }).databaseAccountEndpoint,
      Failure,
    );
    return { name, endpoint };
  });
}

function optionalFlag(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined || value === null) return false;
  if (typeof value === "boolean") return value;
  logger.warning(`Database account field ${field} is ${describe(value)}, not a boolean; treating it as false.`);
  return false;
}

/** Parses a database-account body. Throws {@link MalformedTopology} when it cannot be trusted. */
function parseAccountBody(text: string): AccountTopology {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new MalformedTopology("the body is not JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new MalformedTopology("the body is not a JSON object");
  }
  const record = body as Record<string, unknown>;
  const readRegions = parseLocations("readableLocations", record["readableLocations"], MalformedTopology);
  const writeRegions = parseLocations("writableLocations", record["writableLocations"], MalformedTopology);
  if (readRegions.length === 0) throw new MalformedTopology("readableLocations is empty");
  if (writeRegions.length === 0) throw new MalformedTopology("writableLocations is empty");
  return {
    readRegions,
    writeRegions,
    multipleWriteLocations: optionalFlag(record, "enableMultipleWriteLocations"),
    perPartitionFailover: optionalFlag(record, "enablePerPartitionFailoverBehavior"),
    crossRegionalHedgingDisabled: optionalFlag(record, "disableCrossRegionalHedging"),
  };
}

function validateInit(init: AccountTopologyInit): AccountTopology {
  if (init === null || typeof init !== "object") {
    throw new TypeError(`topology must be an object; got ${describe(init)}.`);
  }
  const readRegions = parseLocations("topology.readRegions", init.readRegions, TypeError);
  if (readRegions.length === 0) throw new TypeError("topology.readRegions must list at least one region.");
  const writeRegions =
    init.writeRegions === undefined
      ? readRegions.slice(0, 1)
      : parseLocations("topology.writeRegions", init.writeRegions, TypeError);
  for (const flag of ["multipleWriteLocations", "perPartitionFailover", "crossRegionalHedgingDisabled"] as const) {
    if (init[flag] !== undefined && typeof init[flag] !== "boolean") {
      throw new TypeError(`topology.${flag} must be a boolean; got ${describe(init[flag])}.`);
    }
  }
  return {
    readRegions,
    writeRegions,
    multipleWriteLocations: init.multipleWriteLocations ?? false,
    perPartitionFailover: init.perPartitionFailover ?? false,
    crossRegionalHedgingDisabled: init.crossRegionalHedgingDisabled ?? false,
  };
}

function sameRegionOrder(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, index) => normalizeRegionName(name) === normalizeRegionName(b[index] ?? ""));
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The default port of each URL scheme, as written after a host (`:443`), by the scheme as `URL.protocol` gives it (`https:`). */
export const defaultPorts: Readonly<Record<string, string>> = { "http:": ":80", "https:": ":443" };

/**
 * The origin of a request URL by string scanning, as `new URL(url).origin`
 * would give it for the URLs the SDKs build (scheme and host in lower case,
 * the default port dropped), because every request asks. Anything unusual
 * (user info, IPv6, no scheme) takes the exact path.
 */
function requestOriginOf(url: string): string | undefined {
  const schemeEnd = url.indexOf("://");
  if (schemeEnd === -1) return originOf(url);
  let hostEnd = url.length;
  for (const delimiter of ["/", "?", "#"]) {
    const at = url.indexOf(delimiter, schemeEnd + 3);
    if (at !== -1 && at < hostEnd) hostEnd = at;
  }
  const authority = url.slice(schemeEnd + 3, hostEnd).toLowerCase();
  if (authority.includes("@") || authority.includes("[") || authority.includes("%")) return originOf(url);
  const scheme = url.slice(0, schemeEnd + 1).toLowerCase();
  const defaultPort = defaultPorts[scheme];
  const host = defaultPort !== undefined && authority.endsWith(defaultPort) ? authority.slice(0, -defaultPort.length) : authority;
  return `${scheme}//${host}`;
}

/** Every key of {@link RegionCacheOptions}, checked against the interface by the compiler. */
const regionCacheOptionKeys = optionKeys<RegionCacheOptions>({ topology: true, preferredRegions: true, excludedRegions: true, accountEndpoint: true });

/**
 * The account's regions, shared by every policy of a client: the single
 * source of truth for where a request may go.
 *
 * It learns the topology from each database-account response that flows
 * through the pipeline (see {@link RegionCache.observe}), or takes one
 * explicitly. It holds the preferred order and the client-level exclusions,
 * both changeable at runtime, and answers which regions a request may use.
 */
export class RegionCache {
  private current: AccountTopology | undefined;
  private byOrigin = new Map<string, RegionEndpoint>();
  /** The raw URL prefixes (scheme and authority as written) {@link RegionCache.regionOf} has answered for, under the current topology. */
  private readonly prefixes: string[] = [];
  /** Its answer for each of {@link RegionCache.prefixes}, at the same index. */
  private readonly prefixRegions: Array<RegionEndpoint | undefined> = [];
  private preferred: readonly string[] = [];
  private initialPreferred: readonly string[] = [];
  private preferredChanged = false;
  private excluded: ReadonlySet<string> = new Set();
  private excludedNames: readonly string[] = [];
  private readonly observed = new WeakSet<PipelineResponse>();
  /** The read and write orders (preferences and demotions applied), rebuilt only when one of those changes: every request asks. */
  private orders: Partial<Record<RegionAccess, readonly RegionEndpoint[]>> = {};
  private demotions: readonly RegionDemotion[] = [];
  private readonly stateLog = new RateLimitedLog(logger);
  /** The origin of the account endpoint this cache serves; set by the option or by the first account response learned from. */
  private accountOrigin: string | undefined;
  private readonly warnedOrigins = new Set<string>();

  constructor(options: RegionCacheOptions = {}) {
    optionsObject("RegionCache options", options, regionCacheOptionKeys);
    if (options.topology !== undefined) this.setTopology(options.topology);
    if (options.preferredRegions !== undefined) {
      this.preferred = regionNameList("preferredRegions", options.preferredRegions);
      this.initialPreferred = this.preferred;
    }
    if (options.excludedRegions !== undefined) this.setExcludedRegions(options.excludedRegions);
    if (options.accountEndpoint !== undefined) {
      this.accountOrigin = new URL(parseEndpoint("accountEndpoint", options.accountEndpoint, TypeError)).origin;
    }
  }

  /** The endpoint origin of the account this cache serves, once known (see {@link RegionCacheOptions.accountEndpoint}). */
  get accountEndpoint(): string | undefined {
    return this.accountOrigin;
  }

  /** The current topology, or `undefined` before the account has been read. */
  get topology(): AccountTopology | undefined {
    return this.current;
  }

  /** The preferred-region order in force. */
  get preferredRegions(): readonly string[] {
    return this.preferred;
  }

  /**
   * The preferred-region order the cache was created with: the order the
   * client (for example `@azure/cosmos` with the same `preferredLocations`)
   * routes by on its own.
   */
  get initialPreferredRegions(): readonly string[] {
    return this.initialPreferred;
  }

  /**
   * Whether the preferred order in force differs from the one the cache was
   * created with, because {@link RegionCache.setPreferredRegions} changed it
   * at runtime. While it does, the client's own routing no longer matches
   * the preference, and requests are re-pointed to follow it.
   */
  get preferredRegionsChangedAtRuntime(): boolean {
    return this.preferredChanged;
  }

  /** The client-level excluded regions in force. */
  get excludedRegions(): readonly string[] {
    return this.excludedNames;
  }

  /** The demoted read regions, oldest demotion first. */
  get demotedRegions(): readonly RegionDemotion[] {
    return this.demotions;
  }

  /**
   * Demotes a read region in favour of another: from the next request on,
   * {@link RegionCache.applicableRegions} puts `inFavourOf` where `region`
   * was in the read order and `region` last. Writes are not affected.
   * Demoting a region again replaces its earlier demotion. Names compare in
   * any case and spacing; a region that the account does not have (now or
   * yet) is kept and simply does not affect the order.
   */
  demoteRegion(region: string, inFavourOf: string): void {
    const [demoted, winner] = regionNameList("demoteRegion arguments", [region, inFavourOf]) as [string, string];
    const key = normalizeRegionName(demoted);
    if (key === normalizeRegionName(winner)) {
      throw new RangeError(`Cannot demote region ${describe(demoted)} in favour of itself.`);
    }
    this.demotions = [...this.demotions.filter((entry) => normalizeRegionName(entry.region) !== key), { region: demoted, inFavourOf: winner }];
    this.orders = {};
    this.stateLog.info(`region ${key}`, `Demoted read region ${JSON.stringify(demoted)}: reads go first to ${JSON.stringify(winner)} until it serves well again.`);
  }

  /**
   * Lifts the demotion of a read region (any case and spacing).
   * @returns whether the region was demoted.
   */
  restoreRegion(region: string): boolean {
    const [name] = regionNameList("restoreRegion argument", [region]) as [string];
    const key = normalizeRegionName(name);
    const remaining = this.demotions.filter((entry) => normalizeRegionName(entry.region) !== key);
    const restored = remaining.length !== this.demotions.length;
    this.demotions = remaining;
    this.orders = {};
    if (restored) this.stateLog.info(`region ${key}`, `Restored read region ${JSON.stringify(name)}: reads follow the preferred order again.`);
    return restored;
  }

  /** Whether a read region (or a region of that name, any case and spacing) is demoted. */
  isDemoted(region: RegionEndpoint | string): boolean {
    const key = normalizeRegionName(typeof region === "string" ? region : region.name);
    return this.demotions.some((entry) => normalizeRegionName(entry.region) === key);
  }

  /** Replaces the topology with one given explicitly. Throws a `TypeError` on bad input. */
  setTopology(topology: AccountTopologyInit): void {
    this.install(validateInit(topology));
  }

  /** Sets the preferred-region order; takes effect on the next request. */
  setPreferredRegions(regions: readonly string[]): void {
    this.preferred = regionNameList("preferredRegions", regions);
    this.orders = {};
    this.preferredChanged = !sameRegionOrder(this.preferred, this.initialPreferred);
  }

  /**
   * Sets the client-level excluded regions; takes effect on the next request,
   * and on the hedges not yet sent of requests in flight (a hedge never goes
   * to a region excluded by the time it is due).
   */
  setExcludedRegions(regions: readonly string[]): void {
    const names = regionNameList("excludedRegions", regions);
    this.excludedNames = names;
    this.excluded = new Set(names.map(normalizeRegionName));
  }

  /**
   * Learns the topology from a database-account response (a `GET` on the
   * account root) of the account this cache serves. Other responses, and
   * another account's, are ignored (the latter with one warning). A
   * malformed body keeps the previous topology and logs a warning; this
   * never throws.
   * @returns whether the topology was replaced.
   */
  observe(request: PipelineRequest, response: PipelineResponse): boolean {
    if (response.status !== 200 || classifyOperation(request) !== "accountRead") return false;
    // Every policy of a client passes the same account response here; learn from it (and warn about it) once.
    if (this.observed.has(response)) return false;
    this.observed.add(response);
    const text = response.bodyAsText;
    if (typeof text !== "string") return false;
    const origin = requestOriginOf(request.url);
    if (origin === undefined || !this.servesAccountAt(origin)) {
      this.warnOtherAccount(origin ?? "an unparsable URL");
      return false;
    }
    try {
      this.install(parseAccountBody(text));
      this.accountOrigin ??= origin;
      return true;
    } catch (error) {
      if (!(error instanceof MalformedTopology)) throw error;
      logger.warning(`Ignoring a malformed database-account response (${error.message}); keeping the previous topology.`);
      return false;
    }
  }

  /** The region whose endpoint has the URL's origin, or `undefined` for an unknown host. */
  regionOf(url: string): RegionEndpoint | undefined {
    // Every policy asks for every request, and a client addresses a handful of hosts: remember them by the URL's raw
    // prefix, found again by a scan that allocates nothing (a map would hash a fresh slice of the URL every time).
    const { prefixes, prefixRegions } = this;
    for (let index = 0; index < prefixes.length; index++) {
      const prefix = prefixes[index] as string;
      // A remembered prefix runs to the "/" (47) that starts the path, so the same host with a longer name or port does not match.
      if (url.charCodeAt(prefix.length) === 47 && url.startsWith(prefix)) return prefixRegions[index];
    }
    const schemeEnd = url.indexOf("://");
    const authorityEnd = schemeEnd === -1 ? -1 : url.indexOf("/", schemeEnd + 3);
    const prefix = authorityEnd === -1 ? undefined : url.slice(0, authorityEnd);
    const cacheable = prefix !== undefined && !prefix.includes("?") && !prefix.includes("#");
    const origin = requestOriginOf(url);
    const region = origin === undefined ? undefined : this.byOrigin.get(origin);
    if (cacheable) {
      if (prefixes.length >= maxRememberedPrefixes) this.forgetPrefixes();
      prefixes.push(prefix);
      prefixRegions.push(region);
    }
    return region;
  }

  private forgetPrefixes(): void {
    this.prefixes.length = 0;
    this.prefixRegions.length = 0;
  }

  /** The read or write region of that name (any case and spacing), or `undefined`. */
  regionNamed(name: string, access: RegionAccess = "read"): RegionEndpoint | undefined {
    const wanted = normalizeRegionName(name);
    return this.regionsFor(access).find((region) => normalizeRegionName(region.name) === wanted);
  }

  /** Whether a region is excluded client-wide or by the given extra exclusions (region names, any case and spacing). */
  isExcluded(region: RegionEndpoint, extraExcluded?: readonly string[]): boolean {
    const key = regionKey(region);
    return this.excluded.has(key) || (extraExcluded?.some((name) => normalizeRegionName(name) === key) ?? false);
  }

  /**
   * The regions a request may use, in hedge order: the preferred order
   * intersected with the account's read (or write) regions, or the account's
   * order without a preferred list, minus the excluded regions. For reads,
   * each demoted region (see {@link RegionCache.demoteRegion}) gives its
   * place to the region it was demoted in favour of and goes last.
   * @param extraExcluded - per-request exclusions: region names, any case and spacing.
   */
  applicableRegions(access: RegionAccess, extraExcluded?: readonly string[]): RegionEndpoint[] {
    let order = this.orders[access];
    if (order === undefined) {
      const ordered = this.orderedRegions(access);
      order = access === "read" ? this.applyDemotions(ordered) : ordered;
      this.orders[access] = order;
    }
    return order.filter((region) => !this.isExcluded(region, extraExcluded));
  }

  /** Whether an account read sent to `origin` is about the account this cache serves. */
  private servesAccountAt(origin: string): boolean {
    if (this.accountOrigin === undefined) return true;
    return origin === this.accountOrigin || this.byOrigin.has(origin);
  }

  private warnOtherAccount(origin: string): void {
    if (this.warnedOrigins.has(origin) || this.warnedOrigins.size >= maxLocations) return;
    this.warnedOrigins.add(origin);
    logger.warning(
      `This hedging client serves the account at ${this.accountOrigin ?? "another endpoint"}; ignoring the database account read from ${origin}. ` +
        "Requests to that account pass through unhedged: give each account its own hedging client.",
    );
  }

  private applyDemotions(regions: RegionEndpoint[]): RegionEndpoint[] {
    const indexOf = (name: string): number => {
      const key = normalizeRegionName(name);
      return regions.findIndex((region) => normalizeRegionName(region.name) === key);
    };
    for (const { region, inFavourOf } of this.demotions) {
      const demotedAt = indexOf(region);
      if (demotedAt < 0) continue;
      const [demoted] = regions.splice(demotedAt, 1) as [RegionEndpoint];
      const winnerAt = indexOf(inFavourOf);
      if (winnerAt > demotedAt) {
        const [winner] = regions.splice(winnerAt, 1) as [RegionEndpoint];
        regions.splice(demotedAt, 0, winner);
      }
      regions.push(demoted);
    }
    return regions;
  }

  private orderedRegions(access: RegionAccess): RegionEndpoint[] {
    const regions = this.regionsFor(access);
    if (this.preferred.length === 0) return [...regions];
    const ordered: RegionEndpoint[] = [];
    for (const name of this.preferred) {
      const wanted = normalizeRegionName(name);
      const match = regions.find((region) => normalizeRegionName(region.name) === wanted);
      if (match !== undefined && !ordered.includes(match)) ordered.push(match);
    }
    return ordered;
  }

  private regionsFor(access: RegionAccess): readonly RegionEndpoint[] {
    if (this.current === undefined) return [];
    return access === "read" ? this.current.readRegions : this.current.writeRegions;
  }

  private install(topology: AccountTopology): void {
    const byOrigin = new Map<string, RegionEndpoint>();
    for (const region of [...topology.readRegions, ...topology.writeRegions]) {
      const origin = originOf(region.endpoint);
      if (origin !== undefined && !byOrigin.has(origin)) byOrigin.set(origin, region);
    }
    for (const { key, line } of topologyChangeLines(this.current, topology)) this.stateLog.info(key, line);
    this.current = topology;
    this.orders = {};
    this.byOrigin = byOrigin;
    this.forgetPrefixes();
  }
}

Object.defineProperty(RegionCache.prototype, regionCacheBrand, { value: true });
