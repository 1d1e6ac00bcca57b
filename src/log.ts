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
