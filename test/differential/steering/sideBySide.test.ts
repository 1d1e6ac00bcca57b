import assert from "node:assert/strict";
import type { Container, RequestOptions } from "@azure/cosmos";
import { ChangeFeedStartFrom } from "@azure/cosmos";
import { hedgingRequestOptions, withRequestHedgingOptions } from "../../../src/client/requestOptions.js";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import type { FaultRule } from "../../emulator/index.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { items, pointRead, regionNames, requestTimeout, runWith, warmUp } from "./support.js";
import type { Operation, Run } from "./support.js";

/** Unhedged side-by-side cases: plain given `plain`, the hedging client given `hedged` (with hedging: false), the same faults. */
interface Case {
  /**
   * Refused requests the hedging side may send beyond plain's: after a re-point the SDK marks the region it
   * addressed unavailable, not the one that refused, so it reaches its fallback one refusal later (never applied).
   */
  readonly refusedMore?: number;
  readonly name: string;
  readonly plain: RequestOptions;
  readonly hedged: RequestHedgingOptions;
  /** The SDK's own options the hedging side also passes. */
  readonly sdk?: RequestOptions;
  readonly faults: Record<string, FaultRule | FaultRule[]>;
  readonly kinds?: OperationKind[];
  readonly operation?: Operation;
  /** Hedged may end better: plain fails. */
  readonly betterAllowed?: boolean;
  /** The hedged side passes its choices through withRequestHedgingOptions (a change feed takes no request options). */
  readonly ambient?: boolean;
  readonly timeoutMs?: number;
}

const fetchPages =
  (query: string, partitionKey?: string): Operation =>
  async (container, options) => {
    const iterator = container.items.query(query, { ...options, maxItemCount: 1, ...(partitionKey !== undefined ? { partitionKey } : {}) });
    const pages: string[][] = [];
    while (iterator.hasMoreResults()) {
      const { resources } = await iterator.fetchNext();
      if (resources.length > 0) pages.push(resources.map((item: { id: string }) => item.id));
    }
    return pages;
  };

const readAll: Operation = async (container, options) => {
  const { resources } = await container.items.readAll({ ...options, maxItemCount: 2 }).fetchAll();
  return resources.map((item) => item.id).sort();
};

const changeFeed: Operation = async (container: Container, options) => {
  const iterator = container.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Beginning("pk-1"),
    maxItemCount: 1,
    ...(options.excludedLocations !== undefined ? { excludedLocations: options.excludedLocations } : {}),
  });
  const ids: string[] = [];
  for (let i = 0; i < 6 && iterator.hasMoreResults; i++) {
    const response = await iterator.readNext();
    if (response.statusCode === 304) break;
    ids.push(...response.result.map((item: { id: string }) => item.id));
  }
  return ids;
};

