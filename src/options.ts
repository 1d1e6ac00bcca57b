/**
 * The rules every option of this package is checked by, in one place and
 * with no dependency of its own, so that the caches, the hedging engine,
 * the policies and the client factories all share them. Each error names
 * the option and shows the value (see {@link describe}).
 */

/**
 * A short, safe rendering of a bad value for an error message. JSON escapes
 * only C0 controls; DEL and C1 (NEL, CSI, ...) are escaped too, since an
 * error is logged and a refused value is often refused for holding one.
 */
export function describe(value: unknown): string {
  if (typeof value === "string") {
    const json = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
    return json.replace(/[\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  if (typeof value === "number" || typeof value === "boolean" || value == null) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Node.js runs a timer of 2^31 - 1 ms or more after 1 ms instead (with a
 * TimeoutOverflowWarning), so a delay that long would hedge every request at once.
 */
export const maxTimerMilliseconds = 2 ** 31 - 1;

/** Whether a value is a usable timer delay: a finite number above zero and below {@link maxTimerMilliseconds}. */
export function isTimerMilliseconds(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 && value < maxTimerMilliseconds;
}

/**
 * `value`, or `fallback` when it is `undefined`. Not `??`: a `null` is no
 * way of leaving an option out, and must reach its check and fail there,
 * as it does for the options that have no default.
 */
export function orDefault<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/** A finite number above zero and below 2^31 - 1, or a `RangeError` that names the option and the value. */
export function positiveMilliseconds(option: string, value: unknown): number {
  if (!isTimerMilliseconds(value)) {
    throw new RangeError(
      `${option} must be a finite number of milliseconds above 0 and below ${maxTimerMilliseconds}; got ${describe(value)}.`,
    );
  }
  return value;
}

/** A whole number of at least `min`, or a `RangeError` that names the option and the value. */
export function wholeNumber(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new RangeError(`${option} must be a whole number of at least ${min}; got ${describe(value)}.`);
  }
  return value;
}

/**
 * A share of a whole: a number above 0 and below 1 (or up to 1 itself with
 * `wholeAllowed`), or a `RangeError` that names the option and the value.
 */
export function share(option: string, value: unknown, wholeAllowed: boolean): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > 1 || (value === 1 && !wholeAllowed)) {
    throw new RangeError(`${option} must be a number above 0 and ${wholeAllowed ? "at most" : "below"} 1; got ${describe(value)}.`);
  }
  return value;
}

/** A boolean or `undefined`, or a `TypeError` that names the option. */
export function optionalBoolean(option: string, value: unknown): boolean | undefined {
  if (value !== undefined && typeof value !== "boolean") {
    throw new TypeError(`${option} must be true or false; got ${describe(value)}.`);
  }
  return value;
}

/** A function or `undefined`, or a `TypeError` that names the option. */
export function optionalFunction<T>(option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`${option} must be a function; got ${describe(value)}.`);
  }
  return value;
}

/**
 * The keys of an options interface, from a record that names each of them:
 * declare it `satisfies Record<keyof TheOptions, true>`, so that the
 * compiler fails when an option is added to the interface and not to the
 * record, or the other way round.
 */
export function optionKeys<T extends object>(record: Record<keyof T & string, true>): readonly (keyof T & string)[] {
  return Object.freeze(Object.keys(record) as (keyof T & string)[]);
}

/**
 * An object (options bag) or `undefined`, or a `TypeError` that names it.
 * With `knownKeys` (see {@link optionKeys}), a key outside them is a
 * `TypeError` too: a misspelt option would otherwise be ignored without a word.
 */
export function optionsObject<T extends object>(option: string, value: T | undefined, knownKeys?: readonly (keyof T & string)[]): T {
  if (value === undefined) return {} as T;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${option} must be an object; got ${describe(value)}.`);
  }
  if (knownKeys !== undefined) {
    const unknown = Object.keys(value).find((key) => !(knownKeys as readonly string[]).includes(key));
    if (unknown !== undefined) {
      throw new TypeError(`${option} has no option ${describe(unknown)}; the options are ${knownKeys.join(", ")}.`);
    }
  }
  return value;
}

/**
 * The options of a bag copied into a plain object, each read once (own or
 * inherited), so that what is validated is what is used: a getter or a
 * proxy read again could answer differently the second time.
 */
export function readOnce<T extends object>(value: T, keys: readonly (keyof T & string)[]): T {
  const copy: Partial<T> = {};
  for (const key of keys) {
    const field = value[key];
    if (field !== undefined) copy[key] = field;
  }
  return copy as T;
}

/** Bounds on region names and lists: anything beyond them is certainly not a list of real regions. */
export const regionNameLimits = {
  /** The most regions a list may name. */
  maxRegions: 256,
  /** The longest region name; Azure's are under 30 characters. */
  maxRegionNameLength: 128,
} as const;

/**
 * Whether text holds a control character (C0, DEL or C1, Unicode's `Cc`):
 * in a region name it could forge a header or a log line, or drive a
 * terminal (NEL ends a line for some log readers, CSI starts an escape).
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** The region-name rule: a string, not blank, at most {@link regionNameLimits}.maxRegionNameLength characters, no control character. */
export function isRegionName(value: unknown): value is string {
  return (
    typeof value === "string" &&
    value.trim() !== "" &&
    value.length <= regionNameLimits.maxRegionNameLength &&
    !hasControlCharacter(value)
  );
}

/** A region name by {@link isRegionName}'s rule, or a `TypeError` that names the option, says which part of the rule failed and shows the value. */
export function regionName(option: string, value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(`${option} must be a non-empty region name; got ${describe(value)}.`);
  }
  if (hasControlCharacter(value)) {
    throw new TypeError(`${option} must not contain CR, LF or another control character; got ${describe(value)}.`);
  }
  if (value.length > regionNameLimits.maxRegionNameLength) {
    throw new TypeError(`${option} is longer than ${regionNameLimits.maxRegionNameLength} characters; got ${describe(value)}.`);
  }
  return value;
}

/** A list of at most {@link regionNameLimits}.maxRegions region names (see {@link regionName}), copied and frozen, or a `TypeError` naming the option. */
export function regionNameList(option: string, value: unknown): readonly string[] {
  if (!Array.isArray(value)) {
    throw new TypeError(`${option} must be an array of region names; got ${describe(value)}.`);
  }
  if (value.length > regionNameLimits.maxRegions) {
    throw new TypeError(`${option} lists ${value.length} regions, more than ${regionNameLimits.maxRegions}.`);
  }
  // Array.from visits holes, which map would skip and copy: a sparse list is refused at its first hole.
  return Object.freeze(Array.from(value, (entry: unknown, index) => regionName(`${option}[${index}]`, entry)));
}
