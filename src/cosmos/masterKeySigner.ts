import { createHmac } from "node:crypto";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "./headers.js";
import { pathSegments } from "./operationKind.js";

/**
 * Signs one arm of a race before it is sent. Runs on every arm, after the
 * arm has been re-pointed at its region and before it passes through the
 * rest of the pipeline.
 */
export type RequestSigner = (request: PipelineRequest) => void | Promise<void>;

/**
 * The resource type and resource link that a Cosmos DB master-key signature
 * covers: for `/dbs/a/colls/b/docs/c` the type `docs` and the link
 * `dbs/a/colls/b/docs/c`; for a feed such as `/dbs/a/colls/b/docs` the type
 * `docs` and the parent link `dbs/a/colls/b`; for the account root, both empty.
 * An offer (`/offers/{rid}`) is addressed by its resource id alone, which
 * `@azure/cosmos` signs in lower case.
 */
export function signedResource(url: string): { resourceType: string; resourceLink: string } {
  const segments = pathSegments(url);
  if (segments.length === 0) return { resourceType: "", resourceLink: "" };
  if (segments.length === 2 && segments[0] === "offers") {
    return { resourceType: "offers", resourceLink: (segments[1] ?? "").toLowerCase() };
  }
  if (segments.length % 2 === 0) {
    return { resourceType: segments[segments.length - 2] ?? "", resourceLink: segments.join("/") };
  }
  return { resourceType: segments[segments.length - 1] ?? "", resourceLink: segments.slice(0, -1).join("/") };
}

/** The `authorization` header value of a master-key signed request. */
export function masterKeyAuthorization(key: Buffer, method: string, url: string, date: string): string {
  const { resourceType, resourceLink } = signedResource(url);
  const text = `${method.toLowerCase()}\n${resourceType.toLowerCase()}\n${resourceLink}\n${date.toLowerCase()}\n\n`;
  const signature = createHmac("sha256", key).update(text).digest("base64");
  return encodeURIComponent(`type=master&ver=1.0&sig=${signature}`);
}

const base64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * A signer that re-signs every arm with the account's master key and a fresh
 * `x-ms-date`, exactly as `@azure/cosmos` signs a request. Arms whose
 * `authorization` header is not a master-key signature of this key (an AAD
 * token, a resource token, or another account's key) are left as they are: those are scoped to the account, not
 * to a region, so they stay valid on every regional endpoint. A request
 * without an `authorization` header is signed, so the signer also serves as
 * the sign step of a core-client pipeline talking to Cosmos DB.
 * @param key - the account's primary or secondary key (base64).
 */
export function masterKeySigner(key: string): RequestSigner {
  if (typeof key !== "string" || key.trim() === "" || !base64.test(key.trim())) {
    // The key itself is a secret: the message never contains it.
    throw new TypeError("masterKeySigner key must be a non-empty base64 account key.");
  }
  const secret = Buffer.from(key.trim(), "base64");
  return (request) => {
    const current = request.headers.get(CosmosHeaders.authorization);
    if (current !== undefined) {
      if (!isMasterKeySignature(current)) return;
      // Signed with another key, so for another account: re-signed with this one it would fail with 401.
      const signedAt = request.headers.get(CosmosHeaders.date);
      if (signedAt === undefined || masterKeyAuthorization(secret, request.method, request.url, signedAt) !== current) return;
    }
    const date = new Date().toUTCString();
    request.headers.set(CosmosHeaders.date, date);
    request.headers.set(CosmosHeaders.authorization, masterKeyAuthorization(secret, request.method, request.url, date));
  };
}

function isMasterKeySignature(header: string): boolean {
  try {
    return decodeURIComponent(header).startsWith("type=master&");
  } catch {
    return false;
  }
}
