import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { EmulatorFixture } from "./emulatorFixture.js";
import { settledTag, taggedClientOptions } from "./taggedRequests.js";

/** One client of a side-by-side run, plain or hedged, and what it observed. */
export interface Side {
  readonly label: "plain" | "hedged";
  /** Its user-agent tag (see `taggedClientOptions`). */
  readonly tag: string;
  readonly container: Container;
  /** The hedging client's diagnostics records, in order; none for plain. */
  readonly diagnostics: HedgeDiagnostics[];
  /** When each diagnostics record arrived (`performance.now()`). */
  readonly times: number[];
}

/** How {@link plainAndHedged} builds its two clients. */
export interface SideBySideOptions {
  /** A new tag a client, from the test file's own counter. */
  readonly newTag: (label: "plain" | "hedged") => string;
  readonly preferredLocations: readonly string[];
  readonly hedging?: HedgingOptions;
  readonly connectionPolicy?: CosmosClientOptions["connectionPolicy"];
  readonly extra?: Partial<CosmosClientOptions>;
  /** Warms a client's caches (account, container, partition key ranges) before the test's faults. */
  readonly warmUp: (container: Container) => Promise<unknown>;
  /** The `CosmosClient` of another `@azure/cosmos` version (see test/integration/sdkVersions.test.ts); default the pinned one. */
  readonly sdk?: typeof CosmosClient;
}

/**
 * A plain `CosmosClient` and a `withHedging` one of the same options on the
 * fixture's emulator, `db`/`items`, each tagged, warmed, its warm-up's
 * requests ended and its records cleared: the two sides of a run that
 * compares one operation under one fault, plain beside hedged.
 */
export async function plainAndHedged(fixture: EmulatorFixture, options: SideBySideOptions): Promise<[Side, Side]> {
  const sides: Side[] = [];
  for (const label of ["plain", "hedged"] as const) {
    const tag = options.newTag(label);
    const diagnostics: HedgeDiagnostics[] = [];
    const times: number[] = [];
    const base = taggedClientOptions(fixture.emulator, tag, options.preferredLocations, options.connectionPolicy, options.extra);
    const onDiagnostics = (record: HedgeDiagnostics): void => void (diagnostics.push(record), times.push(performance.now()));
    const Client = options.sdk ?? CosmosClient;
    const client = fixture.adopt(new Client(label === "hedged" ? withHedging(base, { ...options.hedging, onDiagnostics }) : base));
    const container = client.database("db").container("items");
    await options.warmUp(container);
    await settledTag(fixture.emulator, tag, 6_000);
    diagnostics.length = 0;
    times.length = 0;
    sides.push({ label, tag, container, diagnostics, times });
  }
  return [sides[0]!, sides[1]!];
}
