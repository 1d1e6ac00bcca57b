import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { OperationKind } from "./operationKind.js";
import { CosmosHeaders } from "./headers.js";

/**
 * Whether a patch operation gives the same document when applied twice.
 * `incr` adds again, `move` moves what now sits at `from`, and an `add` or
 * `remove` at an array position (`/-` or an index) inserts or removes a
 * second element. A numeric last segment may also name an object's key,
 * which would be safe; telling the two apart needs the document, so it is
 * treated as an array position.
 */
function isRepeatablePatchOperation(operation: unknown): boolean {
  if (operation === null || typeof operation !== "object") return false;
  const { op, path } = operation as { op?: unknown; path?: unknown };
  if (typeof op !== "string" || typeof path !== "string") return false;
  const kind = op.toLowerCase();
  if (kind === "incr" || kind === "move") return false;
  const last = path.slice(path.lastIndexOf("/") + 1);
  const arrayPosition = last === "-" || /^\d+$/.test(last);
  if ((kind === "add" || kind === "remove") && arrayPosition) return false;
  return kind === "set" || kind === "replace" || kind === "add" || kind === "remove";
}

/**
 * A patch body whose every operation is repeatable: the list of operations
 * itself, or `{ operations: [...] }` with or without a condition, as
 * `@azure/cosmos` sends whichever the caller gave it.
 */
function isRepeatablePatch(body: unknown): boolean {
  if (body === null || typeof body !== "object") return false;
  const operations = Array.isArray(body) ? body : (body as { operations?: unknown }).operations;
  return Array.isArray(operations) && operations.length > 0 && operations.every(isRepeatablePatchOperation);
}

const repeatableBatchOperations: ReadonlySet<string> = new Set(["create", "replace", "delete", "read"]);

/**
 * A batch or bulk body: an array of operations, each of a repeatable kind (a
 * patch only with repeatable operations, an upsert only with its `ifMatch`).
 */
function isRepeatableBatch(body: unknown): boolean {
  if (!Array.isArray(body) || body.length === 0) return false;
  return body.every((entry: unknown) => {
    if (entry === null || typeof entry !== "object") return false;
    const { operationType, resourceBody, ifMatch } = entry as { operationType?: unknown; resourceBody?: unknown; ifMatch?: unknown };
    if (typeof operationType !== "string") return false;
    const kind = operationType.toLowerCase();
    if (kind === "upsert") return typeof ifMatch === "string" && ifMatch !== "";
    return repeatableBatchOperations.has(kind) || (kind === "patch" && isRepeatablePatch(resourceBody));
  });
}

function parsedBody(request: PipelineRequest): unknown {
  if (typeof request.body !== "string") return undefined;
  try {
    return JSON.parse(request.body) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Whether a write may reach the service twice (once per region of a race)
 * and give the caller the answer once would: create, replace and delete do
 * (a second create or delete is answered 409 or 404, which never beats the
 * first's success; a second replace answers as the first); an upsert only
 * with `If-Match` (a second is answered 412). An unconditional upsert that
 * creates its document is answered 201, and a second application 200 (it
 * replaced the document the first created), a success that would win the
 * race and tell the caller its document was updated. A patch only when every
 * operation is `set`, `replace`, or an `add` or `remove` of a named
 * property; a batch or bulk request only when every operation in it is one
 * of these. A body this cannot read is not repeatable. Stored procedures
 * are not document writes and are never hedged.
 */
export function isRepeatableWrite(request: PipelineRequest, operation: OperationKind): boolean {
  switch (operation) {
    case "upsert":
      return request.headers.has(CosmosHeaders.ifMatch);
    case "create":
    case "replace":
    case "delete":
      return true;
    case "patch":
      return isRepeatablePatch(parsedBody(request));
    case "batch":
      return isRepeatableBatch(parsedBody(request));
    default:
      return false;
  }
}

/**
 * Whether a 2xx answer to a batch or bulk request reports a failure of any
 * of its operations (a bulk request answers 200 with a status per
 * operation). Such an answer is judged like an error while the primary is
 * in flight: a hedge that finds its documents already created by the
 * primary answers 200 with a 409 for each, which must not beat the
 * primary's own 201s.
 */
export function carriesOperationErrors(response: PipelineResponse): boolean {
  if (response.status === 207) return true;
  const text = response.bodyAsText;
  if (typeof text !== "string" || !text.includes("statusCode")) return false;
  try {
    const results: unknown = JSON.parse(text);
    return (
      Array.isArray(results) &&
      results.some((result: unknown) => {
        const status = result !== null && typeof result === "object" ? (result as { statusCode?: unknown }).statusCode : undefined;
        return typeof status === "number" && status >= 400;
      })
    );
  } catch {
    return false;
  }
}
