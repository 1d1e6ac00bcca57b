import { describe } from "../caches/regionNames.js";

/**
 * Node.js runs a timer of 2^31 - 1 ms or more after 1 ms instead (with a
 * TimeoutOverflowWarning), so a delay that long would hedge every request at once.
 */
export const maxTimerMilliseconds = 2 ** 31 - 1;

/** Whether a value is a usable timer delay: a finite number above zero and below {@link maxTimerMilliseconds}. */
export function isTimerMilliseconds(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 && value < maxTimerMilliseconds;
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
 * An object (options bag) or `undefined`, or a `TypeError` that names it.
 * With `knownKeys`, a key outside them is a `TypeError` too: a misspelt
 * option would otherwise be ignored without a word.
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
