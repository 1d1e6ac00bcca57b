import { AsyncLocalStorage } from "node:async_hooks";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { fromPluginHeader, hedgingOffHeaderValue, requestControlHeaders, sdkExclusionsRefused } from "../cosmos/headers.js";
import { logger } from "../log.js";
import type { RequestHedgingControls, RequestHedgingSetting } from "./requestModel.js";
import { carriedStateOf, requestStateOf, stateIfAny } from "./requestState.js";
import { originalOf } from "./originalRequest.js";
import { isRegionName, isTimerMilliseconds, regionNameLimits } from "../options.js";
import { normalizeRegionName } from "../topology/regionNames.js";

const controlHeaderNames: readonly string[] = Object.values(requestControlHeaders);

const noControls: RequestHedgingControls = Object.freeze({});
const sdkOptionsOnly: RequestHedgingControls = Object.freeze({ sdkOptionsKnown: true });
const scope = new AsyncLocalStorage<RequestHedgingControls>();

class GarbageHeader extends Error {}

const tooManyRegions = `it lists more than ${regionNameLimits.maxRegions} regions`;
const notRegionNames = "an entry is not a region name";

/** The reasons behind the request plugin's {@link sdkExclusionsRefused} values, for the warning: the same as a list parsed here would give. */
const refusedSdkExclusions: ReadonlyMap<string, string> = new Map([
  [sdkExclusionsRefused.tooMany, tooManyRegions],
  [sdkExclusionsRefused.notRegionNames, notRegionNames],
]);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new GarbageHeader("it is not valid JSON");
  }
}

const noRegions: readonly string[] = Object.freeze([]);

function parseExcludedRegions(text: string): readonly string[] {
  // What the SDK plugin writes on nearly every request.
  if (text === "[]") return noRegions;
  // What it writes for a list it has already found unreadable.
  const refused = refusedSdkExclusions.get(text);
  if (refused !== undefined) throw new GarbageHeader(refused);
  const value = parseJson(text);
  if (!Array.isArray(value)) throw new GarbageHeader("it is not a JSON array");
  if (value.length > regionNameLimits.maxRegions) throw new GarbageHeader(tooManyRegions);
  if (!value.every(isRegionName)) throw new GarbageHeader(notRegionNames);
  return Object.freeze([...value]);
}

function parseRegion(text: string): string {
  const value = parseJson(text);
  if (!isRegionName(value)) throw new GarbageHeader("it is not a JSON string naming a region");
  return value;
}

function parseHedging(text: string): RequestHedgingSetting {
  if (text.trim().toLowerCase() === hedgingOffHeaderValue) return false;
  const notAnObject = new GarbageHeader(`it is neither "${hedgingOffHeaderValue}" nor a JSON object`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw notAnObject;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw notAnObject;
  const record = value as Record<string, unknown>;
  const setting: { threshold?: number; thresholdStep?: number } = {};
  for (const [key, field] of Object.entries(record)) {
    if (key !== "threshold" && key !== "thresholdStep") throw new GarbageHeader("it has a field other than threshold and thresholdStep");
    if (!isTimerMilliseconds(field)) throw new GarbageHeader(`its ${key} is not a positive number of milliseconds below 2^31 - 1`);
    setting[key] = field;
  }
  return Object.freeze(setting);
}

const warned = new Set<string>();

/** Warns once per kind of problem: a bad value repeated on every request must not flood the log. */
function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  logger.warning(message);
}

function warnGarbage(header: string, problem: string): void {
  warnOnce(`${header}:${problem}`, `Ignoring the ${header} request header: ${problem}.`);
}

/**
 * Forgets every garbage header warned about, so that each warns again once.
 * @internal For tests: the de-duplication is process-wide, so without this
 * a test's warning depends on what ran before it. Not exported by the package.
 */
export function resetControlHeaderWarnings(): void {
  warned.clear();
}

function parseHeader<T>(request: PipelineRequest, header: string, parse: (text: string) => T): T | undefined {
  const text = request.headers.get(header);
  if (text === undefined) return undefined;
  request.headers.delete(header);
  try {
    return parse(text);
  } catch (error) {
    if (!(error instanceof GarbageHeader)) throw error;
    warnGarbage(header, error.message);
    return undefined;
  }
}

