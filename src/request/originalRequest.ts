import type { PipelineRequest } from "@azure/core-rest-pipeline";

/**
 * core-client keys its per-operation state (the operation spec its
 * deserialization needs) by request object, and follows this symbol from a
 * copy back to the request it was copied from. A hedge arm is such a copy:
 * the same link lets core-client find its state and lets this package find
 * the original's controls.
 */
const coreClientOriginalRequest = Symbol.for("@azure/core-client original request");

/** Points a copy of a request back at the request it was copied from. */
export function linkToOriginal(copy: PipelineRequest, original: PipelineRequest): void {
  Object.defineProperty(copy, coreClientOriginalRequest, { value: original });
}

/** The request a copy was made from, if it is one. */
export function originalOf(request: PipelineRequest): PipelineRequest | undefined {
  const original = (request as unknown as Record<symbol, unknown>)[coreClientOriginalRequest];
  return typeof original === "object" && original !== null ? (original as PipelineRequest) : undefined;
}
