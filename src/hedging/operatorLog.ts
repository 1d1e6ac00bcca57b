import type { AzureLogger } from "@azure/logger";
import type { AccountTopology } from "../caches/regionCache.js";
import type { HedgeDiagnostics } from "./diagnostics.js";

/** How many `info` lines of one kind may be written per window, so that a flapping state cannot flood the log. */
export const operatorLogLimits = {
  /** Lines of one key per window. */
  linesPerWindow: 5,
  /** The window, in milliseconds. */
  windowMs: 60_000,
  /** Keys remembered at once; beyond it the counts start afresh. */
  maxKeys: 512,
  /** Milliseconds without a refused hedge after which a spent hedge budget counts as recovered. */
  budgetQuietMs: 1_000,
} as const;

interface LogWindow {
  start: number;
  lines: number;
  suppressed: number;
}

/**
 * `info` lines about state changes an operator acts on, at most
 * {@link operatorLogLimits}.linesPerWindow per key and window; the first
 * line of the next window says how many were left out.
 */
export class RateLimitedLog {
  private readonly windows = new Map<string, LogWindow>();

  constructor(private readonly logger: AzureLogger) {}

  info(key: string, message: string): void {
    const now = performance.now();
    let window = this.windows.get(key);
    let text = message;
    if (window === undefined || now - window.start >= operatorLogLimits.windowMs) {
      const suppressed = window?.suppressed ?? 0;
      if (suppressed > 0) text = `${message} (${suppressed} more such ${suppressed === 1 ? "line" : "lines"} left out in the previous minute)`;
      if (window === undefined && this.windows.size >= operatorLogLimits.maxKeys) this.windows.clear();
      window = { start: now, lines: 0, suppressed: 0 };
      this.windows.set(key, window);
    }
    if (window.lines >= operatorLogLimits.linesPerWindow) {
      window.suppressed += 1;
      return;
    }
    window.lines += 1;
    this.logger.info(text);
  }
}

function regionList(regions: AccountTopology["readRegions"]): string {
  return regions.map((region) => region.name).join(", ") || "none";
}

function sameRegions(a: AccountTopology["readRegions"], b: AccountTopology["readRegions"]): boolean {
  return a.length === b.length && a.every((region, i) => region.name === b[i]?.name && region.endpoint === b[i]?.endpoint);
}

/**
 * The lines that a new topology is worth, each with its rate-limiting key:
 * the regions when first learned or changed, and the account's
 * per-partition failover and hedging switch when they turn (each of which
 * turns hedging on or off).
 */
export function topologyChangeLines(previous: AccountTopology | undefined, next: AccountTopology): { key: string; line: string }[] {
  const lines: { key: string; line: string }[] = [];
  const shape = `read regions ${regionList(next.readRegions)}; write regions ${regionList(next.writeRegions)}; multi-write ${next.multipleWriteLocations ? "on" : "off"}`;
  if (previous === undefined) {
    lines.push({ key: "topology", line: `Learned the account's topology: ${shape}; per-partition automatic failover ${next.perPartitionFailover ? "on" : "off"}.` });
  } else if (
    !sameRegions(previous.readRegions, next.readRegions) ||
    !sameRegions(previous.writeRegions, next.writeRegions) ||
    previous.multipleWriteLocations !== next.multipleWriteLocations
  ) {
    lines.push({ key: "topology", line: `The account's topology changed: ${shape}.` });
  }
  if (previous !== undefined && previous.perPartitionFailover !== next.perPartitionFailover) {
    lines.push({
      key: "perPartitionFailover",
      line: next.perPartitionFailover
        ? `The account now reports per-partition automatic failover: hedging set to "followAccount" is on.`
        : `The account no longer reports per-partition automatic failover: hedging set to "followAccount" is off.`,
    });
  }
  if (next.crossRegionalHedgingDisabled !== (previous?.crossRegionalHedgingDisabled ?? false)) {
    lines.push({
      key: "crossRegionalHedgingDisabled",
      line: next.crossRegionalHedgingDisabled
        ? "The account's disableCrossRegionalHedging switch is set: all hedging is off until the operator clears it."
        : "The account's disableCrossRegionalHedging switch was cleared: hedging is back as configured.",
    });
  }
  return lines;
}

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

/**
 * What a finished race tells the log: at `verbose`, each race that fired a
 * hedge and how it ended; at `info`, when the hedge budget starts refusing
 * hedges and when it has gone {@link operatorLogLimits}.budgetQuietMs
 * without refusing one and a hedge gets through again.
 * @param policy - what the budget state belongs to: one per policy instance, whose budget it is.
 */
export function logRace(policy: object, logger: AzureLogger, diagnostics: HedgeDiagnostics): void {
  if (diagnostics.hedgeFired && logger.verbose.enabled) {
    const returned = diagnostics.arms.find((arm) => arm.outcome === "returned");
    const firstHedge = diagnostics.arms[1];
    logger.verbose(
      `${diagnostics.operation}: hedged at ${firstHedge?.startOffsetMs} ms (${firstHedge?.reason}); ${diagnostics.terminalState}` +
        `${diagnostics.winningRegion !== undefined ? ` by ${diagnostics.winningRegion}` : ""}` +
        `${returned?.durationMs !== undefined ? ` in ${returned.startOffsetMs + returned.durationMs} ms` : ""}` +
        ` (arms: ${describeArms(diagnostics)}; ${diagnostics.totalRequestCharge} RU).`,
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
