import { normalizeRegionName } from "../topology/regionNames.js";
import { describe, optionKeys, positiveMilliseconds, regionName, regionNameList } from "../options.js";
import type { RequestHedgingControls, RequestHedgingSetting } from "../request/requestModel.js";
import { runWithRequestControls } from "../request/requestControls.js";
import { hedgingOffHeaderValue, requestControlHeaders } from "../cosmos/headers.js";
import { headerJson } from "../cosmos/sdkRequestPlugin.js";

/** Hedging choices for one request, or for every request of a block of code. */
export interface RequestHedgingOptions {
  /**
   * Regions this request and its hedges must not go to, on top of the
   * client's excluded regions. When they would leave no region at all, the
   * request goes where the SDK sent it and the diagnostics say so. An empty
   * list clears the exclusions of an enclosing {@link withRequestHedgingOptions}.
   * `hedgingRequestOptions` also hands them to `@azure/cosmos` as its
   * `excludedLocations`, so that the SDK routes and retries the request itself.
   */
  excludedRegions?: readonly string[];
  /**
   * The one region this request must go to; it is not hedged. Reads may
   * name any read region of the account, writes a write region only; any
   * other region fails the request before it is sent.
   */
  region?: string;
  /**
   * `false`: no hedge for this request. An object: hedge this request with
   * these settings in milliseconds (each defaulting to the policy's), even
   * where the client's policy would not hedge it (turned off, or following
   * an account without per-partition automatic failover), as a request-level
   * setting does in .NET. Only the `AZURE_COSMOS_METADATA_HEDGING_ENABLED=false`
   * kill switch (for metadata reads) and the account's
   * `disableCrossRegionalHedging` win over it.
   */
  hedging?: false | { threshold?: number; thresholdStep?: number };
}

/** Request headers in the shape of `@azure/cosmos`'s `initialHeaders`. */
export type InitialHeaders = Record<string, string | number | boolean>;

/** A partial `@azure/cosmos` request-options object, to spread into the options of any call. */
export interface HedgingRequestOptionsResult {
  /** The control headers; the hedging policies read and remove them, so they never reach the service. */
  initialHeaders: Record<string, string>;
  /**
   * The `excludedRegions`, as `@azure/cosmos`'s own `excludedLocations`
   * (absent when none is named): the SDK then routes the request, and
   * books its failures, exactly as it would without hedging.
   */
  excludedLocations?: string[];
}

const optionNames: ReadonlySet<string> = new Set(optionKeys<RequestHedgingOptions>({ excludedRegions: true, region: true, hedging: true }));
const hedgingFieldNames: ReadonlySet<string> = new Set(
  optionKeys<Exclude<RequestHedgingOptions["hedging"], false | undefined>>({ threshold: true, thresholdStep: true }),
);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function hedgingSetting(value: unknown): RequestHedgingSetting {
  if (value === false) return false;
  if (!isPlainObject(value)) {
    throw new TypeError(`hedging must be false or an object with threshold and thresholdStep; got ${describe(value)}.`);
  }
  const setting: { threshold?: number; thresholdStep?: number } = {};
  for (const [key, field] of Object.entries(value)) {
    if (!hedgingFieldNames.has(key)) {
      throw new TypeError(`Unknown hedging option ${describe(key)}; expected threshold or thresholdStep.`);
    }
    if (field === undefined) continue;
    setting[key as "threshold" | "thresholdStep"] = positiveMilliseconds(`hedging.${key}`, field);
  }
  return Object.freeze(setting);
}

