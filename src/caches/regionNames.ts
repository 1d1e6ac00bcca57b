/**
 * Region names compare without case and spaces, so "West US", "westus" and
 * "WestUS" name one region, as they do in the Azure portal and the other SDKs.
 */
export function normalizeRegionName(name: string): string {
  return name.replace(/\s+/g, "").toLowerCase();
}

/** Whether two regions are one (any case and spacing); the same object, the common case, is one at once. */
export function sameRegion(a: { readonly name: string } | undefined, b: { readonly name: string } | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a === b || normalizeRegionName(a.name) === normalizeRegionName(b.name);
}
