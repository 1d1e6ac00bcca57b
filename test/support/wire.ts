import assert from "node:assert/strict";
import type { Emulator, RecordedRequest } from "../emulator/index.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";

/** Waits (polling each millisecond, at most `withinMs`) until the emulator has recorded a request that matches. */
export async function arrivalOf(
  emulator: Emulator,
  predicate: (request: RecordedRequest) => boolean,
  withinMs = 10_000,
): Promise<RecordedRequest> {
  const start = performance.now();
  for (;;) {
    const found = emulator.requests.find(predicate);
    if (found !== undefined) return found;
    if (performance.now() - start > withinMs) throw new Error(`no matching request reached the emulator within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** The requests of the given kinds that reached any region, in arrival order, once none is in flight. */
export async function settledRequests(emulator: Emulator, kind: OperationKind | readonly OperationKind[]): Promise<RecordedRequest[]> {
  await emulator.idle();
  const kinds: readonly OperationKind[] = typeof kind === "string" ? [kind] : kind;
  return emulator.requests.filter((request) => kinds.includes(request.kind));
}

/** What the service saw of a request, in a form `assert.deepEqual` prints well. */
export function seen(request: RecordedRequest): { region: string; status: number | undefined; cutByClient: boolean } {
  return { region: request.region, status: request.status, cutByClient: request.cutByClient };
}

type Seen = ReturnType<typeof seen>;

const byRegion = (a: Seen, b: Seen): number => a.region.localeCompare(b.region) || String(a.status).localeCompare(String(b.status));

/** Asserts what the service saw of these requests, whatever order they arrived in: a loaded machine can deliver a later arm first. */
export function assertSeen(requests: readonly RecordedRequest[], expected: readonly Seen[]): void {
  assert.deepEqual(requests.map(seen).sort(byRegion), [...expected].sort(byRegion));
}
