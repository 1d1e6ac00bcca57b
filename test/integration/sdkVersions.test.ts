import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
// The last @azure/cosmos below the supported floor (4.6.0), and the floor itself (4.7.0), installed beside the pinned 4.10.1 (package.json's
// devDependencies alias them), each a CosmosClient of its own version.
import { CosmosClient as CosmosClientBelowFloor } from "cosmos-sdk-below-floor";
import { CosmosClient as CosmosClientAtFloor } from "cosmos-sdk-floor";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { minimumSdkVersion } from "../../src/cosmos/sdkVersion.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { scoped, settledTag, tagged, taggedClientOptions } from "../support/taggedRequests.js";
import { plainAndHedged } from "../support/sideBySide.js";
import type { Side } from "../support/sideBySide.js";
import { captureAzureLogs } from "../support/logCapture.js";

/**
 * The peer range admits `@azure/cosmos` from {@link minimumSdkVersion}; an
 * older SDK that sends through a hedging client anyway gets plain's
 * behaviour, request for request. Each side by side on the real client of
 * that version.
 */

const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i}`, value: i }));
const preferredLocations = ["West US", "East US", "North Europe"];
let tagCounter = 0;
const newTag = (label: string): string => `sv${++tagCounter}-${label}~`;

/** Reads item-1 `times` times, one after another: how long each took, its hedging detection record, and how its race ended. */
async function readsOf(
  container: Container,
  times: number,
  options: { excludedLocations?: string[] } = {},
): Promise<Array<{ ms: number; detection: unknown; id: unknown; terminalState: string | undefined; thresholdMs: number | undefined }>> {
  const reads = [];
  for (let read = 0; read < times; read++) {
    const start = performance.now();
    const response = await container.item("item-1", "pk-1").read(options);
    const record = getHedgeDiagnostics(response.headers);
    reads.push({ ms: performance.now() - start, detection: getHedgingDetection(response), id: response.resource?.id, terminalState: record?.terminalState, thresholdMs: record?.thresholdMs });
  }
  return reads;
}

/** The SDK versions a side's requests named in their user agent, as the emulator received them. */
const versionsOf = (fixtureRequests: ReturnType<typeof tagged>): string[] => [
  ...new Set(fixtureRequests.map((request) => request.headers["user-agent"]?.match(/azure-cosmos-js\/(\S+)/)?.[1] ?? "none")),
];

describe("@azure/cosmos versions at and below the supported floor, plain beside hedged (integration)", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items });

  it(`below the floor (4.6.0): a slow region is not hedged, and every request is the one plain sends`, async function () {
    const logs = captureAzureLogs("warning");
    let pair: [Side, Side];
    try {
      pair = await plainAndHedged(fixture, {
        newTag,
        preferredLocations,
        hedging: { crossRegion: { threshold: 100 }, excludedRegions: ["North Europe"] },
        sdk: CosmosClientBelowFloor as unknown as typeof CosmosClient,
        warmUp: (container) => container.item("item-0", "pk-0").read(),
      });
    } finally {
      logs.restore();
    }
    const [plain, hedged] = pair;
    assert.deepEqual(versionsOf(tagged(fixture.emulator, hedged.tag)), ["4.6.0"], "the client of the aliased version");
    assert.ok(
      logs.packageLines().some((line) => line.includes(`@azure/cosmos 4.6.0 is older than ${minimumSdkVersion}`)),
      "one warning names the version and the floor",
    );
    fixture.emulator.resetCounters();
    const runs: Record<string, Awaited<ReturnType<typeof readsOf>>> = {};
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
      runs[side.label] = await readsOf(side.container, 3);
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    const wire = (side: Side) => tagged(fixture.emulator, side.tag).map((request) => `${request.kind} ${request.region} ${request.status}`);
    assert.deepEqual(wire(hedged), wire(plain), "the same requests to the same regions, answered alike");
    assert.equal(wire(plain).filter((line) => line.startsWith("pointRead West US")).length, 3, "every read went to the slow region");
    for (const read of runs["hedged"]!) {
      assert.equal(read.id, "item-1");
      assert.ok(read.ms >= 400, `a read of ${Math.round(read.ms)} ms: not hedged`);
      assert.equal(read.detection, undefined, "no record of this package's on the response");
    }
    const ours = tagged(fixture.emulator, hedged.tag).flatMap((request) => Object.keys(request.headers).filter((name) => name.startsWith("x-cosmos-hedging")));
    assert.deepEqual(ours, [], "no header of this package's on the wire");
    assert.equal(hedged.diagnostics.length, 0, "no diagnostics");
  });

  it(`at the floor (${minimumSdkVersion}): a slow region's reads are hedged, every hedge outside the SDK's excludedLocations`, async function () {
    const [plain, hedged] = await plainAndHedged(fixture, {
      newTag,
      preferredLocations,
      hedging: { crossRegion: { threshold: 100 } },
      sdk: CosmosClientAtFloor as unknown as typeof CosmosClient,
      warmUp: (container) => container.item("item-0", "pk-0").read(),
    });
    assert.deepEqual(versionsOf(tagged(fixture.emulator, hedged.tag)), [minimumSdkVersion], "the client of the aliased version");
    fixture.emulator.resetCounters();
    const runs: Record<string, Awaited<ReturnType<typeof readsOf>>> = {};
    for (const side of [plain, hedged]) {
      fixture.emulator.region("West US").addFault(scoped({ delayMs: 600 }, side.tag));
      runs[side.label] = await readsOf(side.container, 3, { excludedLocations: ["East US"] });
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    // A pause of the loaded machine lengthens a read past 400 ms though its hedge won: each read's race is judged by its
    // outcome, the 100 ms threshold by the median of the three reads, which one pause does not move.
    for (const [index, read] of runs["hedged"]!.entries()) {
      assert.equal(read.id, runs["plain"]![index]!.id, "the document plain read");
      assert.equal(read.terminalState, "hedgeWon", `a hedged read of ${Math.round(read.ms)} ms, plain's ${Math.round(runs["plain"]![index]!.ms)} ms`);
      assert.equal(read.thresholdMs, 100, "each read's race hedged at the 100 ms threshold, which no pause moves");
    }
    const medianMs = runs["hedged"]!.map((read) => read.ms).sort((a, b) => a - b)[1]!;
    assert.ok(medianMs < 400, `hedged reads of ${runs["hedged"]!.map((read) => Math.round(read.ms)).join(", ")} ms, plain's ${runs["plain"]!.map((read) => Math.round(read.ms)).join(", ")} ms`);
    const regionsOf = (side: Side) => tagged(fixture.emulator, side.tag, ["pointRead"]).map((request) => request.region);
    assert.ok(!regionsOf(hedged).includes("East US") && !regionsOf(plain).includes("East US"), "nothing to the excluded region");
    assert.equal(regionsOf(hedged).filter((region) => region === "North Europe").length, 3, "each read hedged to North Europe");
    assert.equal(regionsOf(hedged).filter((region) => region === "West US").length, 3, "each read's primary where the SDK sent it");
  });

  it(`at the floor (${minimumSdkVersion}): West US answers 503 to every page after the first, and both clients page a query to its end`, async function () {
    const [plain, hedged] = await plainAndHedged(fixture, {
      newTag,
      preferredLocations,
      hedging: { crossRegion: { threshold: 100 } },
      sdk: CosmosClientAtFloor as unknown as typeof CosmosClient,
      warmUp: (container) => container.items.query("SELECT * FROM c", { maxItemCount: 2 }).fetchAll(),
    });
    const runs: Record<string, { ids: string[]; error?: unknown }> = {};
    for (const side of [plain, hedged]) {
      const iterator = side.container.items.query<{ id: string }>("SELECT * FROM c", { maxItemCount: 2 });
      const ids: string[] = [];
      try {
        while (iterator.hasMoreResults()) {
          const page = await iterator.fetchNext();
          ids.push(...page.resources.map((row) => row.id));
          if (ids.length <= 2) fixture.emulator.region("West US").addFault(scoped({ status: 503 }, side.tag, ["query"]));
        }
        runs[side.label] = { ids: ids.sort() };
      } catch (error) {
        runs[side.label] = { ids: ids.sort(), error };
      }
      assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
    }
    assert.equal(runs["plain"]!.error, undefined, `plain failed: ${String(runs["plain"]!.error)}`);
    assert.deepEqual(runs["plain"]!.ids, items.map((item) => item.id).sort());
    assert.equal(runs["hedged"]!.error, undefined, `hedged failed where plain completed: ${String(runs["hedged"]!.error)}`);
    assert.deepEqual(runs["hedged"]!.ids, runs["plain"]!.ids);
  });

  it("below the floor, a first call with the caller's own user agent does not turn the check off: the next slow read is plain's", async function () {
    const logs = captureAzureLogs("warning");
    try {
      const [plain, hedged] = await plainAndHedged(fixture, {
        newTag,
        preferredLocations,
        hedging: { crossRegion: { threshold: 100 } },
        sdk: CosmosClientBelowFloor as unknown as typeof CosmosClient,
        warmUp: async (container) => {
          const own = "myapp/1.0";
          // Per-request initialHeaders replace the SDK's user agent on this one call.
          await container.database.client.getDatabaseAccount({ initialHeaders: { "User-Agent": own, "x-ms-useragent": own } });
          return container.item("item-0", "pk-0").read();
        },
      });
      fixture.emulator.resetCounters();
      const times: Record<string, number> = {};
      for (const side of [plain, hedged]) {
        fixture.emulator.region("West US").addFault(scoped({ delayMs: 400 }, side.tag));
        times[side.label] = (await readsOf(side.container, 1))[0]!.ms;
        assert.ok(await settledTag(fixture.emulator, side.tag, 6_000), `${side.label}: every request ended`);
      }
      const wire = (side: Side) => tagged(fixture.emulator, side.tag).map((request) => `${request.kind} ${request.region} ${request.status}`);
      assert.deepEqual(wire(hedged), wire(plain), "the same requests to the same regions");
      assert.ok(times["hedged"]! >= 400, `hedged ${Math.round(times["hedged"]!)} ms: not hedged`);
    } finally {
      logs.restore();
    }
  });

  it("one createHedgingHttpClient shared by a 4.6.0 and a 4.10.1 client: each is treated as its own version asks, in either order", async function () {
    const { emulator } = fixture;
    for (const order of [["4.10.1", "4.6.0"], ["4.6.0", "4.10.1"]] as const) {
      const shared = createHedgingHttpClient({ crossRegion: { threshold: 100 }, preferredRegions: preferredLocations, accountEndpoint: emulator.endpoint });
      const clients: Record<string, { tag: string; container: Container }> = {};
      for (const version of order) {
        const tag = newTag(`shared-${version}`);
        const Client = (version === "4.6.0" ? CosmosClientBelowFloor : CosmosClient) as unknown as typeof CosmosClient;
        const client = fixture.adopt(new Client({ ...taggedClientOptions(emulator, tag, preferredLocations), httpClient: shared }));
        const container = client.database("db").container("items");
        await container.item("item-0", "pk-0").read();
        assert.ok(await settledTag(emulator, tag, 6_000));
        clients[version] = { tag, container };
      }
      const runs: Record<string, Awaited<ReturnType<typeof readsOf>>> = {};
      for (const version of order) {
        const { tag, container } = clients[version]!;
        emulator.region("West US").addFault(scoped({ delayMs: 600 }, tag));
        runs[version] = await readsOf(container, 3);
        assert.ok(await settledTag(emulator, tag, 6_000));
      }
      const times = (version: string): string => runs[version]!.map((read) => Math.round(read.ms)).join(", ");
      for (const read of runs["4.6.0"]!) assert.ok(read.ms >= 600, `${order.join(" then ")}: the 4.6.0 client's slow reads took ${times("4.6.0")} ms, as plain's`);
      // A pause of the loaded machine lengthens a read past 400 ms though its hedge won (CI's stalled one 1.3 s): each
      // read's race is judged by its outcome, the 100 ms threshold by the median of three reads, which one pause does not move.
      for (const read of runs["4.10.1"]!) {
        assert.equal(read.terminalState, "hedgeWon", `${order.join(" then ")}: the 4.10.1 client's slow reads took ${times("4.10.1")} ms, hedged`);
        assert.equal(read.thresholdMs, 100, `${order.join(" then ")}: each 4.10.1 read hedged at the 100 ms threshold`);
      }
      const medianMs = runs["4.10.1"]!.map((read) => read.ms).sort((a, b) => a - b)[1]!;
      assert.ok(medianMs < 400, `${order.join(" then ")}: the 4.10.1 client's slow reads took ${times("4.10.1")} ms, hedged`);
    }
  });
});
