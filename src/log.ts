import { createClientLogger } from "@azure/logger";
import type { AzureLogger } from "@azure/logger";

/**
 * The package logger. Enable it with `AZURE_LOG_LEVEL=info` (or `setLogLevel`
 * from `@azure/logger`); each policy logs through a child of it so that its
 * lines name the policy.
 */
export const logger: AzureLogger = createClientLogger("cosmos-hedging");

/** A child logger whose lines start with the policy's name. */
export function policyLogger(policyName: string): AzureLogger {
  return createClientLogger(`cosmos-hedging:${policyName}`);
}

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