/** Validates request hedging options into controls; throws a `TypeError` or `RangeError` naming the problem. */
function validateOptions(options: unknown): RequestHedgingControls {
  if (!isPlainObject(options)) {
    throw new TypeError(`request hedging options must be an object; got ${describe(options)}.`);
  }
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) {
      throw new TypeError(`Unknown request hedging option ${describe(key)}; expected excludedRegions, region or hedging.`);
    }
  }
  const excludedRegions = options["excludedRegions"] === undefined ? undefined : regionNameList("excludedRegions", options["excludedRegions"]);
  const region = options["region"] === undefined ? undefined : regionName("region", options["region"]);
  const hedging = options["hedging"] === undefined ? undefined : hedgingSetting(options["hedging"]);
  if (region !== undefined && excludedRegions?.some((name) => normalizeRegionName(name) === normalizeRegionName(region))) {
    throw new TypeError(`region ${describe(region)} is also in excludedRegions; a request cannot both require and exclude a region.`);
  }
  return Object.freeze({
    ...(excludedRegions !== undefined ? { excludedRegions } : {}),
    ...(region !== undefined ? { region } : {}),
    ...(hedging !== undefined ? { hedging } : {}),
  });
}

function controlHeaders(controls: RequestHedgingControls): Record<string, string> {
  const headers: Record<string, string> = {};
  if (controls.excludedRegions !== undefined) headers[requestControlHeaders.excludedRegions] = headerJson(controls.excludedRegions);
  if (controls.region !== undefined) headers[requestControlHeaders.region] = headerJson(controls.region);
  if (controls.hedging !== undefined) {
    headers[requestControlHeaders.hedging] = controls.hedging === false ? hedgingOffHeaderValue : headerJson(controls.hedging);
  }
  return headers;
}

/**
 * Hedging choices for one `@azure/cosmos` request: exclude regions, pin it
 * to a region, or turn hedging off or tune it. Returns a partial request
 * options object to spread into the options of any call; with your own
 * request options as the second argument, returns a copy of them whose
 * `initialHeaders` hold both yours and the hedging ones. Excluded regions
 * are also returned as the SDK's own `excludedLocations` (after yours), so
 * that `@azure/cosmos` routes the request, walks its retries and marks
 * regions unavailable exactly as it would without hedging.
 *
 * The choices travel as request headers that the hedging policies read and
 * remove, so they never reach the service. Bad input throws before anything
 * is sent: a `TypeError` for an unknown option, a region that is not a
 * non-empty string, a value with CR, LF or another control character, or a
 * `hedging` that is neither `false` nor an object; a `RangeError` for a
 * threshold that is not a positive number.
 *
 * @example
 * ```ts
 * await container.item(id, pk).read(hedgingRequestOptions({ excludedRegions: ["West US"] }));
 * await container.items.query(sql, hedgingRequestOptions({ hedging: false }, { maxItemCount: 10 })).fetchAll();
 * ```
 */
export function hedgingRequestOptions(options: RequestHedgingOptions): HedgingRequestOptionsResult;
/**
 * Hedging choices for one `@azure/cosmos` request, merged into a copy of
 * your own request options: the copy's `initialHeaders` hold both yours and
 * the hedging ones (a control header of yours that a choice sets, in any
 * case, is replaced), and its `excludedLocations` hold yours and the
 * excluded regions, each region once. Validation is as for the
 * single-argument form; an `excludedLocations` of yours that is not an
 * array of strings is refused with a `TypeError` (whether or not
 * regions are excluded), before anything is sent.
 * @param options - the hedging choices.
 * @param requestOptions - your own request options; they are copied, not changed.
 */
export function hedgingRequestOptions<T extends object>(
  options: RequestHedgingOptions,
  requestOptions: T,
): T & { initialHeaders: InitialHeaders; excludedLocations?: string[] };
export function hedgingRequestOptions(
  options: RequestHedgingOptions,
  requestOptions?: object,
): HedgingRequestOptionsResult | { initialHeaders: InitialHeaders; excludedLocations?: string[] } {
  const controls = validateOptions(options);
  const headers = controlHeaders(controls);
  if (requestOptions === undefined) return withSdkExclusions({ initialHeaders: headers }, controls.excludedRegions, undefined);
  if (!isPlainObject(requestOptions)) {
    throw new TypeError(`requestOptions must be an object; got ${describe(requestOptions)}.`);
  }
  const own = requestOptions["initialHeaders"];
  if (own !== undefined && !isPlainObject(own)) {
    throw new TypeError(`requestOptions.initialHeaders must be an object; got ${describe(own)}.`);
  }
  const replaced = new Set(Object.keys(headers));
  const merged: InitialHeaders = {};
  // HTTP header names ignore case: a differently cased copy of a control header would compete with ours.
  for (const [name, value] of Object.entries(own ?? {})) {
    if (!replaced.has(name.toLowerCase())) merged[name] = value as string | number | boolean;
  }
  return withSdkExclusions({ ...requestOptions, initialHeaders: { ...merged, ...headers } }, controls.excludedRegions, requestOptions["excludedLocations"]);
}

