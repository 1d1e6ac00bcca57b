import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../caches/regionCache.js";

/**
 * Whether a request's body can be sent more than once. Strings, binary
 * buffers, blobs and body factories can; a one-shot stream cannot, so a
 * request carrying one is never hedged.
 */
export function isResendableBody(request: PipelineRequest): boolean {
  const body = request.body;
  if (request.multipartBody !== undefined) return false;
  if (body === undefined || body === null) return true;
  if (typeof body === "string" || typeof body === "function") return true;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return true;
  if (typeof Blob !== "undefined" && body instanceof Blob) return true;
  return false;
}

/** The origin of each region's endpoint, as `new URL` gives it, computed once per endpoint object. */
const endpointOrigins = new WeakMap<RegionEndpoint, string>();

function endpointOrigin(region: RegionEndpoint): string {
  let origin = endpointOrigins.get(region);
  if (origin === undefined) {
    origin = new URL(region.endpoint).origin;
    endpointOrigins.set(region, origin);
  }
  return origin;
}

/**
 * The request URL with its scheme, host and port replaced by the region's
 * endpoint. A URL already on that origin (every primary arm) is returned as
 * it is, without being parsed: it is what the SDK would have sent.
 */
export function retarget(url: string, region: RegionEndpoint): string {
  const origin = endpointOrigin(region);
  if (url.startsWith(origin)) {
    const after = url.charCodeAt(origin.length);
    // "/", "?", "#" or the end: the origin is the whole authority, not the start of a longer host or port.
    if (Number.isNaN(after) || after === 47 || after === 63 || after === 35) return url;
  }
  const target = new URL(region.endpoint);
  const result = new URL(url);
  result.protocol = target.protocol;
  result.hostname = target.hostname;
  // Setting `host` without a port keeps the old one, so a request on a
  // non-default port would keep it on a region that listens on another.
  result.port = target.port;
  return result.toString();
}

const coreClientOriginalRequest = Symbol.for("@azure/core-client original request");

/** What every arm shares with the original request: the body and the transport settings. */
const sharedFields = [
  "body",
  "formData",
  "timeout",
  "withCredentials",
  "streamResponseStatusCodes",
  "agent",
  "tlsSettings",
  "proxySettings",
  "disableKeepAlive",
  "allowInsecureConnection",
  "enableBrowserStreams",
  "tracingOptions",
  "requestOverrides",
] as const satisfies ReadonlyArray<keyof PipelineRequest>;

/**
 * A copy of the request for one arm of a race: re-pointed at the region,
 * with its own headers object, a fresh request id and its own abort signal.
 * Transport settings (agent, TLS, proxy, timeouts) are shared so that every
 * arm reuses the caller's connection pool.
 */
export function cloneRequestFor(request: PipelineRequest, region: RegionEndpoint, abortSignal: AbortSignal): PipelineRequest {
  const clone = createPipelineRequest({
    url: retarget(request.url, region),
    method: request.method,
    headers: createHttpHeaders(request.headers.toJSON({ preserveCase: true })),
    abortSignal,
  });
  const target = clone as unknown as Record<string, unknown>;
  for (const field of sharedFields) {
    if (request[field] !== undefined) target[field] = request[field];
  }
  // core-client keys its per-operation state (the operation spec its
  // deserialization needs) by request object; this symbol points it back at
  // the original.
  Object.defineProperty(clone, coreClientOriginalRequest, { value: request });
  return clone;
}
