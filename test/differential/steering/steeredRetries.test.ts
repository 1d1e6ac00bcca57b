import assert from "node:assert/strict";
import type { RequestOptions } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import type { HedgingOptions } from "../../../src/client/hedgingHttpClient.js";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import type { FaultRule } from "../../emulator/index.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import type { EmulatorFixture, FixtureClient } from "../../support/emulatorFixture.js";
import { items, outcomeOf, pointRead, regionNames, requestTimeout, runWith, steeredOnly, warmUp } from "./support.js";
import type { Operation, Run } from "./support.js";

/**
 * The SDK's retries after the hedging client re-pointed an attempt: the SDK
 * does not know the attempt went elsewhere, so its failover "moves" to the
 * region that just failed. Each case runs the same operation under the same
 * fault through a plain `CosmosClient` told the exclusion through its own
 * `excludedLocations` (or made with the new preferred order), and through a
 * hedging client told it through this package, and asserts the same outcome
 * and, unhedged, the same regions in the same order.
 */

/** Far above a healthy read on a loaded machine: a hedge fires only where a fault holds a read. */
const threshold = 500;

const faults = {
  "503": { status: 503 },
  "hung": { delayMs: 5_000 },
  "429 once": { status: 429, headers: { "x-ms-retry-after-ms": "20" }, count: 1 },
  "reset": { connectionReset: true },
} satisfies Record<string, FaultRule>;
type FaultName = keyof typeof faults;

const crossPartitionQuery: Operation = async (container, options) => {
  const { resources } = await container.items.query("SELECT c.id FROM c", { ...options, maxItemCount: 2 }).fetchAll();
  return resources.map((item: { id: string }) => item.id).sort();
};

interface Side {
  readonly client: FixtureClient;
  readonly options: RequestOptions;
}

/** Runs one side: the fault installed on `faulted` for this run alone, the counters from zero. */
function run(fixture: EmulatorFixture, side: Side, operation: Operation, kinds: readonly OperationKind[], faulted: string, fault: FaultRule): Promise<Run> {
  return runWith(fixture.emulator, { [faulted]: fault }, kinds, () => operation(side.client.container, side.options));
}

