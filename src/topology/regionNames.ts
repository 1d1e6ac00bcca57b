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

const keys = new WeakMap<object, string>();

/**
 * A region's normalized name (see {@link normalizeRegionName}), computed
 * once per region object: the same few regions are compared on every request.
 */
export function regionKey(region: { readonly name: string }): string {
  let key = keys.get(region);
  if (key === undefined) {
    key = normalizeRegionName(region.name);
    keys.set(region, key);
  }
  return key;
}

/** Whether two regions are one (any case and spacing); the same object, the common case, is one at once. */
export function sameRegion(a: { readonly name: string } | undefined, b: { readonly name: string } | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a === b || regionKey(a) === regionKey(b);
}
