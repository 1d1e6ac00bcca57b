import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Master-key authorization as the Cosmos DB service checks it, written from
 * the REST API's "Access control" reference rather than from the library's
 * signer, so that a mistake in the signer shows up as a 401 here:
 *
 *   authorization = urlencode("type=master&ver=1.0&sig=" + base64(HMAC-SHA256(key,
 *     lower(verb) + "\n" + lower(resourceType) + "\n" + resourceLink + "\n" + lower(date) + "\n" + "\n")))
 *
 * where `date` is the request's `x-ms-date` (or `date`) header, which must lie
 * within the allowed clock skew of the service's own clock.
 */

/** How far a request's date may be from the service's clock by default; the service allows 15 minutes. */
export const allowedClockSkewMs = 15 * 60_000;

/** Why a request was refused, or `"valid"`. */
export type AuthorizationVerdict = "valid" | "missing" | "malformed" | "notMasterKey" | "missingDate" | "staleDate" | "badSignature";

/** The resource a request addresses, as the signature covers it. */
export interface SignedResource {
  readonly resourceType: string;
  readonly resourceLink: string;
}

/**
 * The resource type and link of a request path. Resources alternate
 * type/id segments (`dbs/{db}/colls/{coll}/docs/{doc}`): a path of even
 * length names one resource (type: the second-to-last segment, link: the
 * whole path); one of odd length names a feed (type: the last segment, link:
 * its parent). Ids are compared decoded. Offers are addressed by resource id,
 * which the service compares in lower case.
 */
export function resourceOfPath(path: string): SignedResource {
  const pathOnly = path.split(/[?#]/, 1)[0] ?? "";
  const segments = pathOnly
    .split("/")
    .filter((segment) => segment !== "")
    .map((segment) => decodeURIComponent(segment));
  if (segments.length === 0) return { resourceType: "", resourceLink: "" };
  const even = segments.length % 2 === 0;
  const resourceType = (even ? segments[segments.length - 2] : segments[segments.length - 1]) ?? "";
  const link = (even ? segments : segments.slice(0, -1)).join("/");
  return { resourceType, resourceLink: resourceType.toLowerCase() === "offers" ? link.toLowerCase() : link };
}

function signature(key: Buffer, verb: string, resource: SignedResource, date: string): string {
  const text = [verb.toLowerCase(), resource.resourceType.toLowerCase(), resource.resourceLink, date.toLowerCase(), "", ""].join("\n");
  return createHmac("sha256", key).update(text, "utf8").digest("base64");
}

/** The headers of a request signed with `key` (base64) at `date`: for tests that talk to the emulator without `@azure/cosmos`. */
export function signedHeaders(key: string, verb: string, path: string, date: Date = new Date()): { authorization: string; "x-ms-date": string } {
  const dateText = date.toUTCString();
  const sig = signature(Buffer.from(key, "base64"), verb, resourceOfPath(path), dateText);
  return { authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`), "x-ms-date": dateText };
}

/**
 * Checks one request's master-key signature against the account key, at the
 * service's time `now` (ms since the epoch), allowing `skewMs` between the
 * request's date and `now`; or its AAD token against `aadToken`, when the
 * account accepts one.
 */
export function verifyAuthorization(
  key: Buffer,
  request: { method: string; path: string; header(name: string): string | undefined },
  now: number,
  skewMs: number = allowedClockSkewMs,
  aadToken?: string,
): AuthorizationVerdict {
  const header = request.header("authorization");
  if (header === undefined || header === "") return "missing";
  let decoded: string;
  try {
    decoded = decodeURIComponent(header);
  } catch {
    return "malformed";
  }
  const fields = new Map<string, string>();
  for (const part of decoded.split("&")) {
    const at = part.indexOf("=");
    if (at <= 0) return "malformed";
    fields.set(part.slice(0, at), part.slice(at + 1));
  }
  // An Entra ID (AAD) bearer token as @azure/cosmos sends it: the account accepts the one token it was given.
  if (fields.get("type") === "aad" && aadToken !== undefined) return fields.get("sig") === aadToken ? "valid" : "badSignature";
  if (fields.get("type") !== "master") return "notMasterKey";
  const sig = fields.get("sig");
  if (fields.get("ver") !== "1.0" || sig === undefined || sig === "") return "malformed";
  const date = request.header("x-ms-date") ?? request.header("date");
  if (date === undefined || date === "") return "missingDate";
  const sentAt = Date.parse(date);
  if (!Number.isFinite(sentAt) || Math.abs(now - sentAt) > skewMs) return "staleDate";
  const expected = Buffer.from(signature(key, request.method, resourceOfPath(request.path), date), "base64");
  const given = Buffer.from(sig, "base64");
  return given.length === expected.length && timingSafeEqual(given, expected) ? "valid" : "badSignature";
}
