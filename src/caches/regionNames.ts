/**
 * Region names compare without case and spaces, so "West US", "westus" and
 * "WestUS" name one region, as they do in the Azure portal and the other SDKs.
 */
export function normalizeRegionName(name: string): string {
  // Several policies normalize the same few names on every request; a client's account has a handful of them.
  let normalized = normalizedNames.get(name);
  if (normalized === undefined) {
    normalized = name.replace(/\s+/g, "").toLowerCase();
    if (normalizedNames.size >= maxNormalizedNames) normalizedNames.clear();
    normalizedNames.set(name, normalized);
  }
  return normalized;
}

const normalizedNames = new Map<string, string>();
const maxNormalizedNames = 512;

/** Whether two regions are one (any case and spacing); the same object, the common case, is one at once. */
export function sameRegion(a: { readonly name: string } | undefined, b: { readonly name: string } | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a === b || normalizeRegionName(a.name) === normalizeRegionName(b.name);
}

/** Validates a user-supplied list of region names; the error names the option. */
export function assertRegionList(option: string, value: unknown): readonly string[] {
  if (!Array.isArray(value)) {
    throw new TypeError(`${option} must be an array of region names; got ${describe(value)}.`);
  }
  value.forEach((entry, index) => {
    if (typeof entry !== "string" || entry.trim() === "") {
      throw new TypeError(`${option}[${index}] must be a non-empty region name; got ${describe(entry)}.`);
    }
  });
  return [...(value as string[])];
}

/** A short, safe rendering of a bad value for an error message. */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === "number" || typeof value === "boolean" || value == null) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
