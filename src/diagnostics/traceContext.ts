/**
 * The OpenTelemetry context a read started in, kept for the race it may
 * become. A pending read waits for its threshold on a timer its client's
 * reads share (see `ThresholdTimers`), which fires in the async context of
 * the read that set it: the race built then would start its span under
 * another read's active span. So each pending read keeps the context that
 * was active when it started (one `AsyncLocalStorage` look-up, and nothing
 * while no context manager is registered), and its race is built in it.
 * `AsyncLocalStorage.snapshot()` would keep any instrumenter's context, at
 * about 16 µs a read on Node 20; OpenTelemetry's, the one instrumenter the
 * Azure SDKs ship, costs a few nanoseconds.
 */

/** The part of `@opentelemetry/api` this module uses. */
export interface OpenTelemetryContextApi {
  readonly context: { active(): unknown; with<T>(context: never, fn: () => T): T };
  readonly ROOT_CONTEXT: unknown;
}

let api: OpenTelemetryContextApi | undefined;

/** Called once `@opentelemetry/api` has loaded (see `loadOpenTelemetry`). */
export function useOpenTelemetryContext(loaded: OpenTelemetryContextApi): void {
  api = loaded;
}

/** The active OpenTelemetry context, or `undefined` when there is none to keep (no API, no context manager, the root). */
export function activeTraceContext(): unknown {
  if (api === undefined) return undefined;
  const active = api.context.active();
  return active === api.ROOT_CONTEXT ? undefined : active;
}

/** Runs `fn` in `context` (from {@link activeTraceContext}), or as it is without one. */
export function inTraceContext<T>(context: unknown, fn: () => T): T {
  return context === undefined || api === undefined ? fn() : api.context.with(context as never, fn);
}