/**
 * The SDK's `excludedLocations` of a request, from the plugin's header. The
 * SDK takes names that ours refuse (control characters, hundreds of
 * entries); such a request cannot be steered safely, and the warning names
 * the option the user wrote, not our header.
 */
function parseSdkExclusions(request: PipelineRequest): readonly string[] | "unreadable" | undefined {
  const written = request.headers.get(requestControlHeaders.sdkExcludedRegions);
  if (written === undefined) return undefined;
  request.headers.delete(requestControlHeaders.sdkExcludedRegions);
  // A header the plugin did not write (a caller's, through initialHeaders) says nothing of the SDK's options.
  const text = fromPluginHeader(written);
  if (text === undefined) return undefined;
  try {
    return parseExcludedRegions(text);
  } catch (error) {
    if (!(error instanceof GarbageHeader)) throw error;
    return unreadableSdkExclusions(error.message);
  }
}

/** Warns once per problem that the SDK's exclusions cannot be read: the user wrote `excludedLocations`, not our header. */
function unreadableSdkExclusions(problem: string): "unreadable" {
  warnOnce(`sdk:${problem}`, `A request's @azure/cosmos excludedLocations cannot be read (${problem}); the request is sent where the SDK sent it, unhedged.`);
  return "unreadable";
}

function hasControlHeader(request: PipelineRequest): boolean {
  return controlHeaderNames.some((name) => request.headers.has(name));
}

function stripControlHeaders(request: PipelineRequest): void {
  for (const name of controlHeaderNames) request.headers.delete(name);
}

function parseControlHeaders(request: PipelineRequest): RequestHedgingControls {
  const excludedRegions = parseHeader(request, requestControlHeaders.excludedRegions, parseExcludedRegions);
  const region = parseHeader(request, requestControlHeaders.region, parseRegion);
  const hedging = parseHeader(request, requestControlHeaders.hedging, parseHedging);
  if (excludedRegions === undefined && region === undefined && hedging === undefined) return noControls;
  return Object.freeze({
    ...(excludedRegions !== undefined ? { excludedRegions } : {}),
    ...(region !== undefined ? { region } : {}),
    ...(hedging !== undefined ? { hedging } : {}),
  });
}

/** `inner`'s choices over `outer`'s, field by field. */
function overlay(outer: RequestHedgingControls | undefined, inner: RequestHedgingControls): RequestHedgingControls {
  if (outer === undefined) return inner;
  return Object.freeze({ ...outer, ...inner });
}

/**
 * Adds the SDK's own exclusions to the request's: they bind every arm, and
 * nothing of ours can lift them. A header that cannot be read leaves the
 * SDK's options unknown, which the hedging client treats as "do not hedge".
 */
function withSdkExclusions(controls: RequestHedgingControls, sdkExcluded: readonly string[] | undefined): RequestHedgingControls {
  if (sdkExcluded === undefined) return controls;
  // What nearly every request of a withHedging client carries: the SDK's options, excluding nothing.
  if (controls === noControls && sdkExcluded.length === 0) return sdkOptionsOnly;
  if (sdkExcluded.length === 0) return Object.freeze({ ...controls, sdkOptionsKnown: true });
  const own = controls.excludedRegions ?? noRegions;
  const excludedRegions = Object.freeze([...own, ...sdkExcluded]);
  const ownKeys = new Set(own.map(normalizeRegionName));
  const sdkOnlyExcludedRegions = Object.freeze(sdkExcluded.filter((name) => !ownKeys.has(normalizeRegionName(name))));
  return Object.freeze({ ...controls, excludedRegions, sdkOnlyExcludedRegions, sdkOptionsKnown: true });
}

/** The request's own control headers over the scope's, then the SDK's options as the request plugin gave them. */
function withSdkOptions(request: PipelineRequest, sdkExcluded: readonly string[] | "unreadable" | undefined, sdkRetry: boolean): RequestHedgingControls {
  const own = overlay(scope.getStore(), parseControlHeaders(request));
  const controls = sdkExcluded === "unreadable" ? Object.freeze({ ...own, sdkOptionsKnown: false }) : withSdkExclusions(own, sdkExcluded);
  return sdkRetry ? Object.freeze({ ...controls, sdkRetry: true }) : controls;
}

