import { logger } from "../log.js";
import { isPackageHeaderName, pluginHeaderValue, requestControlHeaders, sdkExclusionsRefused } from "./headers.js";
import { isRegionName, regionNameLimits } from "../options.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { operationHeaderName, operationNamedIn, registerOperation } from "../diagnostics/dispatchRecording.js";
import { feedOperationOf, runAs } from "./operationPlugin.js";
import type { SdkAttempt } from "./attemptHandoff.js";
import { handOver } from "./attemptHandoff.js";
import { hasScopedControls } from "../request/requestControls.js";
import type { SdkBookkeeping } from "./sdkBookkeeping.js";
import { keepOperationContext } from "./sdkBookkeeping.js";
import type { SdkVersionGate } from "./sdkVersion.js";
import { standsAsideForContext } from "./sdkVersion.js";

/** The parts of an `@azure/cosmos` request context that the plugin reads and writes. */
export interface CosmosRequestContext {
  headers?: Record<string, unknown>;
  resourceType?: unknown;
  operationType?: unknown;
  method?: unknown;
  options?: { excludedLocations?: unknown; initialHeaders?: unknown };
  retryCount?: unknown;
  httpClient?: unknown;
  /** The endpoint the SDK resolved for the attempt, from which it builds the request's URL. */
  endpoint?: unknown;
  /** The SDK's own pipeline (AAD auth), through which it calls the `httpClient` later, not in the same run. */
  pipeline?: unknown;
  /** The client's plugins, in the order the SDK runs them. */
  plugins?: unknown;
  /** The SDK's `GlobalEndpointManager`, whose endpoint discovery {@link SdkBookkeeping} tells of an answer a hedge hid. */
  globalEndpointManager?: unknown;
}

/**
 * An `@azure/cosmos` request plugin (`PluginConfig` with `on: PluginOn.request`),
 * typed structurally so that this package needs none of the SDK's types.
 */
export interface CosmosRequestPlugin {
  readonly on: "request";
  readonly plugin: (context: CosmosRequestContext, diagnosticNode: unknown, next: (context: CosmosRequestContext) => Promise<unknown>) => Promise<unknown>;
}

/** JSON with every non-ASCII character escaped: header values must be Latin-1, region names need not be. */
export function headerJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * The SDK request's `excludedLocations`, checked and copied, or the
 * {@link sdkExclusionsRefused} marker of a list that breaks the region-name
 * rule: checked before anything is copied, since a list of thousands of
 * long names would otherwise be copied on every attempt only to be refused.
 */
function sdkExclusionsOf(context: CosmosRequestContext): readonly string[] | string {
  const excluded = context.options?.excludedLocations;
  if (!Array.isArray(excluded) || excluded.length === 0) return noExclusions;
  if (excluded.length > regionNameLimits.maxRegions) return sdkExclusionsRefused.tooMany;
  // Array.prototype's own every and filter, not the list's (a subclass may override them): they skip holes, as the SDK's
  // own reading of the list does, where a spread would turn them into undefined names.
  if (!Array.prototype.every.call(excluded, isRegionName)) return sdkExclusionsRefused.notRegionNames;
  return Object.freeze(Array.prototype.filter.call(excluded, () => true) as string[]);
}

const noExclusions: readonly string[] = Object.freeze([]);

/** Marks the request plugins {@link sdkRequestPlugin} makes. */
const ownRequestPlugin = Symbol("cosmos-hedging request plugin");

/**
 * Whether the last of the client's plugins is this package's request
 * plugin, as `withHedging` leaves it: a plugin of the user's appended to
 * the list after it runs later, and may change the request context the SDK
 * builds the request from (its endpoint, its headers) or what the SDK
 * returns, so no attempt of such a client is plain.
 */
function ownPluginRunsLast(context: CosmosRequestContext): boolean {
  const { plugins } = context;
  if (!Array.isArray(plugins) || plugins.length === 0) return false;
  const last: unknown = plugins[plugins.length - 1];
  return typeof last === "object" && last !== null && (last as { [ownRequestPlugin]?: unknown })[ownRequestPlugin] === true;
}

/** Whether a headers object (the per-request `initialHeaders`, the client's `defaultHeaders`) names a header of this package's. */
export function namesPackageHeader(headers: unknown): boolean {
  if (typeof headers !== "object" || headers === null) return false;
  for (const name of Object.keys(headers)) if (isPackageHeaderName(name)) return true;
  return false;
}

