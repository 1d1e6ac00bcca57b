import type { AzureLogger } from "@azure/logger";
import { operatorLogLimits } from "../log.js";
import type { HedgeDiagnostics } from "./diagnostics.js";

interface BudgetEpisode {
  readonly since: number;
  refusals: number;
  lastRefusalAt: number;
}

const budgetEpisodes = new WeakMap<object, BudgetEpisode>();

function describeArms(diagnostics: HedgeDiagnostics): string {
  return diagnostics.arms
    .map((arm) => `${arm.region} ${arm.reason} ${arm.status ?? arm.error?.code ?? arm.error?.name ?? "-"} ${arm.outcome}`)
    .join(", ");
}

/** The race's charge as far as it is known: a drained arm's is added only when its drain ends. */
function chargeText(diagnostics: HedgeDiagnostics): string {
  return diagnostics.final ? `${diagnostics.totalRequestCharge} RU` : `${diagnostics.totalRequestCharge} RU so far, not final: a drained arm's charge is still to come`;
}

/**
 * What a finished race tells the log: at `verbose`, each race that fired a
 * hedge and how it ended; at `info`, when the hedge budget starts refusing
 * hedges and when it has gone {@link operatorLogLimits}.budgetQuietMs
 * without refusing one and a hedge gets through again.
 * @param policy - what the budget state belongs to, and its logger: one per policy instance, whose budget it is.
 */
export function logRace(policy: { readonly logger: AzureLogger }, diagnostics: HedgeDiagnostics): void {
  // Most races fire no hedge and meet no refusal: nothing to log, and no budget episode can start or end.
  if (!diagnostics.hedgeFired && diagnostics.skipReason !== "budgetExhausted") return;
  const { logger } = policy;
  if (diagnostics.hedgeFired && logger.verbose.enabled) {
    const returned = diagnostics.arms.find((arm) => arm.outcome === "returned");
    const firstHedge = diagnostics.arms[1];
    logger.verbose(
      `${diagnostics.operation}: hedged at ${firstHedge?.startOffsetMs} ms (${firstHedge?.reason}); ${diagnostics.terminalState}` +
        `${diagnostics.winningRegion !== undefined ? ` by ${diagnostics.winningRegion}` : ""}` +
        `${returned?.durationMs !== undefined ? ` in ${returned.startOffsetMs + returned.durationMs} ms` : ""}` +
        ` (arms: ${describeArms(diagnostics)}; ${chargeText(diagnostics)}).`,
    );
  }
  const now = performance.now();
  const episode = budgetEpisodes.get(policy);
  if (diagnostics.skipReason === "budgetExhausted") {
    if (episode === undefined) {
      budgetEpisodes.set(policy, { since: now, refusals: 1, lastRefusalAt: now });
      logger.info(`The hedge budget is spent: requests run without hedges (skipReason "budgetExhausted") until it refills.`);
    } else {
      episode.refusals += 1;
      episode.lastRefusalAt = now;
    }
  } else if (episode !== undefined && diagnostics.hedgeFired && now - episode.lastRefusalAt >= operatorLogLimits.budgetQuietMs) {
    budgetEpisodes.delete(policy);
    const seconds = ((episode.lastRefusalAt - episode.since) / 1000).toFixed(1);
    logger.info(`The hedge budget has recovered: hedges go out again, after ${episode.refusals} refused over ${seconds} s.`);
  }
}
