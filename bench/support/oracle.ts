import type { HttpClient, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/caches/regionCache.js";
import { classifyOperation, documentReadKinds } from "../../src/cosmos/operationKind.js";
import { isFinalResult } from "../../src/cosmos/statusTables.js";
import { cloneRequestFor } from "../../src/hedging/cloneRequest.js";
import { attachHedgeDiagnostics } from "../../src/hedging/diagnostics.js";

function chargeOf(response: PipelineResponse): number {
  const charge = Number.parseFloat(response.headers.get("x-ms-request-charge") ?? "");
  return Number.isFinite(charge) ? charge : 0;
}

/**
 * The benchmarks' oracle: every document read goes to every read region at
 * once and the first final answer wins, so its latency is that of whichever
 * region turned out fastest for that very request: the best any routing or
 * hedging could do. A yardstick, not a mode to run: it multiplies the load by
 * the number of regions. Its answers carry hedge diagnostics (policy
 * `crossRegion`) so that the benchmarks read them like any other mode's.
 */
export function oracleHttpClient(transport: HttpClient): HttpClient {
  const regions = new RegionCache();
  return {
    async sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
      const targets = regions.applicableRegions("read");
      if (!documentReadKinds.has(classifyOperation(request)) || targets.length < 2) {
        const response = await transport.sendRequest(request);
        regions.observe(request, response);
        return response;
      }
      const controllers = targets.map(() => new AbortController());
      const abortAll = (): void => controllers.forEach((controller) => controller.abort());
      request.abortSignal?.addEventListener("abort", abortAll);
      try {
        const answers = targets.map((region, i) => transport.sendRequest(cloneRequestFor(request, region, controllers[i]!.signal)));
        const settled: PromiseSettledResult<PipelineResponse>[] = [];
        const winner = await new Promise<{ response: PipelineResponse; index: number } | undefined>((resolve) => {
          answers.forEach((answer, index) => {
            answer.then(
              (response) => {
                settled.push({ status: "fulfilled", value: response });
                if (isFinalResult({ response })) resolve({ response, index });
                else if (settled.length === answers.length) resolve(undefined);
              },
              (reason: unknown) => {
                settled.push({ status: "rejected", reason });
                if (settled.length === answers.length) resolve(undefined);
              },
            );
          });
        });
        if (winner === undefined) return await answers[0]!;
        attachHedgeDiagnostics(winner.response, {
          policy: "crossRegion",
          operation: classifyOperation(request),
          arms: targets.map((region, index) => ({
            region: region.name,
            reason: index === 0 ? "primary" : "threshold",
            startOffsetMs: 0,
            outcome: index === winner.index ? "returned" : "aborted",
          })),
          hedgeFired: true,
          hedgeWon: winner.index > 0,
          winningRegion: targets[winner.index]!.name,
          terminalState: winner.index > 0 ? "hedgeWon" : "primaryWon",
          totalRequestCharge: chargeOf(winner.response),
        });
        winner.response.request = request;
        return winner.response;
      } finally {
        abortAll();
        request.abortSignal?.removeEventListener("abort", abortAll);
      }
    },
  };
}