/** Whether the attempt is one of the SDK's retries, which chose its region on purpose. */
function isSdkRetry(retryCount: unknown): boolean {
  // @azure/cosmos 4.10.1 never sets the field and increments it on each retry, so a retry's is NaN; a later SDK may count from 0.
  return typeof retryCount === "number" && retryCount !== 0;
}

/**
 * The attempt written into the request context's headers, for a hedging
 * client reached through a pipeline of the SDK's (AAD auth awaits a token
 * on the way, so the attempt cannot be handed over): the exclusions as a
 * control header (every request carries it, empty or not, so that one
 * without it shows the plugin did not run), a retry marker, and the
 * operation's id.
 */
function writeAttempt(headers: Record<string, unknown>, sdkExcluded: readonly string[] | string, sdkRetry: boolean, operation: OperationDetection | undefined): void {
  headers[requestControlHeaders.sdkExcludedRegions] = pluginHeaderValue(typeof sdkExcluded === "string" ? sdkExcluded : sdkExcluded.length === 0 ? "[]" : headerJson(sdkExcluded));
  // Only a retry carries it, so a first attempt pays nothing (every attempt of a context shares its headers, and retries come last).
  if (sdkRetry) headers[requestControlHeaders.sdkRetry] = pluginHeaderValue("retry");
  if (operation !== undefined) headers[operationHeaderName] = registerOperation(operation);
}

/**
 * Of a `withHedging` client with both kinds of hedging off, which
 * operations of the SDK's it keeps nothing of (no detection record, no
 * diagnostics, no count): those whose options ask nothing of it (no
 * `excludedLocations`, no header of this package's, no
 * `withRequestHedgingOptions` block around them) while the client steers
 * nothing (`steersNothing`: no exclusions or runtime order of its own),
 * with no pipeline of the SDK's own (AAD auth) between them: every attempt
 * of such an operation, the SDK's retries included, is the SDK's alone
 * (see `SdkAttempt.unrecorded`). `undefined` for any other client, which
 * keeps a record of every operation.
 */
export function unrecordedOperations(mayBePlain: (() => boolean) | undefined, steersNothing: (() => boolean) | undefined): ((context: CosmosRequestContext) => boolean) | undefined {
  if (mayBePlain === undefined || steersNothing === undefined) return undefined;
  return (context) => {
    const excluded = context.options?.excludedLocations;
    return (
      // Through a pipeline of the SDK's own (AAD auth) an attempt reaches the client later, not handed over: it is
      // recorded, and so is its operation, as with hedging on.
      context.pipeline == null &&
      ownPluginRunsLast(context) &&
      (!Array.isArray(excluded) || excluded.length === 0) &&
      !namesPackageHeader(context.options?.initialHeaders) &&
      !hasScopedControls() &&
      steersNothing() &&
      mayBePlain()
    );
  };
}

/**
 * The request plugin `withHedging` installs on the `CosmosClient`, after
 * the operation plugin. `@azure/cosmos` runs request plugins once per HTTP
 * attempt, just before it builds the HTTP request from the context. The
 * SDK's own `excludedLocations` never reach the wire, so the plugin passes
 * them to the hedging client: every arm of a race then stays out of the
 * regions the SDK was told to avoid. It also says whether the attempt is
 * one of the SDK's retries, so that no runtime routing of this package
 * moves a request the SDK moved on purpose (away from a region answering
 * 503, 410 or timing out), and which operation the attempt belongs to: the
 * one the operation plugin named, or, for the operations @azure/cosmos runs
 * without operation plugins (the pages of queries and feeds, the query
 * plan), a record per request context (see {@link feedOperationOf}).
 *
 * Sitting after the operation plugin, it gets the SDK's own request
 * context even when a plugin of the user's before it passed a copy along
 * (@azure/cosmos 4.10.1 passes its own past a plugin of the other kind),
 * which is the one the SDK sends.
 *
 * The attempt is handed to the hedging client directly (see
 * {@link handOver}) when the SDK calls the client in the same synchronous
 * run, as it does without a pipeline of its own; otherwise, or once a
 * hand-over was not taken (a later SDK that awaits on the way, which is
 * warned about), it goes in headers that the client reads and removes.
 * It also warns once when the SDK holds another `httpClient` than the
 * hedging one: an SDK before 4.1.0 ignores the option, and nothing is hedged.
 * With `mayBePlain` (no header of this package's in the client's
 * `defaultHeaders`, no plugin of the user's before it), it marks the
 * attempts that carry nothing for the client to read (see
 * `SdkAttempt.plain`), while it runs last of the client's plugins. With
 * `unrecorded` (see {@link unrecordedOperations}), it keeps no record of a
 * feed's attempt that the predicate leaves unrecorded.
 * @param mayBePlain - whether an attempt of the client may be plain at all,
 *   asked on every attempt (the SDK reads the client's `defaultHeaders` on
 *   every request, so a header of this package's added to them later counts);
 *   unset, none is.
 * @param bookkeeping - learns the SDK's endpoint manager from each
 *   attempt's context, and is handed the context, to tell the SDK's
 *   endpoint discovery and breaker what a hedge hid from them.
 * @param gate - the client's {@link SdkVersionGate}: while it stands
 *   aside, every attempt passes on untouched.
 */
