import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "./headers.js";

/**
 * What a Cosmos DB HTTP request does, as far as hedging cares. Derived from
 * the method, the path and a few headers only (see {@link classifyOperation}).
 */
export type OperationKind =
  | "accountRead"
  | "collectionRead"
  | "partitionKeyRangeReadFeed"
  | "partitionKeyRangeReadFeedContinuation"
  | "pointRead"
  | "query"
  | "queryPlan"
  | "readFeed"
  | "changeFeed"
  | "batch"
  | "create"
  | "upsert"
  | "replace"
  | "patch"
  | "delete"
  | "other";

/** The document reads: the operations that data-plane hedging may always hedge. */
export const documentReadKinds: ReadonlySet<OperationKind> = new Set<OperationKind>([
  "pointRead",
  "query",
  "queryPlan",
  "readFeed",
  "changeFeed",
]);

/** The document writes: hedged only on multi-write accounts, and only on request. */
export const documentWriteKinds: ReadonlySet<OperationKind> = new Set<OperationKind>([
  "batch",
  "create",
  "upsert",
  "replace",
  "patch",
  "delete",
]);

/** The document reads and writes: what data-plane hedging sends, hedged or not. */
export const documentKinds: ReadonlySet<OperationKind> = new Set<OperationKind>([...documentReadKinds, ...documentWriteKinds]);

/** Whether an operation kind reads (so any read region may serve it) or writes. */
export function isReadKind(kind: OperationKind): boolean {
  return !documentWriteKinds.has(kind) && kind !== "other";
}

/** The parts of a request that classification looks at. */
export interface RequestShape {
  method: string;
  url: string;
  header(name: string): string | undefined;
}

function isTrue(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === "true";
}

function hasValue(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== "";
}

function decodeSegment(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Splits a request path into its decoded resource segments: `/dbs/a/colls/b`
 * is `["dbs","a","colls","b"]`. String scanning rather than `new URL`,
 * because every request of a client passes through here.
 */
export function pathSegments(url: string): string[] {
  const segments: string[] = [];
  scanSegments(url, (start, end) => segments.push(decodeSegment(url.slice(start, end))));
  return segments;
}

/**
 * Calls `visit` with the bounds of each non-empty segment of a URL's path,
 * in order, and returns how many there were: the path runs from the first
 * "/" after the authority to the query or the fragment.
 */
function scanSegments(url: string, visit: (start: number, end: number, index: number) => void): number {
  const schemeEnd = url.indexOf("://");
  let at = schemeEnd === -1 ? 0 : url.indexOf("/", schemeEnd + 3);
  if (at === -1) return 0;
  let pathEnd = url.length;
  const query = url.indexOf("?", at);
  if (query !== -1) pathEnd = query;
  const fragment = url.indexOf("#", at);
  if (fragment !== -1 && fragment < pathEnd) pathEnd = fragment;
  // `at` is where the next segment starts, past its "/".
  if (url.charCodeAt(at) === 47) at += 1;
  let count = 0;
  while (at <= pathEnd) {
    let end = url.indexOf("/", at);
    if (end === -1 || end > pathEnd) end = pathEnd;
    if (end > at) visit(at, end, count++);
    at = end + 1;
  }
  return count;
}

function classifyDocuments(headers: HeaderSource, method: string, isFeed: boolean): OperationKind {
  if (isFeed) {
    if (method === "POST") {
      if (isTrue(headers.get(CosmosHeaders.isQueryPlan))) return "queryPlan";
      if (
        isTrue(headers.get(CosmosHeaders.isQuery)) ||
        headers.get(CosmosHeaders.contentType)?.toLowerCase().startsWith("application/query+json")
      ) {
        return "query";
      }
      if (isTrue(headers.get(CosmosHeaders.isBatch))) return "batch";
      if (isTrue(headers.get(CosmosHeaders.isUpsert))) return "upsert";
      return "create";
    }
    if (method === "GET") {
      return headers.get(CosmosHeaders.aIm)?.trim().toLowerCase() === "incremental feed"
        ? "changeFeed"
        : "readFeed";
    }
    return "other";
  }
  switch (method) {
    case "GET":
      return "pointRead";
    case "PUT":
      return "replace";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return "other";
  }
}

/** Classifies a request by its method, path and wire headers. Pure; never throws. */
export function classifyShape(shape: RequestShape): OperationKind {
  return classifyParts(shape.method, shape.url, { get: shape.header });
}

/** Where classification reads a request's headers: `HttpHeaders` itself, or a shape's accessor. */
interface HeaderSource {
  get(name: string): string | undefined;
}

function classifyParts(rawMethod: string, url: string, headers: HeaderSource): OperationKind {
  const method = rawMethod.toUpperCase();
  const path = resourcePathOf(url);
  const count = path.count;
  if (count === 0) return method === "GET" ? "accountRead" : "other";
  if (count < 3 || !segmentIs(url, path.start0, path.end0, "dbs") || !segmentIs(url, path.start2, path.end2, "colls")) return "other";
  if (count === 4) return method === "GET" ? "collectionRead" : "other";
  if (count === 5 && method === "GET" && segmentIs(url, path.start4, path.end4, "pkranges")) {
    return hasValue(headers.get(CosmosHeaders.continuation)) ||
      hasValue(headers.get(CosmosHeaders.ifNoneMatch))
      ? "partitionKeyRangeReadFeedContinuation"
      : "partitionKeyRangeReadFeed";
  }
  if ((count === 5 || count === 6) && segmentIs(url, path.start4, path.end4, "docs")) {
    return classifyDocuments(headers, method, count === 5);
  }
  return "other";
}

/**
 * Where the segments that classification reads sit in a URL, and how many
 * segments its path has, found as {@link pathSegments} finds them but without
 * copying one: the first, third and fifth are names (`dbs`, `colls`, `docs`),
 * the others ids nobody reads. One object, reused: classification runs for
 * every request, and reads it before it asks for any header.
 */
const scanned = { count: 0, start0: 0, end0: 0, start2: 0, end2: 0, start4: 0, end4: 0 };

/** Notes where the first, third and fifth segments sit; a module function, so that no closure is made per request. */
function noteNameSegment(start: number, end: number, index: number): void {
  if (index === 0) {
    scanned.start0 = start;
    scanned.end0 = end;
  } else if (index === 2) {
    scanned.start2 = start;
    scanned.end2 = end;
  } else if (index === 4) {
    scanned.start4 = start;
    scanned.end4 = end;
  }
}

function resourcePathOf(url: string): typeof scanned {
  scanned.count = scanSegments(url, noteNameSegment);
  return scanned;
}

/** Whether the path segment `url[start, end)` is `name` once decoded, as {@link pathSegments} decodes it. */
function segmentIs(url: string, start: number, end: number, name: string): boolean {
  if (end - start === name.length && url.startsWith(name, start)) return true;
  // Only an escaped segment can decode to a name it does not spell.
  const escape = url.indexOf("%", start);
  return escape !== -1 && escape < end && decodeSegment(url.slice(start, end)) === name;
}

/**
 * Classifies a pipeline request into an {@link OperationKind}, from its
 * method, its path and its wire headers. The hedging client classifies each
 * request once, and remembers the answer with the request's state.
 */
export function classifyOperation(request: PipelineRequest): OperationKind {
  return classifyParts(request.method, request.url, request.headers);
}