/**
 * Records the controls of a request the `@azure/cosmos` request plugin
 * handed over with the SDK's options (see `handOver`): the exclusions as the
 * plugin checked and copied them, or the marker of a list it refused, and
 * whether the request is one of the SDK's retries. The request's own control
 * headers (from `hedgingRequestOptions`) are read and removed as
 * {@link requestControlsOf} does, and so is any header that pretends to be
 * the plugin's: the plugin's word is the one it handed over.
 */
export function adoptSdkOptions(request: PipelineRequest, sdkExcluded: readonly string[] | string, sdkRetry: boolean): RequestHedgingControls {
  request.headers.delete(requestControlHeaders.sdkExcludedRegions);
  request.headers.delete(requestControlHeaders.sdkRetry);
  const exclusions = typeof sdkExcluded === "string" ? unreadableSdkExclusions(refusedSdkExclusions.get(sdkExcluded) ?? sdkExcluded) : sdkExcluded;
  const controls = withSdkOptions(request, exclusions, sdkRetry);
  requestStateOf(request).controls = controls;
  return controls;
}

/**
 * The controls a request of a `withHedging` client has when the SDK's
 * request plugin handed it over plain: no exclusions of the SDK's, not one
 * of its retries, no control headers, no scope of
 * {@link runWithRequestControls} around it. What {@link adoptSdkOptions}
 * gives such a request.
 */
export const plainSdkControls: RequestHedgingControls = sdkOptionsOnly;

/**
 * Records the controls of a plain attempt, which carries no control header
 * of its own to read: {@link plainSdkControls}. What {@link adoptSdkOptions}
 * records for it, without looking for headers it cannot have.
 */
export function adoptPlainSdkOptions(request: PipelineRequest): void {
  requestStateOf(request).controls = sdkOptionsOnly;
}

/** Whether {@link runWithRequestControls} has run in this process: until it has, no context is inside it. */
let scopedEver = false;

/** Whether the current asynchronous context runs inside {@link runWithRequestControls}: its requests are not plain. */
export function hasScopedControls(): boolean {
  return scopedEver && scope.getStore() !== undefined;
}

/**
 * Records the controls of a request, for the policies after this point in
 * the pipeline. Any control headers still on the request are removed, so
 * that they never leave the process.
 */
export function setRequestControls(request: PipelineRequest, controls: RequestHedgingControls): void {
  stripControlHeaders(request);
  requestStateOf(request).controls = controls;
}

/**
 * The controls of a request; empty when none were given. The first call for
 * a request reads and removes its control headers (see
 * {@link requestControlHeaders}), merges them over the scope of
 * {@link runWithRequestControls} (the headers win, field by field) and
 * remembers the result; later calls return it. A hedge arm, or a copy a
 * policy of the caller's made of a request (a spread, a proxy), that carries
 * no control headers of its own gets its original request's controls. A
 * malformed control header is logged and ignored: this never throws.
 */
export function requestControlsOf(request: PipelineRequest): RequestHedgingControls {
  const state = requestStateOf(request);
  if (state.controls !== undefined) return state.controls;
  let controls: RequestHedgingControls;
  if (hasControlHeader(request)) {
    const sdkExcluded = parseSdkExclusions(request);
    const retryMarker = request.headers.get(requestControlHeaders.sdkRetry);
    if (retryMarker !== undefined) request.headers.delete(requestControlHeaders.sdkRetry);
    const sdkRetry = retryMarker !== undefined && fromPluginHeader(retryMarker) !== undefined;
    controls = withSdkOptions(request, sdkExcluded, sdkRetry);
  } else {
    const original = originalOf(request);
    // A hedge arm has its original's controls; so has a copy a policy of the caller's made of a request (a spread, a proxy).
    controls = (original !== undefined ? stateIfAny(original)?.controls : undefined) ?? carriedStateOf(request)?.controls ?? scope.getStore() ?? noControls;
  }
  state.controls = controls;
  return controls;
}

/**
 * Runs `fn` with `controls` applying to every request it starts in this
 * asynchronous context; a request's own control headers win over them,
 * field by field. Nested calls add to the enclosing controls, the inner
 * ones winning field by field. The controls must already be validated.
 */
export function runWithRequestControls<T>(controls: RequestHedgingControls, fn: () => T): T {
  scopedEver = true;
  return scope.run(overlay(scope.getStore(), Object.freeze({ ...controls })), fn);
}
