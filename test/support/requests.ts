import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpMethods, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";

/** What {@link makeRequest} may set on a request besides its URL. */
export interface RequestFixture {
  /** Default `"GET"`. */
  method?: HttpMethods;
  /** Request headers; names in any case. */
  headers?: Record<string, string>;
  /** A string body, as `@azure/cosmos` sends it. */
  body?: string;
  /** The caller's (or the SDK's per-attempt) abort signal. */
  abortSignal?: AbortSignal;
}

/** A `PipelineRequest` for a URL, with an optional method, headers, body and abort signal. */
export function makeRequest(url: string, fixture: RequestFixture = {}): PipelineRequest {
  const request = createPipelineRequest({
    url,
    method: fixture.method ?? "GET",
    headers: createHttpHeaders(fixture.headers ?? {}),
    ...(fixture.abortSignal !== undefined ? { abortSignal: fixture.abortSignal } : {}),
  });
  if (fixture.body !== undefined) request.body = fixture.body;
  return request;
}

/** What {@link makeResponse} may set on a response besides its status. */
export interface ResponseFixture {
  /** Response headers; names in any case. */
  headers?: Record<string, string>;
  /** The body: a string is sent as is, anything else as JSON. */
  body?: unknown;
}

/** A `PipelineResponse` to a request, with a status, optional headers and a body (objects become JSON). */
export function makeResponse(request: PipelineRequest, status: number, fixture: ResponseFixture = {}): PipelineResponse {
  const response: PipelineResponse = {
    request,
    status,
    headers: createHttpHeaders(fixture.headers ?? {}),
  };
  if (fixture.body !== undefined) {
    response.bodyAsText = typeof fixture.body === "string" ? fixture.body : JSON.stringify(fixture.body);
  }
  return response;
}

/** A `[name, endpoint]` pair of a database-account location list. */
export type LocationFixture = readonly [name: string, endpoint: string];

/** What {@link databaseAccountBody} puts into a database-account response. */
export interface DatabaseAccountFixture {
  /** `readableLocations`, in the account's order. */
  read: readonly LocationFixture[];
  /** `writableLocations`; defaults to the first read location. */
  write?: readonly LocationFixture[];
  /** Any further top-level fields, such as `enableMultipleWriteLocations` or `enablePerPartitionFailoverBehavior`. */
  fields?: Record<string, unknown>;
}

/** The JSON object of a database-account (`GET /`) response, in the shape the service returns. */
export function databaseAccountBody(fixture: DatabaseAccountFixture): Record<string, unknown> {
  const locations = (list: readonly LocationFixture[]) =>
    list.map(([name, databaseAccountEndpoint]) => ({ name, databaseAccountEndpoint }));
  return {
    id: "account",
    _self: "",
    readableLocations: locations(fixture.read),
    writableLocations: locations(fixture.write ?? fixture.read.slice(0, 1)),
    ...fixture.fields,
  };
}

/** A `200` database-account response on `GET {endpoint}/` with the given body. */
export function databaseAccountResponse(endpoint: string, body: unknown): PipelineResponse {
  return makeResponse(makeRequest(new URL("/", endpoint).href), 200, { body });
}
