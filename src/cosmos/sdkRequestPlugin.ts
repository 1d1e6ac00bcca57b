import { logger } from "../log.js";
import { requestControlHeaders, sdkExclusionsRefused } from "./headers.js";
import { isRegionName, regionNameLimits } from "../options.js";

/** The parts of an `@azure/cosmos` request context that the plugin reads and writes. */
interface CosmosRequestContext {
  headers?: Record<string, unknown>;
  options?: { excludedLocations?: unknown };
  retryCount?: unknown;
  httpClient?: unknown;
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

/** The control header's value: nearly every request excludes nothing, and that one is written without serializing. */
function excludedLocationsHeader(context: CosmosRequestContext): string {
  const excluded = context.options?.excludedLocations;
  if (!Array.isArray(excluded) || excluded.length === 0) return "[]";
  // Checked before anything is copied: a list of thousands of long names would otherwise be serialized and parsed on every attempt, only to be refused.
  if (excluded.length > regionNameLimits.maxRegions) return sdkExclusionsRefused.tooMany;
  if (!excluded.every(isRegionName)) return sdkExclusionsRefused.notRegionNames;
  return headerJson(excluded);
}

/**
 * The plugin `withHedging` installs on the `CosmosClient`. `@azure/cosmos`
 * runs request plugins once per HTTP attempt, just before it builds the HTTP
 * request from the context; the SDK's own `excludedLocations` never reach
 * the wire, so the plugin copies them into a control header that the
 * hedging policies read (and remove): every arm of a race then stays out of
 * the regions the SDK was told to avoid. Every request carries the header,
 * empty or not, so that a request without it shows the plugin did not run.
 * A retry of the SDK's (its `retryCount` above 0) also carries a marker, so
 * that no runtime routing of this package moves a request the SDK moved on
 * purpose (away from a region answering 503, 410 or timing out).
 * It also warns once when the SDK holds another `httpClient` than the
 * hedging one: an SDK before 4.1.0 ignores the option, and nothing is hedged.
 */
export function sdkRequestPlugin(hedgingClient: object): CosmosRequestPlugin {
  let warned = false;
  return {
    on: "request",
    plugin: (context, _diagnosticNode, next) => {
      if (context.httpClient !== hedgingClient && !warned) {
        warned = true;
        logger.warning(
          "This @azure/cosmos client does not send its requests through the hedging httpClient (the SDK ignores the option before 4.1.0, or it was replaced): nothing is hedged.",
        );
      }
      if (context.headers !== undefined) {
        context.headers[requestControlHeaders.sdkExcludedRegions] = excludedLocationsHeader(context);
        // Only a retry carries it, so a first attempt pays nothing: the SDK chose a retry's region on purpose.
        // @azure/cosmos 4.10.1 never sets the field and increments it on each retry, so a retry's is NaN; a later SDK may count from 0.
        const { retryCount } = context;
        if (typeof retryCount === "number" && retryCount !== 0) {
          context.headers[requestControlHeaders.sdkRetry] = Number.isFinite(retryCount) ? String(retryCount) : "retry";
        }
      }
      return next(context);
    },
  };
}
