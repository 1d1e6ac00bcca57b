import { format } from "node:util";
import { AzureLogger, getLogLevel, setLogLevel } from "@azure/logger";
import type { AzureLogLevel } from "@azure/logger";

/** The lines `@azure/logger` wrote while a capture was active, and how to stop it. */
export interface LogCapture {
  /** Every line, formatted as the default sink would print it (namespace first). */
  readonly lines: string[];
  /** The lines of this package's loggers (`azure:cosmos-hedging...`). */
  packageLines(): string[];
  /** Puts back the previous sink and log level. */
  restore(): void;
}

/**
 * Redirects every `@azure/logger` line (this package's, `@azure/cosmos`'s and
 * core's, which share the logger) into memory at `level`, as
 * `AZURE_LOG_LEVEL` would enable it. Always call `restore()`.
 */
export function captureAzureLogs(level: AzureLogLevel): LogCapture {
  const previousLog = AzureLogger.log;
  const previousLevel = getLogLevel();
  const lines: string[] = [];
  setLogLevel(level);
  AzureLogger.log = (...args: unknown[]) => {
    lines.push(format(...args));
  };
  let restored = false;
  return {
    lines,
    packageLines: () => lines.filter((line) => line.startsWith("azure:cosmos-hedging")),
    restore() {
      if (restored) return;
      restored = true;
      AzureLogger.log = previousLog;
      setLogLevel(previousLevel);
    },
  };
}
