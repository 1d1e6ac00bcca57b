import type { CosmosClientOptions } from "@azure/cosmos";
import type { FaultRule, Emulator, RecordedRequest } from "../emulator/index.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";

/**
 * Side-by-side tests run a plain and a hedged client at once on one
 * emulator; each client's `userAgentSuffix` carries a tag of its own, by
 * which its requests are found and faults are scoped to it.
 */

/** Only the requests of one client, by its user-agent tag (and of `kinds`, when given). */
export function tagged(emulator: Emulator, tag: string, kinds?: readonly OperationKind[]): RecordedRequest[] {
  return emulator.requests.filter((request) => request.headers["user-agent"]?.includes(tag) === true && (kinds === undefined || kinds.includes(request.kind)));
}

/** Waits until every request of a tag has ended (answered, reset or cut), at most `withinMs`. @returns whether they all did. */
export async function settledTag(emulator: Emulator, tag: string, withinMs: number): Promise<boolean> {
  const start = performance.now();
  for (;;) {
    if (tagged(emulator, tag).every((request) => request.endedAt !== undefined)) return true;
    if (performance.now() - start > withinMs) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A fault rule met only by one client's requests of `kinds` (point reads unless told). */
export function scoped(rule: FaultRule, tag: string, kinds: OperationKind[] = ["pointRead"]): FaultRule {
  return { ...rule, operations: kinds, ifHeaderValue: { name: "user-agent", includes: tag } };
}

/**
 * The options of a tagged client on `emulator`: its key, its tag in the user
 * agent, background endpoint refresh off (a test's timings are its own), and
 * `preferredLocations` under the test's own connection policy.
 */
export function taggedClientOptions(
  emulator: Pick<Emulator, "endpoint" | "key">,
  tag: string,
  preferredLocations: readonly string[],
  connectionPolicy: CosmosClientOptions["connectionPolicy"] = {},
  extra: Partial<CosmosClientOptions> = {},
): CosmosClientOptions {
  return {
    endpoint: emulator.endpoint,
    key: emulator.key,
    userAgentSuffix: tag,
    ...extra,
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...preferredLocations], ...connectionPolicy },
  };
}
