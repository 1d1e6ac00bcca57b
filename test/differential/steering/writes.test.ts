import assert from "node:assert/strict";
import type { RequestOptions } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import type { FaultRule } from "../../emulator/index.js";
import type { EmulatorOptions } from "../../emulator/index.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { items, regionNames, requestTimeout, runWith, warmUp } from "./support.js";
import type { Operation, Run } from "./support.js";

interface WriteCase {
  /**
   * Refused requests the hedging side may send beyond plain's: after a re-point the SDK marks the region it
   * addressed unavailable, not the one that refused, so it reaches its fallback one refusal later (never applied).
   */
  readonly refusedMore?: number;
  readonly name: string;
  readonly plain: RequestOptions;
  readonly hedged: RequestHedgingOptions;
  readonly faults: Record<string, FaultRule | FaultRule[]>;
  readonly kind: "create" | "replace" | "upsert";
  /** Mocha timeout of the case, when the hedged side may take minutes. */
  readonly timeoutMs?: number;
}

let serial = 0;
const writeOf =
  (kind: WriteCase["kind"]): Operation =>
  async (container, options) => {
    if (kind === "create") return { statusCode: (await container.items.create({ id: `w-${serial++}`, pk: "pk-w" }, options)).statusCode };
    if (kind === "upsert") return { statusCode: (await container.items.upsert({ id: `u-${serial++}`, pk: "pk-w" }, options)).statusCode };
    return { statusCode: (await container.item("item-1", "pk-1").replace({ id: "item-1", pk: "pk-1", value: serial++ }, options)).statusCode };
  };

/** "West US x119" for runs of one region, so that a 120-attempt walk fits in a message. */
function compress(run: Run): string {
  const parts: string[] = [];
  let i = 0;
  while (i < run.regions.length) {
    let j = i;
    while (j < run.regions.length && run.regions[j] === run.regions[i]) j++;
    parts.push(j - i > 1 ? `${run.regions[i]} x${j - i}` : run.regions[i]!);
    i = j;
  }
  return `${JSON.stringify(run.outcome)} via [${parts.join(", ")}] (${run.regions.length} attempts)`;
}

function sideBySide(title: string, emulator: EmulatorOptions, cases: WriteCase[]): void {
  describe(title, function () {
    this.timeout(60_000);
    const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true, ...emulator } });
    for (const testCase of cases) {
      it(`${testCase.kind}: ${testCase.name}: the same outcome, the same write attempts as plain`, async function () {
        if (testCase.timeoutMs !== undefined) this.timeout(testCase.timeoutMs);
        const plainSide = await fixture.client({ hedging: false, connectionPolicy: { requestTimeout }, warmUp });
        const plain: Run = await runWith(fixture.emulator, testCase.faults, [testCase.kind], () => writeOf(testCase.kind)(plainSide.container, testCase.plain));
        const hedgedSide = await fixture.client({ hedging: {}, connectionPolicy: { requestTimeout }, warmUp });
        const mine: Run = await runWith(fixture.emulator, testCase.faults, [testCase.kind], () => writeOf(testCase.kind)(hedgedSide.container, hedgingRequestOptions(testCase.hedged)));
        const label = `plain ${compress(plain)}, hedged ${compress(mine)}`;
        if (!(mine.outcome.ok && !plain.outcome.ok)) assert.deepEqual(mine.outcome, plain.outcome, label);
        const extra = testCase.refusedMore ?? 0;
        assert.ok(mine.regions.length <= plain.regions.length + extra, `never more write attempts than plain (+${extra} refused): ${label}`);
        if (extra === 0) assert.deepEqual(mine.regions, plain.regions, label);
        else assert.equal(mine.regions.at(-1), plain.regions.at(-1), `the write lands where plain's does: ${label}`);
      });
    }
  });
}

const hungAcknowledgedLate: FaultRule = { responseDelayMs: 3_000 };

sideBySide("never worse than plain, steering: writes on a multi-write account, re-pointed, side by side with plain", { multipleWriteLocations: true }, [
  { kind: "create", name: "East US excluded, 503 in West US and North Europe", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 503 }, "North Europe": { status: 503 } } },
  { kind: "create", name: "East US excluded, 403/3 in West US and North Europe", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 403, substatus: 3 }, "North Europe": { status: 403, substatus: 3 } }, timeoutMs: 240_000 },
  { kind: "upsert", name: "East US excluded, West US applies and acknowledges late (timeout)", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": hungAcknowledgedLate } },
  { kind: "replace", name: "West US excluded, East US applies and acknowledges late (timeout)", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": hungAcknowledgedLate } },
  { kind: "replace", name: "West US excluded, 503 once in East US", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": { status: 503, count: 1 } } },
  { kind: "create", name: "pinned North Europe, 503 there", plain: { excludedLocations: ["East US", "West US"] }, hedged: { region: "North Europe" }, faults: { "North Europe": { status: 503 } } },
  { kind: "create", name: "East US excluded, a reset in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { connectionReset: true } } },
]);

sideBySide("never worse than plain, steering: writes on a per-partition-failover (single-write) account, side by side with plain", { perPartitionFailover: true }, [
  { kind: "create", name: "West US excluded, 503 in East US (the write region)", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": { status: 503 } } },
  { kind: "create", name: "North Europe excluded, 503 in East US and West US", plain: { excludedLocations: ["North Europe"] }, hedged: { excludedRegions: ["North Europe"] }, faults: { "East US": { status: 503 }, "West US": { status: 503 } } },
  { kind: "create", name: "East US excluded (every write region), 503 in East US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "East US": { status: 503 } } },
  { kind: "upsert", name: "West US excluded, East US applies and acknowledges late (timeout)", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": hungAcknowledgedLate } },
]);
