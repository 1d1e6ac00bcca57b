import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { logger } from "../log.js";

/**
 * The oldest `@azure/cosmos` a hedging client hedges for: the first version
 * the differential suite passes whole beside plain. 4.6.0 brought the
 * per-request `excludedLocations` (older versions ignore them, so this
 * package had to steer by itself, and a refusal met in the region it
 * steered to was booked by the SDK against the region the SDK had
 * addressed); 4.7.0 cuts a read at 2 s with the partition-level circuit
 * breaker on, as this package's threshold check and breaker bookkeeping
 * expect (4.6.0 does not). Kept in step with the `peerDependencies` range.
 */
export const minimumSdkVersion = "4.7.0";

const [floorMajor, floorMinor, floorPatch] = minimumSdkVersion.split(".").map(Number) as [number, number, number];

/** The SDK's own token in every request's user agent: `azure-cosmos-js/4.10.1` (a `userAgentSuffix` comes after it). */
const sdkToken = /(?:^|\s)azure-cosmos-js\/(\d+)\.(\d+)\.(\d+)/;

/** The `@azure/cosmos` version a user agent names, as `major.minor.patch`; `undefined` when it names none. */
export function sdkVersionIn(userAgent: string): string | undefined {
  const match = sdkToken.exec(userAgent);
  return match === null ? undefined : `${match[1]}.${match[2]}.${match[3]}`;
}

/** Whether a `major.minor.patch` version is older than {@link minimumSdkVersion}. */
export function isBelowFloor(version: string): boolean {
  const [major, minor, patch] = version.split(".").map(Number) as [number, number, number];
  if (major !== floorMajor) return major < floorMajor;
  if (minor !== floorMinor) return minor < floorMinor;
  return patch < floorPatch;
}

const warnedVersions = new Set<string>();

/**
 * Whether a hedging client stands aside for the `@azure/cosmos` that sends
 * through it, decided once, by the first request or operation it sees with
 * a user agent: when that one names an SDK below {@link minimumSdkVersion},
 * every request from then on goes out as the SDK built it, where it sent
 * it, with nothing of this package's (no hedge, no steering, no record),
 * and one warning says so. A client of another Azure SDK (no such token)
 * never stands aside. Read {@link SdkVersionGate.aside} first: once
 * decided, the check is that field.
 */
export class SdkVersionGate {
  /** Whether the client stands aside; `undefined` until decided. */
  aside: boolean | undefined = undefined;

  /** Decides by the first user agent seen (a request's, an operation's); one without leaves it undecided. @returns whether to stand aside now. */
  decide(userAgent: unknown): boolean {
    if (this.aside !== undefined) return this.aside;
    // Without a user agent nothing is known yet: the next request with one decides.
    if (typeof userAgent !== "string") return false;
    const version = sdkVersionIn(userAgent);
    this.aside = version !== undefined && isBelowFloor(version);
    // Once a process and version: each client, and each policy added by hand, has a gate of its own.
    if (this.aside && !warnedVersions.has(version as string)) {
      warnedVersions.add(version as string);
      logger.warning(
        `@azure/cosmos ${version} is older than ${minimumSdkVersion}, the oldest version cosmos-hedging hedges for: ` +
          "every request goes out as the SDK built it, with no hedge, steering or exclusion of this package's. Upgrade @azure/cosmos to hedge.",
      );
    }
    return this.aside;
  }
}

/** The user agent of an `@azure/cosmos` request context's headers (a plain object, the SDK's own header names). */
export function userAgentOfContext(headers: Record<string, unknown>): unknown {
  return headers["User-Agent"] ?? headers["x-ms-useragent"];
}

/** The user agent of a request, as `@azure/cosmos` sets it (both of its headers carry it). */
export function userAgentOfRequest(request: PipelineRequest): unknown {
  return request.headers.get("user-agent") ?? request.headers.get("x-ms-useragent");
}