export function sdkRequestPlugin(
  hedgingClient: object,
  mayBePlain?: () => boolean,
  unrecorded?: (context: CosmosRequestContext) => boolean,
  bookkeeping?: SdkBookkeeping,
  gate?: SdkVersionGate,
): CosmosRequestPlugin {
  let warned = false;
  let handOverWorks = true;
  const config: CosmosRequestPlugin & { readonly [ownRequestPlugin]: true } = {
    [ownRequestPlugin]: true,
    on: "request",
    plugin: (context, diagnosticNode, next) => {
      if (context.httpClient !== hedgingClient) {
        if (!warned) {
          warned = true;
          logger.warning(
            "This @azure/cosmos client does not send its requests through the hedging httpClient (the SDK ignores the option before 4.1.0, or it was replaced): nothing is hedged.",
          );
        }
        // Nothing would take a hand-over or remove a header: written, they would reach the service.
        return next(context);
      }
      const { headers } = context;
      const named = headers === undefined ? undefined : operationNamedIn(headers);
      // The operation plugin judged a named operation's context already; a feed's attempt (no operation plugin) is judged here.
      if (named === undefined && headers !== undefined && gate !== undefined && standsAsideForContext(gate, headers)) return next(context);
      bookkeeping?.seen(context.globalEndpointManager, diagnosticNode);
      if (headers === undefined) return next(context);
      // An operation the operation plugin did not name is a feed's (a record per context), or one left unrecorded.
      const left = named === undefined && unrecorded?.(context) === true;
      const feed = named === undefined && !left ? feedOperationOf(context) : undefined;
      const operation = named ?? feed;
      // A feed's record is named for the length of each attempt, so that nothing holds it once its last attempt has ended.
      const send = feed === undefined ? next : (passed: CosmosRequestContext) => runAs(feed, headers, next, passed, false);
      const sdkExcluded = sdkExclusionsOf(context);
      const sdkRetry = isSdkRetry(context.retryCount);
      if (handOverWorks && context.pipeline == null) {
        const plain =
          sdkExcluded === noExclusions &&
          !sdkRetry &&
          !namesPackageHeader(context.options?.initialHeaders) &&
          mayBePlain?.() === true &&
          ownPluginRunsLast(context);
        const kind = plain && context.resourceType === "docs" && context.operationType === "read" && context.method === "GET" ? "pointRead" : undefined;
        const endpoint = plain && typeof context.endpoint === "string" ? context.endpoint : undefined;
        const attempt: SdkAttempt = { client: hedgingClient, sdkExcluded, sdkRetry, operation, plain, kind, unrecorded: left, endpoint, context: bookkeeping === undefined ? undefined : context };
        const result = handOver(attempt, send, context);
        if (attempt.taken !== true) {
          handOverWorks = false;
          logger.warning(
            "@azure/cosmos did not hand its request to the hedging httpClient in the same synchronous run (a version that awaits on the way?): that request is not hedged; later ones carry the SDK's options in headers.",
          );
        }
        return result;
      }
      writeAttempt(headers, sdkExcluded, sdkRetry, operation);
      if (bookkeeping !== undefined && operation !== undefined) keepOperationContext(operation, context);
      return send(context);
    },
  };
  return config;
}
