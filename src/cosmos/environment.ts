import { logger } from "../log.js";

/** The environment variable that forces metadata hedging on (`true`) or off (`false`). */
export const metadataHedgingEnvironmentVariable = "AZURE_COSMOS_METADATA_HEDGING_ENABLED";

const warnedValues = new Set<string>();
/** Enough to warn once about each of a few typos, without growing forever. */
const maxWarnedValues = 64;

/**
 * Reads a tri-state boolean switch from the environment: `true`/`false`
 * (any case, surrounding spaces ignored), or `undefined` when unset or empty.
 * Any other value is ignored with one warning per distinct value, so a typo
 * never breaks a request and never floods the log.
 */
export function readBooleanSwitch(name: string): boolean | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const value = raw.trim().toLowerCase();
  if (value === "true") return true;
  if (value === "false") return false;
  const key = `${name}=${raw}`;
  if (!warnedValues.has(key) && warnedValues.size < maxWarnedValues) {
    warnedValues.add(key);
    logger.warning(
      `Ignoring ${name}=${JSON.stringify(raw.slice(0, 64))}: accepted values are "true" and "false".`,
    );
  }
  return undefined;
}

/**
 * Forgets every value warned about, so that each warns again once.
 * @internal For tests: the de-duplication is process-wide, so without this
 * a test's warning depends on what ran before it. Not exported by the package.
 */
export function resetEnvironmentWarnings(): void {
  warnedValues.clear();
}
