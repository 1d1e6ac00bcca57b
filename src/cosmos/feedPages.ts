import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "./headers.js";
import type { OperationKind } from "./operationKind.js";
import { pathSegments } from "./operationKind.js";

/** The document operations that return pages: their later pages carry a token only the issuing region understands. */
export const documentFeedKinds: ReadonlySet<OperationKind> = new Set<OperationKind>(["query", "readFeed", "changeFeed"]);

function isIncrementalFeed(request: PipelineRequest): boolean {
  return request.headers.get(CosmosHeaders.aIm)?.trim().toLowerCase() === "incremental feed";
}

function token(value: string | undefined): string | undefined {
  // `If-None-Match: *` starts a change feed "from now": it continues nothing.
  return value === undefined || value.trim() === "" || value.trim() === "*" ? undefined : value;
}

/** The token a later page of a feed carries: its continuation, or the etag an incremental feed (`If-None-Match`) resumes from. */
export function pageTokenOf(request: PipelineRequest): string | undefined {
  return token(request.headers.get(CosmosHeaders.continuation)) ?? token(request.headers.get(CosmosHeaders.ifNoneMatch));
}

/** The token the page after `response` will carry: the continuation, or for an incremental feed the etag. */
export function nextPageTokenOf(request: PipelineRequest, response: PipelineResponse): string | undefined {
  return token(isIncrementalFeed(request) ? response.headers.get("etag") : response.headers.get(CosmosHeaders.continuation));
}

/** Whether a read continues a feed: a later page, whose token was issued by the region that served the page before it. */
export function continuesFeed(request: PipelineRequest, operation: OperationKind): boolean {
  if (token(request.headers.get(CosmosHeaders.continuation)) !== undefined) return true;
  return (operation === "changeFeed" || operation === "readFeed") && token(request.headers.get(CosmosHeaders.ifNoneMatch)) !== undefined;
}

/** The collection link a request is about: `dbs/{db}/colls/{coll}`. */
export function collectionLinkOf(url: string): string {
  return pathSegments(url).slice(0, 4).join("/");
}