describe("never worse than plain: the SDK's retries after the hedging client re-pointed an attempt", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });

  const plainClient = (preferredLocations = regionNames): Promise<FixtureClient> =>
    fixture.client({ hedging: false, preferredLocations, connectionPolicy: { requestTimeout }, warmUp });
  const hedgingClient = (hedging: HedgingOptions = {}): Promise<FixtureClient> =>
    fixture.client({ hedging: { crossRegion: { threshold, thresholdStep: 5_000 }, ...hedging }, connectionPolicy: { requestTimeout }, warmUp });

  interface ExclusionCase {
    readonly excluded: string[];
    /** The region the SDK's walk meets after the re-point, where the fault is. */
    readonly faulted: string;
    readonly fault: FaultName;
  }

  // East US excluded: the SDK's first attempt goes to West US, whose failure sends the SDK's failover to West US again.
  // West US excluded: the first attempt stays in East US, whose failure sends the SDK to West US, re-pointed to East US again.
  const exclusionCases: ExclusionCase[] = [
    { excluded: ["East US"], faulted: "West US", fault: "503" },
    { excluded: ["East US"], faulted: "West US", fault: "hung" },
    { excluded: ["East US"], faulted: "West US", fault: "reset" },
    { excluded: ["East US"], faulted: "West US", fault: "429 once" },
    { excluded: ["West US"], faulted: "East US", fault: "503" },
    { excluded: ["West US"], faulted: "East US", fault: "hung" },
  ];

  async function assertSameAsPlain(
    operation: Operation,
    kinds: readonly OperationKind[],
    testCase: ExclusionCase,
    hedged: { readonly client: FixtureClient; readonly options: RequestOptions; readonly unhedged: boolean },
  ): Promise<void> {
    const plain = await run(fixture, { client: await plainClient(), options: { excludedLocations: testCase.excluded } }, operation, kinds, testCase.faulted, faults[testCase.fault]);
    const mine = await run(fixture, hedged, operation, kinds, testCase.faulted, faults[testCase.fault]);
    const label = `${JSON.stringify(testCase)}: plain ${JSON.stringify(plain)}, hedging client ${JSON.stringify(mine)}`;
    // The premise: plain's walk ends in a healthy region, except where its retries stay in place (a reset connection).
    assert.equal(plain.outcome.ok, testCase.fault !== "reset", `plain completes unless its retries stay in place: ${label}`);
    // Hedged may end better than plain (a hedge reaching a healthy region), never otherwise.
    if (!(!plain.outcome.ok && !hedged.unhedged && mine.outcome.ok)) assert.deepEqual(mine.outcome, plain.outcome, label);
    assert.ok(!mine.regions.some((region) => testCase.excluded.includes(region)), `no request reaches an excluded region: ${label}`);
    // A reset comes back at once, before any threshold, and goes to the SDK's retry in place as it came: nothing to hedge.
    if (hedged.unhedged || testCase.fault === "reset") assert.deepEqual(mine.regions, plain.regions, `the same regions in the same order: ${label}`);
  }

  const perRequest = (excluded: string[], extra: RequestHedgingOptions = {}): RequestOptions => steeredOnly({ excludedRegions: excluded, ...extra });

  for (const testCase of exclusionCases) {
    const name = `${testCase.fault} in ${testCase.faulted}, ${testCase.excluded.join(", ")} excluded`;

    it(`a point read, ${name}, per request with hedging: false, walks the regions plain's excludedLocations walks`, async function () {
      await assertSameAsPlain(pointRead, ["pointRead"], testCase, { client: await hedgingClient(), options: perRequest(testCase.excluded, { hedging: false }), unhedged: true });
    });

    // A reset is retried in place for 20 s; once per client kind is enough.
    if (testCase.fault !== "reset") it(`a point read, ${name}, in the client's excludedRegions with crossRegion: false, walks the regions plain's excludedLocations walks`, async function () {
      await assertSameAsPlain(pointRead, ["pointRead"], testCase, { client: await hedgingClient({ excludedRegions: testCase.excluded, crossRegion: false }), options: {}, unhedged: true });
    });

    it(`a point read, ${name}, per request with hedging on, ends as plain does`, async function () {
      await assertSameAsPlain(pointRead, ["pointRead"], testCase, { client: await hedgingClient(), options: perRequest(testCase.excluded), unhedged: false });
    });
  }

  it("a cross-partition query, 503 in West US with East US excluded per request and hedging: false, completes as plain's does", async function () {
    await assertSameAsPlain(crossPartitionQuery, ["query"], { excluded: ["East US"], faulted: "West US", fault: "503" }, {
      client: await hedgingClient(),
      options: perRequest(["East US"], { hedging: false }),
      unhedged: true,
    });
  });

  it("an order changed at runtime: a 503 in its first region sends the SDK's retry to the order's next region, as a plain client made with that order does", async function () {
    const order = ["West US", "East US", "North Europe"];
    const plain = await run(fixture, { client: await plainClient(order), options: {} }, pointRead, ["pointRead"], "West US", faults["503"]);
    const hedged = await hedgingClient({ crossRegion: false });
    hedged.hedging!.regions.setPreferredRegions(order);
    const mine = await run(fixture, { client: hedged, options: {} }, pointRead, ["pointRead"], "West US", faults["503"]);
    assert.ok(plain.outcome.ok, `plain completes: ${JSON.stringify(plain)}`);
    assert.deepEqual(mine, plain);
  });

  it("two operations at once, each excluding another region, walk their own regions", async function () {
    const client = await hedgingClient({ crossRegion: false });
    const handle = fixture.emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
    try {
      const [first, second] = await Promise.all([
        outcomeOf(() => pointRead(client.container, perRequest(["East US"]))),
        outcomeOf(() => pointRead(client.container, perRequest(["North Europe"]))),
      ]);
      // The first walks West US, North Europe; the second East US alone, which is healthy.
      assert.deepEqual(first, { ok: true, value: { statusCode: 200, id: "item-1" } });
      assert.deepEqual(second, { ok: true, value: { statusCode: 200, id: "item-1" } });
    } finally {
      handle.remove();
    }
  });
});

describe("never worse than plain: a write re-pointed on a multi-write account, then refused", function () {
  this.timeout(60_000);
  const fixture = useEmulator({
    items,
    preferredLocations: regionNames,
    emulator: { regions: regionNames.map((name) => ({ name })), multipleWriteLocations: true, recordRequests: true },
  });

  for (const fault of [{ status: 403, substatus: 3 }, { status: 503 }] satisfies FaultRule[]) {
    it(`a create with East US excluded, West US answering ${fault.status}${"substatus" in fault ? `/${fault.substatus}` : ""}, ends as plain's excludedLocations does and writes once`, async function () {
      const outcomes: Run[] = [];
      for (const side of ["plain", "hedged"] as const) {
        const client = await fixture.client({ hedging: side === "plain" ? false : {}, connectionPolicy: { requestTimeout }, warmUp });
        const id = `write-${side}-${fault.status}`;
        const options = side === "plain" ? { excludedLocations: ["East US"] } : hedgingRequestOptions({ excludedRegions: ["East US"] });
        const write: Operation = async (container, requestOptions) => {
          const { statusCode } = await container.items.create({ id, pk: "pk-w" }, requestOptions);
          return { statusCode };
        };
        outcomes.push(await run(fixture, { client, options }, write, ["create"], "West US", fault));
      }
      const [plain, hedged] = outcomes as [Run, Run];
      assert.deepEqual(hedged.outcome, plain.outcome, `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(hedged)}`);
      assert.deepEqual(hedged.regions, plain.regions, `plain ${JSON.stringify(plain)}, hedged ${JSON.stringify(hedged)}`);
    });
  }
});
