import type { HttpClient, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/topology/regionCache.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { classifyOperation, documentReadKinds } from "../../src/cosmos/operationKind.js";
import { requestChargeOf } from "../../src/cosmos/statusTables.js";
import { retarget } from "../../src/race/cloneRequest.js";
import { attachHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../../test/emulator/index.js";
import { predictionHeader } from "../../test/emulator/index.js";

/**
 * The benchmarks' oracle: before each document read it asks every region of
 * the emulator what it will do to that very request (its fault draw and base
 * latency), then sends the read once, to the region that will answer first.
 * Its latency is the best any routing or hedging could achieve, at no extra
 * load. A yardstick that only the emulator makes possible; its answers carry
 * hedge diagnostics (policy `crossRegion`) so that the benchmarks read them
 * like any other mode's.
 */
export function oracleHttpClient(transport: HttpClient, emulator: Emulator): HttpClient {
  const regions = new RegionCache();
  return {
    async sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
      const operation: OperationKind = classifyOperation(request);
      const candidates = regions.applicableRegions("read");
      if (!documentReadKinds.has(operation) || candidates.length < 2) {
        const response = await transport.sendRequest(request);
        regions.observe(request, response);
        return response;
      }
      const predictions = candidates.map((region) => ({ region, ...emulator.region(region.name).predict(operation) }));
      const best = predictions.reduce((fastest, candidate) => (candidate.cost < fastest.cost ? candidate : fastest));
      const primary = regions.regionOf(request.url);
      request.url = retarget(request.url, best.region);
      request.headers.set(predictionHeader, best.token);
      const response = await transport.sendRequest(request);
      const moved = primary !== undefined && primary.name !== best.region.name;
      attachHedgeDiagnostics(response, {
        policy: "crossRegion",
        operation,
        arms: [],
        hedgeFired: false,
        hedgeWon: moved,
        winningRegion: best.region.name,
        terminalState: moved ? "hedgeWon" : "primaryWon",
        totalRequestCharge: requestChargeOf(response) ?? 0,
        final: true,
      });
      return response;
    },
  };
}
