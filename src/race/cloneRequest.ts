import type { AbortSignalLike } from "@azure/abort-controller";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpHeaders, PipelineRequest, RawHttpHeaders } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../topology/regionCache.js";
import { defaultPorts } from "../topology/regionCache.js";
import { linkToOriginal } from "../request/originalRequest.js";

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

/** How a region's endpoint is written at the start of a request URL. */
interface EndpointPrefixes {
  /** The origin as `new URL` gives it (a default port left out): what a re-pointed URL starts with. */
  readonly origin: string;
  /** The same with its default port written out (`https://host:443`), as the account's endpoints list it. */
  readonly withDefaultPort: string | undefined;
}

/** Each region endpoint's prefixes, computed once per endpoint object. */
const endpointPrefixes = new WeakMap<RegionEndpoint, EndpointPrefixes>();

function prefixesOf(region: RegionEndpoint): EndpointPrefixes {
  let prefixes = endpointPrefixes.get(region);
  if (prefixes === undefined) {
    const endpoint = new URL(region.endpoint);
    const defaultPort = defaultPorts[endpoint.protocol];
    prefixes = {
      origin: endpoint.origin,
      withDefaultPort: endpoint.port === "" && defaultPort !== undefined ? endpoint.origin + defaultPort : undefined,
    };
    endpointPrefixes.set(region, prefixes);
  }
  return prefixes;
}

/** Whether `url` starts with `prefix` as its whole scheme and authority (not the start of a longer host or port). */
function startsWithAuthority(url: string, prefix: string | undefined): boolean {
  if (prefix === undefined || !url.startsWith(prefix)) return false;
  const after = url.charCodeAt(prefix.length);
  // "/", "?", "#" or the end.
  return Number.isNaN(after) || after === 47 || after === 63 || after === 35;
}

/**
 * An authority of host and port characters only (letters, digits, ".", "-",
 * ":", "[" and "]"): nothing the URL parser would keep when re-pointing
 * (user info) or read another way (escapes, a backslash), so the whole of
 * it can be swapped for the region's origin.
 */
const plainAuthority = /^[A-Za-z0-9.\-:[\]]+$/;

/**
 * The index of the "/" that starts the path of an http(s) URL whose
 * authority is a plain host (no user info, no escapes), or -1 for any other URL.
 */
function plainPathStart(url: string): number {
  const schemeEnd = url.indexOf("://");
  if (schemeEnd === -1) return -1;
  const scheme = url.slice(0, schemeEnd);
  if (scheme !== "https" && scheme !== "http") return -1;
  const pathStart = url.indexOf("/", schemeEnd + 3);
  if (pathStart === -1 || !plainAuthority.test(url.slice(schemeEnd + 3, pathStart))) return -1;
  return pathStart;
}

/**
 * The request URL with its scheme, host and port replaced by the region's
 * endpoint. A URL already on that origin (every primary arm), with its
 * default port written out or not, is returned as it is, without being
 * parsed: it is what the SDK would have sent. Any other URL of the SDK's
 * shape keeps its path and query as written.
 */
export function retarget(url: string, region: RegionEndpoint): string {
  const prefixes = prefixesOf(region);
  if (startsWithAuthority(url, prefixes.origin) || startsWithAuthority(url, prefixes.withDefaultPort)) return url;
  const pathStart = plainPathStart(url);
  if (pathStart !== -1) return prefixes.origin + url.slice(pathStart);
  return retargetByParsing(url, region);
}

/**
 * {@link retarget} for any URL: through the URL parser, which also
 * normalizes what it keeps. Exported as the oracle that the property test
 * holds retarget's string paths to.
 */
export function retargetByParsing(url: string, region: RegionEndpoint): string {
  const target = new URL(region.endpoint);
  const result = new URL(url);
  result.protocol = target.protocol;
  result.hostname = target.hostname;
  // Setting `host` without a port keeps the old one, so a request on a
  // non-default port would keep it on a region that listens on another.
  result.port = target.port;
  return result.toString();
}

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
 * The headers of one arm: the original request's, read through until the
 * arm first changes one, and from then on the arm's own copy. Copying every
 * header (core re-normalizes each value) was the largest cost of a race
 * that never hedges, and a primary arm of a signed request is never
 * changed. Nothing below the race changes the original (its policies get
 * the arms); a policy above it that changes the original's headers while
 * the race runs reaches every arm that has not changed one of its own, as
 * the README says.
 */
class ArmHeaders implements HttpHeaders {
  private own: HttpHeaders | undefined;

  constructor(private readonly original: HttpHeaders) {}

  private writable(): HttpHeaders {
    this.own ??= createHttpHeaders(this.original.toJSON({ preserveCase: true }));
    return this.own;
  }

  get(name: string): string | undefined {
    return (this.own ?? this.original).get(name);
  }

  has(name: string): boolean {
    return (this.own ?? this.original).has(name);
  }

  set(name: string, value: string | number | boolean): void {
    this.writable().set(name, value);
  }

  delete(name: string): void {
    if (this.own === undefined && !this.original.has(name)) return;
    this.writable().delete(name);
  }

  toJSON(options?: { preserveCase?: boolean }): RawHttpHeaders {
    return (this.own ?? this.original).toJSON(options);
  }

  toString(): string {
    return JSON.stringify(this.toJSON({ preserveCase: true }));
  }

  [Symbol.iterator](): Iterator<[string, string]> {
    return (this.own ?? this.original)[Symbol.iterator]();
  }
}

/**
 * A copy of the request for one arm of a race: re-pointed at the region,
 * with its own headers (copied when the arm first changes one), a fresh
 * request id and its own abort signal. Transport settings (agent, TLS,
 * proxy, timeouts) are shared so that every arm reuses the caller's
 * connection pool.
 */
export function cloneRequestFor(request: PipelineRequest, region: RegionEndpoint, abortSignal: AbortSignalLike | undefined): PipelineRequest {
  const clone = createPipelineRequest({
    url: retarget(request.url, region),
    method: request.method,
    headers: new ArmHeaders(request.headers),
    ...(abortSignal !== undefined ? { abortSignal } : {}),
  });
  const target = clone as unknown as Record<string, unknown>;
  for (const field of sharedFields) {
    if (request[field] !== undefined) target[field] = request[field];
  }
  linkToOriginal(clone, request);
  return clone;
}
