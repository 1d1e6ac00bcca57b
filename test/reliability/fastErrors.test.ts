import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import type { CrossRegionHedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { useEmulator } from "../support/emulatorFixture.js";

/**
 * A region that answers fast with errors (a replica lagging behind writes
 * answers 404/0 for documents that exist; a misconfigured region 401) while
 * the preferred region browns out and then recovers. Hedging may make reads
 * faster; it must never make them fail where plain `@azure/cosmos` would
 * not, during the brown-out or after it.
 */
const items = Array.from({ length: 8 }, (_, i) => ({ id: `item-${i}`, pk: "pk", value: i }));
const brownOutMs = 150;
const readsPerPhase = { brownOut: 40, recovered: 60 };
const concurrency = 8;

type Mode = { name: string; crossRegion?: false | CrossRegionHedgingOptions };
const modes: Mode[] = [
  { name: "plain @azure/cosmos" },
  { name: "fixed 30 ms", crossRegion: { threshold: 30 } },
  { name: "adaptive", crossRegion: { threshold: "adaptive" } },
  { name: "adaptive + Thompson", crossRegion: { threshold: "adaptive", routing: "thompson" } },
];

async function failures(container: Container, reads: number): Promise<number> {
  let failed = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < reads) {
      const item = items[next++ % items.length]!;
      try {
        const { statusCode, resource } = await container.item(item.id, item.pk).read();
        if (statusCode !== 200 || resource?.value !== item.value) failed++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return failed;
}

describe("a region answering fast with errors while the preferred one browns out", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ emulator: { regions: [{ name: "East US" }, { name: "West US" }] }, items });

  for (const [lag, status] of [
    ["404/0, a replica behind the writes", 404],
    ["401, a misconfigured region", 401],
  ] as const) {
    it(`West US answering ${lag}: no mode fails more reads than plain @azure/cosmos, during the brown-out or after it`, async function () {
      const counts: Array<{ mode: string; brownOut: number; recovered: number }> = [];
      for (const mode of modes) {
        fixture.emulator.clearFaults();
        const client = new CosmosClient(
          mode.crossRegion === undefined
            ? { endpoint: fixture.emulator.endpoint, key: fixture.emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: ["East US", "West US"] } }
            : withHedging(
                { endpoint: fixture.emulator.endpoint, key: fixture.emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: ["East US", "West US"] } },
                { crossRegion: mode.crossRegion },
              ),
        );
        try {
          const container = client.database("db").container("items");
          await container.item("item-0", "pk").read();
          fixture.emulator.region("West US").addFault({ operations: ["pointRead"], status });
          const brownOut = fixture.emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: brownOutMs });
          const duringBrownOut = await failures(container, readsPerPhase.brownOut);
          brownOut.remove();
          const afterRecovery = await failures(container, readsPerPhase.recovered);
          counts.push({ mode: mode.name, brownOut: duringBrownOut, recovered: afterRecovery });
        } finally {
          client.dispose();
        }
      }
      const plain = counts[0]!;
      for (const count of counts.slice(1)) {
        assert.ok(count.brownOut <= plain.brownOut, `${count.mode}: ${count.brownOut} failed reads during the brown-out, plain ${plain.brownOut}`);
        assert.ok(count.recovered <= plain.recovered, `${count.mode}: ${count.recovered} failed reads after recovery, plain ${plain.recovered}`);
      }
      assert.deepEqual(
        counts.map((count) => [count.mode, count.brownOut, count.recovered]),
        modes.map((mode) => [mode.name, 0, 0]),
        "failed reads per mode: [mode, during the brown-out, after recovery]",
      );
    });
  }
});
