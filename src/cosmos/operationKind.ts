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
  const schemeEnd = url.indexOf("://");
  let at = schemeEnd === -1 ? 0 : url.indexOf("/", schemeEnd + 3);
  const segments: string[] = [];
  if (at === -1) return segments;
  let pathEnd = url.length;
  const query = url.indexOf("?", at);
  if (query !== -1) pathEnd = query;
  const fragment = url.indexOf("#", at);
  if (fragment !== -1 && fragment < pathEnd) pathEnd = fragment;
  // `at` is where the next segment starts, past its "/".
  if (url.charCodeAt(at) === 47) at += 1;
  while (at <= pathEnd) {
    let end = url.indexOf("/", at);
    if (end === -1 || end > pathEnd) end = pathEnd;
    if (end > at) segments.push(decodeSegment(url.slice(at, end)));
    at = end + 1;
  }
  return segments;
}

function classifyDocuments(shape: RequestShape, method: string, isFeed: boolean): OperationKind {
  if (isFeed) {
    if (method === "POST") {
      if (isTrue(shape.header(CosmosHeaders.isQueryPlan))) return "queryPlan";
      if (
        isTrue(shape.header(CosmosHeaders.isQuery)) ||
        shape.header(CosmosHeaders.contentType)?.toLowerCase().startsWith("application/query+json")
      ) {
        return "query";
      }
      if (isTrue(shape.header(CosmosHeaders.isBatch))) return "batch";
      if (isTrue(shape.header(CosmosHeaders.isUpsert))) return "upsert";
      return "create";
    }
    if (method === "GET") {
      return shape.header(CosmosHeaders.aIm)?.trim().toLowerCase() === "incremental feed"
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
  const method = shape.method.toUpperCase();
  const segments = pathSegments(shape.url);
  if (segments.length === 0) return method === "GET" ? "accountRead" : "other";
  if (segments[0] !== "dbs" || segments[2] !== "colls") return "other";
  if (segments.length === 4) return method === "GET" ? "collectionRead" : "other";
  const child = segments[4];
  if (child === "pkranges" && segments.length === 5 && method === "GET") {
    return hasValue(shape.header(CosmosHeaders.continuation)) ||
      hasValue(shape.header(CosmosHeaders.ifNoneMatch))
      ? "partitionKeyRangeReadFeedContinuation"
      : "partitionKeyRangeReadFeed";
  }
  if (child === "docs" && (segments.length === 5 || segments.length === 6)) {
    return classifyDocuments(shape, method, segments.length === 5);
  }
  return "other";
}

/**
 * Classifies a pipeline request into an {@link OperationKind}, from its
 * method, its path and its wire headers. The hedging client classifies each
 * request once, and remembers the answer with the request's state.
 */
export function classifyOperation(request: PipelineRequest): OperationKind {
  return classifyShape({
    method: request.method,
    url: request.url,
    header: (name) => request.headers.get(name),
  });
}
