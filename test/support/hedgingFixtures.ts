import { createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpMethods, PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";

/** Regions of a fictitious account `acct`, in the account's order. */
export const eastUs: RegionEndpoint = { name: "East US", endpoint: "https://acct-eastus.documents.azure.com:443/" };
export const westUs: RegionEndpoint = { name: "West US", endpoint: "https://acct-westus.documents.azure.com:443/" };
export const northEurope: RegionEndpoint = {
  name: "North Europe",
  endpoint: "https://acct-northeurope.documents.azure.com:443/",
};
export const ukSouth: RegionEndpoint = { name: "UK South", endpoint: "https://acct-uksouth.documents.azure.com:443/" };

/** The URL of `path` (no leading slash) on a region's endpoint. */
export function urlOn(region: RegionEndpoint, path: string): string {
  return new URL(path, region.endpoint).href;
}

/** Builds a request to `path` on `region`. */
export function requestTo(
  region: RegionEndpoint,
  method: HttpMethods,
  path: string,
  init: { headers?: Record<string, string>; body?: PipelineRequest["body"]; abortSignal?: AbortSignal } = {},
): PipelineRequest {
  const request = createPipelineRequest({
    url: urlOn(region, path),
    method,
    ...(init.abortSignal !== undefined ? { abortSignal: init.abortSignal } : {}),
  });
  for (const [name, value] of Object.entries(init.headers ?? {})) request.headers.set(name, value);
  if (init.body !== undefined) request.body = init.body;
  return request;
}

/** A point read of document `1`. */
export function pointRead(region: RegionEndpoint, abortSignal?: AbortSignal): PipelineRequest {
  return requestTo(region, "GET", "dbs/db/colls/c/docs/1", abortSignal !== undefined ? { abortSignal } : {});
}

/** A query, as `@azure/cosmos` sends it: a POST on the feed with a string body. */
export function query(region: RegionEndpoint, abortSignal?: AbortSignal): PipelineRequest {
  return requestTo(region, "POST", "dbs/db/colls/c/docs?x=1", {
    headers: { "x-ms-documentdb-isquery": "true", "content-type": "application/query+json" },
    body: JSON.stringify({ query: "SELECT * FROM c", parameters: [] }),
    ...(abortSignal !== undefined ? { abortSignal } : {}),
  });
}

/** How a promise settled. */
export type Settled<T> = { readonly done: false } | { readonly done: true; readonly value: T } | { readonly done: true; readonly error: unknown };

/**
 * Observes a promise without letting its rejection go unhandled while a
 * test drives the fake clock: `state()` reports whether and how it settled.
 */
export function observe<T>(promise: Promise<T>): { state(): Settled<T>; result(): Promise<T> } {
  let state: Settled<T> = { done: false };
  const watched = promise.then(
    (value) => {
      state = { done: true, value };
      return value;
    },
    (error: unknown) => {
      state = { done: true, error };
      throw error;
    },
  );
  watched.catch(() => undefined);
  return { state: () => state, result: () => watched };
}