const cases: Case[] = [
  { name: "East US excluded, 403/1008 in West US and North Europe (every applicable region refuses)", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 403, substatus: 1008 }, "North Europe": { status: 403, substatus: 1008 } }, timeoutMs: 240_000 },
  { name: "SDK excludedLocations North Europe plus ours East US, 503 in West US", plain: { excludedLocations: ["East US", "North Europe"] }, sdk: { excludedLocations: ["North Europe"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 503 } } },
  { name: "SDK excludedLocations West US plus ours East US, 503 in North Europe", plain: { excludedLocations: ["East US", "West US"] }, sdk: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "North Europe": { status: 503 } } },
  { name: "SDK excludedLocations East US plus ours West US, hung once in North Europe", plain: { excludedLocations: ["East US", "West US"] }, sdk: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "North Europe": { delayMs: 3_000, count: 1 } } },
  { name: "East US and West US excluded, hung once in North Europe", plain: { excludedLocations: ["East US", "West US"] }, hedged: { excludedRegions: ["East US", "West US"] }, faults: { "North Europe": { delayMs: 3_000, count: 1 } } },
  { name: "every region excluded, 503 in East US", plain: { excludedLocations: [...regionNames] }, hedged: { excludedRegions: [...regionNames] }, faults: { "East US": { status: 503 } } },
  { name: "East US excluded, 404/1002 once in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 404, substatus: 1002, count: 1 } } },
  { name: "East US excluded, 404/1002 always in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 404, substatus: 1002 } } },
  { name: "West US excluded, 404/1002 always in East US", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": { status: 404, substatus: 1002 } } },
  { name: "East US excluded, 410/1002 once in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 410, substatus: 1002, count: 1 } } },
  { name: "East US excluded, 429 three times in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 429, headers: { "x-ms-retry-after-ms": "10" }, count: 3 } } },
  { name: "East US excluded, 429 then 503 in West US", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": [{ status: 429, headers: { "x-ms-retry-after-ms": "10" }, count: 1 }, { status: 503 }] } },
  { name: "pinned West US, 503 there", plain: { excludedLocations: ["East US", "North Europe"] }, hedged: { region: "West US" }, faults: { "West US": { status: 503 } } },
  { name: "pinned North Europe, 503 once there", plain: { excludedLocations: ["East US", "West US"] }, hedged: { region: "North Europe" }, faults: { "North Europe": { status: 503, count: 1 } } },
  { name: "pinned North Europe, hung once there", plain: { excludedLocations: ["East US", "West US"] }, hedged: { region: "North Europe" }, faults: { "North Europe": { delayMs: 3_000, count: 1 } } },
  { name: "a single-partition query page by page, East US excluded, West US failing every other page with 503", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 503, every: 2 } }, kinds: ["query"], operation: fetchPages("SELECT c.id FROM c", "pk-1") },
  { name: "a cross-partition query page by page, West US excluded, East US hung every third request", plain: { excludedLocations: ["West US"] }, hedged: { excludedRegions: ["West US"] }, faults: { "East US": { delayMs: 3_000, every: 3 } }, kinds: ["query"], operation: fetchPages("SELECT c.id FROM c") },
  { name: "readAll, East US excluded, West US 503 on every other page", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 503, every: 2 } }, kinds: ["readFeed"], operation: readAll },
  { name: "a change feed, East US excluded, West US 503 on every other page", plain: { excludedLocations: ["East US"] }, hedged: { excludedRegions: ["East US"] }, faults: { "West US": { status: 503, every: 2 } }, kinds: ["changeFeed"], operation: changeFeed, ambient: true },
];

describe("never worse than plain, steering: side by side with plain, hedging off for the request", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });

  for (const testCase of cases) {
    it(`${testCase.name}: the same outcome and regions as plain`, async function () {
      if (testCase.timeoutMs !== undefined) this.timeout(testCase.timeoutMs);
      const kinds = testCase.kinds ?? ["pointRead"];
      const operation = testCase.operation ?? pointRead;
      const plainSide = await fixture.client({ hedging: false, connectionPolicy: { requestTimeout }, warmUp });
      const plain: Run = await runWith(fixture.emulator, testCase.faults, kinds, () => operation(plainSide.container, testCase.plain));
      const hedgedSide = await fixture.client({ hedging: { crossRegion: { threshold: 500, thresholdStep: 5_000 } }, connectionPolicy: { requestTimeout }, warmUp });
      const mine: Run = await runWith(fixture.emulator, testCase.faults, kinds, () =>
        testCase.ambient === true
          ? withRequestHedgingOptions({ ...testCase.hedged, hedging: false }, () => operation(hedgedSide.container, { ...(testCase.sdk ?? {}) }))
          : operation(hedgedSide.container, hedgingRequestOptions({ ...testCase.hedged, hedging: false }, { ...(testCase.sdk ?? {}) })),
      );
      const label = `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(mine)}`.slice(0, 1_500);
      if (testCase.betterAllowed === true && !plain.outcome.ok) {
        assert.ok(mine.outcome.ok, label);
        return;
      }
      assert.deepEqual(mine.outcome, plain.outcome, label);
      const extra = testCase.refusedMore ?? 0;
      if (extra === 0) assert.deepEqual(mine.regions, plain.regions, label);
      else {
        assert.ok(mine.regions.length <= plain.regions.length + extra, `at most ${extra} more refused requests than plain: ${label}`);
        assert.equal(mine.regions.at(-1), plain.regions.at(-1), `answered where plain is: ${label}`);
      }
    });
  }
});
