/**
 * Header names of the Cosmos DB wire protocol that this package reads, and the
 * headers it adds itself. Lower case, as `HttpHeaders` normalizes them.
 */
export const CosmosHeaders = {
  authorization: "authorization",
  date: "x-ms-date",
  isQuery: "x-ms-documentdb-isquery",
  isQueryPlan: "x-ms-cosmos-is-query-plan-request",
  isBatch: "x-ms-cosmos-is-batch-request",
  isUpsert: "x-ms-documentdb-is-upsert",
  aIm: "a-im",
  ifNoneMatch: "if-none-match",
  continuation: "x-ms-continuation",
  contentType: "content-type",
  subStatus: "x-ms-substatus",
  activityId: "x-ms-activity-id",
  requestCharge: "x-ms-request-charge",
  sessionToken: "x-ms-session-token",
  retryAfterMs: "x-ms-retry-after-ms",
} as const;

/** The response header in which the hedging policies return their diagnostics as JSON. */
export const hedgeDiagnosticsHeaderName = "x-cosmos-hedging-diagnostics";
