import type { OperationKind } from "../../src/cosmos/operationKind.js";

/** What a region does to the requests a rule names instead of (or before) serving them normally. */
export interface FaultRule {
  /** The operation kinds the rule applies to; every kind when absent. */
  operations?: OperationKind[];
  /** A delay before answering or forwarding, on top of the region's base latency: fixed, or uniform in `[min, max]`. */
  delayMs?: number | { min: number; max: number };
  /**
   * Forward at once, then hold the backend's answer this long: a region that
   * applies a write and acknowledges it late, so that a hedge arriving
   * meanwhile meets the write already done. Ignored with a status, body or reset.
   */
  responseDelayMs?: number;
  /**
   * Forward, then send the backend's answer with its headers and the first byte of its body at once and the rest of
   * the body this long later: a region whose answer stalls mid-body, so that an abort or a timeout meets the client
   * reading it. Ignored with a status, body or reset, and for an answer without a body.
   */
  bodyDelayMs?: number;
  /** Answer with this status instead of forwarding to the backend. */
  status?: number;
  /** Sent as `x-ms-substatus` with {@link FaultRule.status}. */
  substatus?: number;
  /** The JSON body to answer with, as given (account reads are not rewritten); with status 200, the default when only a body is given, it is a canned, possibly stale, answer. */
  body?: unknown;
  /** Extra response headers of the canned answer, for example `x-ms-retry-after-ms` on a 429. */
  headers?: Record<string, string>;
  /** Destroy the client's socket (after the delay, if any) instead of answering. */
  connectionReset?: boolean;
  /** The chance, 0..1, that a matching request is faulted. Default 1. */
  probability?: number;
  /** Apply at most this many times. */
  count?: number;
  /** Apply only to requests that carry this header (a lower-case name), for example `x-ms-session-token`. */
  ifHeader?: string;
  /**
   * Apply only to requests whose header `name` (lower-case) contains `includes`: with a
   * `CosmosClient`'s `userAgentSuffix` in `user-agent`, a rule that only one client's
   * requests meet, so that tests sharing an emulator can run at once.
   */
  ifHeaderValue?: { name: string; includes: string };
  /**
   * Apply only to requests of this partition key range (an id of the
   * emulator's `partitionKeyRanges`): those that name it, as the pages of a
   * fanned-out query do, and those whose partition key hashes into it, as a
   * point read's does. A partition that fails in one region while the
   * container's others are served.
   */
  partitionKeyRange?: string;
  /**
   * Apply to one matching request in `every`, the first of each group (the 1st, the
   * `every + 1`-th, ...): a region that flaps with 2, a periodic straggler with 8. A whole number >= 1.
   */
  every?: number;
}

/** A rule installed on a region. */
export interface FaultHandle {
  /** How many requests the rule has been applied to so far. */
  readonly applied: number;
  /** Uninstalls the rule; requests already being faulted are not affected. */
  remove(): void;
}

/** What a region must do to one request: the chosen rule and its delay, drawn once. */
export interface FaultDecision {
  readonly rule: FaultRule;
  readonly delayMs: number;
}

