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

/**
 * The versions warned about, shared by every copy of this package in the
 * process (an application may load both its ESM and its CommonJS build).
 */
const warnedVersions: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for("cosmos-hedging: SDK versions warned about")] ??= new Set<string>()) as Set<string>;

/** What no user agent is: the gate's remembered agent before any request. */
const noAgent = Symbol("no user agent yet");

/**
 * Whether a hedging client (or a policy added by hand) stands aside for
 * the `@azure/cosmos` that sends a request: below {@link minimumSdkVersion},
 * the request goes out as the SDK built it, where it sent it, with nothing
 * of this package's (no hedge, no steering, no record), and one warning a
 * process and version says so. Judged by the SDK's token in the request's
 * user agent (`User-Agent`, or `x-ms-useragent` when a caller's own
 * `User-Agent` hides it), so that one client shared by SDKs of two versions
 * treats each as its version asks; a request whose user agents name no SDK
 * (the caller replaced both) gets the verdict of the last that did, and
 * hedging until one has. A client sends one user agent string on every
 * request, so the gate keeps the last one judged: the check is then one
 * comparison.
 */
export class SdkVersionGate {
  /** The user agent judged last (`User-Agent`, or the context's), compared by identity first. */
  lastAgent: unknown = noAgent;
  /** The verdict of the last request that named the SDK: what {@link SdkVersionGate.lastAgent} got, and what a request naming none gets. */
  aside = false;
  /** Whether any request named `@azure/cosmos`. */
  sawCosmos = false;

  /** Judges a request by its user agents (see the class); remembers `agent` with the verdict. @returns whether it stands aside. */
  judge(agent: unknown, custom: unknown): boolean {
    const version = versionIn(agent) ?? versionIn(custom);
    if (version !== undefined) {
      this.sawCosmos = true;
      this.aside = isBelowFloor(version);
      if (this.aside && !warnedVersions.has(version)) {
        warnedVersions.add(version);
        logger.warning(
          `@azure/cosmos ${version} is older than ${minimumSdkVersion}, the oldest version cosmos-hedging hedges for: ` +
            "every request goes out as the SDK built it, with no hedge, steering or exclusion of this package's. Upgrade @azure/cosmos to hedge.",
        );
      }
    }
    this.lastAgent = agent;
    return this.aside;
  }
}

function versionIn(agent: unknown): string | undefined {
  return typeof agent === "string" && agent.includes("azure-cosmos-js/") ? sdkVersionIn(agent) : undefined;
}

/** Whether `gate` stands aside for an `@azure/cosmos` request context's attempt or operation (its headers: a plain object, the SDK's own names). */
export function standsAsideForContext(gate: SdkVersionGate, headers: Record<string, unknown>): boolean {
  const agent = headers["User-Agent"];
  return agent === gate.lastAgent ? gate.aside : gate.judge(agent, headers["x-ms-useragent"]);
}

/** Whether `gate` stands aside for a request (both of the SDK's user agent headers carry its token). */
export function standsAsideFor(gate: SdkVersionGate, request: PipelineRequest): boolean {
  const agent = request.headers.get("user-agent");
  return agent === gate.lastAgent ? gate.aside : gate.judge(agent, request.headers.get("x-ms-useragent"));
}