/**
 * `result` with `excluded` added to the SDK's own `excludedLocations` (after
 * the caller's, each region once). Handing the exclusions to `@azure/cosmos`
 * rather than only re-pointing its attempts below it keeps its walk and its
 * bookkeeping its own: a region it marks unavailable after a 403, or a
 * partition its circuit breaker counts a failure against, is the region
 * that failed, as without hedging. The control header stays, so that the
 * hedges and the requests the SDK does not apply exclusions to (metadata
 * reads) keep out of them too.
 */
function withSdkExclusions<R extends object>(result: R, excluded: readonly string[] | undefined, own: unknown): R & { excludedLocations?: string[] } {
  const locations = callerExclusions(own);
  if (excluded === undefined || excluded.length === 0) return result;
  const named = new Set(locations.map(normalizeRegionName));
  for (const region of excluded) {
    const key = normalizeRegionName(region);
    if (named.has(key)) continue;
    named.add(key);
    locations.push(region);
  }
  return { ...result, excludedLocations: locations };
}

/**
 * A copy of the caller's `excludedLocations` as `@azure/cosmos` reads it,
 * or a `TypeError` for one the SDK would fail on only once the request is
 * under way. The SDK maps the list's names when its `length` is not 0 and
 * ignores it otherwise, so a value without a length (an object, a `Set`, an
 * empty string) is no list, as it is to plain. Holes are left out, as the
 * SDK's `map` leaves them; a `String` object is read as its string, as the
 * SDK's `replace` reads it.
 */
function callerExclusions(own: unknown): string[] {
  if (own === undefined) return [];
  if (own === null || !(own as { length?: unknown }).length) {
    // The SDK's default applies to undefined only: a null list fails it.
    if (own === null) throw new TypeError(`requestOptions.excludedLocations must be an array of region names; got ${describe(own)}.`);
    return [];
  }
  if (!Array.isArray(own)) {
    throw new TypeError(`requestOptions.excludedLocations must be an array of region names; got ${describe(own)}.`);
  }
  const names: string[] = [];
  // Array.prototype's own forEach, not the list's (a subclass may override it), visits the entries the SDK's map does.
  Array.prototype.forEach.call(own, (name: unknown, index: number) => {
    if (name instanceof String) names.push(String(name));
    else if (typeof name === "string") names.push(name);
    else throw new TypeError(`requestOptions.excludedLocations[${index}] must be a region name; got ${describe(name)}.`);
  });
  return names;
}

/**
 * Runs `fn` with hedging choices applying to every request it makes, for
 * code paths where request options cannot be passed. The choices follow
 * the asynchronous work that `fn` starts (through `AsyncLocalStorage`);
 * choices given to a request itself win over them, field by field, and
 * nested calls add to the enclosing choices the same way. Options are
 * validated as by `hedgingRequestOptions`, before `fn` runs.
 *
 * @returns what `fn` returns (a promise when `fn` is async).
 * @example
 * ```ts
 * const items = await withRequestHedgingOptions({ excludedRegions: ["West US"] }, () => loadDashboard(container));
 * ```
 */
export function withRequestHedgingOptions<T>(options: RequestHedgingOptions, fn: () => T): T {
  const controls = validateOptions(options);
  if (typeof fn !== "function") throw new TypeError(`fn must be a function; got ${describe(fn)}.`);
  return runWithRequestControls(controls, fn);
}
