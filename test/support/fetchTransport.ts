import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";

/**
 * An `httpClient` of the user's over Node's `fetch` (undici), honouring the
 * request's abort signal: a transport that pools its own connections and
 * never uses the agent the SDK puts on the request.
 */
export function fetchTransport(): HttpClient {
  return {
    async sendRequest(request) {
      const answer = await fetch(request.url, {
        method: request.method,
        headers: request.headers.toJSON(),
        ...(typeof request.body === "string" ? { body: request.body } : {}),
        signal: (request.abortSignal ?? null) as AbortSignal | null,
      });
      const headers = createHttpHeaders();
      answer.headers.forEach((value, name) => headers.set(name, value));
      return { request, status: answer.status, headers, bodyAsText: await answer.text() };
    },
  };
}
