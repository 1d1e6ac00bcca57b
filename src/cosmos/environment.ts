import { logger } from "../log.js";
import { describe } from "../options.js";

/** The environment variable that forces metadata hedging on (`true`) or off (`false`). */
export const metadataHedgingEnvironmentVariable = "AZURE_COSMOS_METADATA_HEDGING_ENABLED";

/** What each switch's values mean, for the line logged when one changes. */
const switchMeanings: Readonly<Record<string, Record<"true" | "false" | "unset", string>>> = {
  [metadataHedgingEnvironmentVariable]: {
    true: "metadata hedging is forced on, whatever the client's options say",
    false: "metadata hedging is switched off, whatever the client's options say",
    unset: "metadata hedging follows the client's options again",
  },
};

/** The value each switch had when last read, so that a change is logged once. */
const lastValues = new Map<string, boolean | undefined>();

function noteValue(name: string, value: boolean | undefined): void {
  if (lastValues.has(name) ? lastValues.get(name) === value : value === undefined) return;
  lastValues.set(name, value);
  const meaning = switchMeanings[name]?.[value === undefined ? "unset" : value ? "true" : "false"];
  const state = value === undefined ? "no longer set to true or false" : `set to ${value}`;
  logger.info(`${name} is ${state}${meaning !== undefined ? `: ${meaning}` : ""}.`);
}

const warnedValues = new Set<string>();
/** Enough to warn once about each of a few typos, without growing forever. */
const maxWarnedValues = 64;

/**
 * Reads a tri-state boolean switch from the environment: `true`/`false`
 * (any case, surrounding spaces ignored), or `undefined` when unset or empty.
 * Any other value is ignored with one warning per distinct value, so a typo
 * never breaks a request and never floods the log. A change of the value
 * since the last read is logged at `info`, once.
 */
export function readBooleanSwitch(name: string): boolean | undefined {
  const value = parseBooleanSwitch(name);
  noteValue(name, value);
  return value;
}

function parseBooleanSwitch(name: string): boolean | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const value = raw.trim().toLowerCase();
  if (value === "true") return true;
  if (value === "false") return false;
  const key = `${name}=${raw}`;
  if (!warnedValues.has(key) && warnedValues.size < maxWarnedValues) {
    warnedValues.add(key);
    logger.warning(
      `Ignoring ${name}=${describe(raw.slice(0, 64))}: accepted values are "true" and "false".`,
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
