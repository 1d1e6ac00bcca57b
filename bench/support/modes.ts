import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { CosmosClient, CosmosClientOptions, ItemDefinition, ItemResponse } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../../test/emulator/index.js";
import type { ChargeLedger } from "./chargeLedger.js";
import { oracleHttpClient } from "./oracle.js";
import type { ReadDetail } from "./timeline.js";

/** A client configuration that the demo and the benchmarks compare. */
export type ModeSpec =
  | { readonly name: string; readonly kind: "plain" }
  | { readonly name: string; readonly kind: "hedging"; readonly hedging: HedgingOptions }
  | { readonly name: string; readonly kind: "oracle" };

/** Plain `@azure/cosmos`: no hedging at all. */
export const plainMode: ModeSpec = { name: "off (plain @azure/cosmos)", kind: "plain" };

/** Data-plane hedging with a fixed threshold. */
export function fixedMode(threshold: number): ModeSpec {
  return { name: `fixed ${threshold} ms`, kind: "hedging", hedging: { crossRegion: { threshold } } };
}

/** Every read to the region that will answer it first: the yardstick. */
export const oracleMode: ModeSpec = { name: "oracle (fastest region)", kind: "oracle" };

/**
 * The client options of a mode, built over the account's base options; the
 * oracle needs the emulator it predicts; a hedging client reports to the
 * ledger, if given, what its reads cost.
 */
export function modeClientOptions(mode: ModeSpec, base: CosmosClientOptions, emulator?: Emulator, ledger?: ChargeLedger): CosmosClientOptions {
  switch (mode.kind) {
    case "plain":
      return base;
    case "hedging":
      return withHedging(base, ledger === undefined ? mode.hedging : { ...mode.hedging, onDiagnostics: ledger.onDiagnostics });
    case "oracle":
      if (emulator === undefined) throw new Error("The oracle mode runs only on the emulator, whose regions it asks.");
      return { ...base, httpClient: oracleHttpClient(base.httpClient ?? createDefaultHttpClient(), emulator) };
  }
}

/**
 * What one read reports: the serving region comes from the hedge diagnostics
 * when a hedging policy handled it, else from the last endpoint the SDK
 * contacted; the charge counts every arm that answered.
 */
export function describeRead(response: ItemResponse<ItemDefinition>, regionOfEndpoint: (endpoint: string) => string | undefined): ReadDetail {
  const diagnostics = getHedgeDiagnostics(response.headers);
  if (diagnostics !== undefined) {
    return {
      region: diagnostics.winningRegion,
      charge: diagnostics.totalRequestCharge,
      extraRequests: Math.max(0, diagnostics.arms.length - 1),
      refused: diagnostics.skipReason === "budgetExhausted",
      ...(diagnostics.thresholdMs === undefined ? {} : { threshold: { ms: diagnostics.thresholdMs, source: diagnostics.thresholdSource ?? "options" } }),
    };
  }
  const contacted = response.diagnostics?.clientSideRequestStatistics.locationEndpointsContacted ?? [];
  const last = contacted[contacted.length - 1];
  return { region: last === undefined ? undefined : regionOfEndpoint(last), charge: response.requestCharge ?? 0, extraRequests: 0 };
}

/** Request units of a mode's reads: from the ledger for a hedging client (drained losers included), else as each read reported it. */
export async function chargeOf(ledger: ChargeLedger | undefined, details: readonly ReadDetail[]): Promise<number> {
  if (ledger !== undefined) return (await ledger.settledCharge()).charge;
  return details.reduce((sum, detail) => sum + detail.charge, 0);
}

/** Disposes every client. */
export function disposeAll(clients: readonly CosmosClient[]): void {
  for (const client of clients) client.dispose();
}