function validateRule(rule: FaultRule): void {
  const { delayMs, probability, count, status, every, responseDelayMs, bodyDelayMs, partitionKeyRange } = rule;
  if (partitionKeyRange !== undefined && !(typeof partitionKeyRange === "string" && /^\d+$/.test(partitionKeyRange))) {
    throw new RangeError(`partitionKeyRange must be a range id such as "1"; got ${JSON.stringify(partitionKeyRange)}`);
  }
  if (typeof delayMs === "number" && !(delayMs >= 0)) throw new RangeError(`delayMs must be >= 0; got ${delayMs}`);
  if (typeof delayMs === "object" && !(delayMs.min >= 0 && delayMs.max >= delayMs.min)) {
    throw new RangeError(`delayMs must satisfy 0 <= min <= max; got ${JSON.stringify(delayMs)}`);
  }
  if (probability !== undefined && !(probability >= 0 && probability <= 1)) {
    throw new RangeError(`probability must be in [0, 1]; got ${probability}`);
  }
  if (count !== undefined && !(Number.isInteger(count) && count >= 0)) {
    throw new RangeError(`count must be a non-negative integer; got ${count}`);
  }
  if (responseDelayMs !== undefined && !(responseDelayMs >= 0 && Number.isFinite(responseDelayMs))) {
    throw new RangeError(`responseDelayMs must be a finite number >= 0; got ${responseDelayMs}`);
  }
  if (bodyDelayMs !== undefined && !(bodyDelayMs >= 0 && Number.isFinite(bodyDelayMs))) {
    throw new RangeError(`bodyDelayMs must be a finite number >= 0; got ${bodyDelayMs}`);
  }
  if (every !== undefined && !(Number.isInteger(every) && every >= 1)) throw new RangeError(`every must be a whole number >= 1; got ${every}`);
  if (status !== undefined && !(Number.isInteger(status) && status >= 100 && status <= 599)) {
    throw new RangeError(`status must be an HTTP status; got ${status}`);
  }
}

function headerIncludes(value: unknown, part: string): boolean {
  if (typeof value === "string") return value.includes(part);
  return Array.isArray(value) && value.some((entry) => typeof entry === "string" && entry.includes(part));
}

interface InstalledRule {
  readonly rule: FaultRule;
  applied: number;
  /** The requests that matched the rule's kinds and headers, applied or not: what {@link FaultRule.every} counts. */
  matched: number;
}

/** The fault rules of one region, evaluated in insertion order. */
export class FaultList {
  private rules: InstalledRule[] = [];

  constructor(private readonly random: () => number) {}

  add(rule: FaultRule): FaultHandle {
    validateRule(rule);
    // A private copy, so that a caller mutating its rule object cannot change a rule mid-run.
    const installed: InstalledRule = {
      rule: {
        ...rule,
        ...(rule.operations !== undefined ? { operations: [...rule.operations] } : {}),
        ...(rule.ifHeaderValue !== undefined ? { ifHeaderValue: { ...rule.ifHeaderValue } } : {}),
      },
      applied: 0,
      matched: 0,
    };
    this.rules.push(installed);
    return {
      get applied() {
        return installed.applied;
      },
      remove: () => {
        this.rules = this.rules.filter((candidate) => candidate !== installed);
      },
    };
  }

  clear(): void {
    this.rules = [];
  }

  /**
   * The first rule that names the kind, has count left and wins its draw; counts it as applied.
   * @param range - the partition key range the request is for, asked only of a rule that names one.
   */
  decide(kind: OperationKind, headers: Readonly<Record<string, unknown>> = {}, range: () => string | undefined = () => undefined): FaultDecision | undefined {
    for (const installed of this.rules) {
      const { rule } = installed;
      if (rule.operations !== undefined && !rule.operations.includes(kind)) continue;
      if (rule.ifHeader !== undefined && headers[rule.ifHeader] === undefined) continue;
      if (rule.ifHeaderValue !== undefined && !headerIncludes(headers[rule.ifHeaderValue.name], rule.ifHeaderValue.includes)) continue;
      if (rule.partitionKeyRange !== undefined && range() !== rule.partitionKeyRange) continue;
      if (rule.every !== undefined && installed.matched++ % rule.every !== 0) continue;
      if (rule.count !== undefined && installed.applied >= rule.count) continue;
      // Draw only for real probabilities, so adding a certain rule does not shift the sequence of the others.
      if (rule.probability !== undefined && rule.probability < 1 && !(this.random() < rule.probability)) continue;
      installed.applied++;
      return { rule, delayMs: this.drawDelay(rule.delayMs) };
    }
    return undefined;
  }

  private drawDelay(delay: FaultRule["delayMs"]): number {
    if (delay === undefined) return 0;
    if (typeof delay === "number") return delay;
    return delay.min + this.random() * (delay.max - delay.min);
  }
}
