import assert from "node:assert/strict";
import type { RequestOptions } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import type { FaultRule } from "../../emulator/index.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { items, pointRead, regionNames, requestTimeout, runWith, warmUp } from "./support.js";
import type { Operation, Run } from "./support.js";

let serial = 0;
const create: Operation = async (container, options) => ({ statusCode: (await container.items.create({ id: `b-${serial++}`, pk: "pk-b" }, options)).statusCode });

/**
 * An operation under `hedgingRequestOptions({ excludedRegions })` that a region refuses, then one with no
 * exclusion at all, each side by side with plain given the same exclusions as `excludedLocations`: the SDK
 * books the refusal against the region that refused (its 403 marks that region unavailable for writes), so the later operation walks as plain's does.
 */
interface BookkeepingCase {
  readonly name: string;
  readonly emulator: { multipleWriteLocations?: boolean };
  readonly excluded: readonly string[];
  readonly first: { readonly operation: Operation; readonly faults: Record<string, FaultRule | FaultRule[]> };
  readonly later: { readonly operation: Operation };
}

const cases: BookkeepingCase[] = [
  {
    name: "multi-write, East US excluded, 403/3 in West US; then a create with no exclusion",
    emulator: { multipleWriteLocations: true },
    excluded: ["East US"],
    first: { operation: create, faults: { "West US": { status: 403, substatus: 3 } } },
    later: { operation: create },
  },
  {
    name: "multi-write, East US excluded, 403/1008 in West US; then a create with no exclusion",
    emulator: { multipleWriteLocations: true },
    excluded: ["East US"],
    first: { operation: create, faults: { "West US": { status: 403, substatus: 1008 } } },
    later: { operation: create },
  },
];

describe("never worse than plain, steering: the SDK books what a request under excludedRegions met against the region that met it", function () {
  this.timeout(60_000);
  for (const testCase of cases) {
    describe(testCase.name, function () {
      const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true, ...testCase.emulator } });
      it("the same outcomes and the same regions as plain, for both operations", async function () {
        const sides: Record<"plain" | "hedged", Run[]> = { plain: [], hedged: [] };
        for (const side of ["plain", "hedged"] as const) {
          const { container } = await fixture.client({ hedging: side === "plain" ? false : {}, connectionPolicy: { requestTimeout }, warmUp });
          const firstOptions: RequestOptions = side === "plain" ? { excludedLocations: [...testCase.excluded] } : hedgingRequestOptions({ excludedRegions: testCase.excluded });
          sides[side].push(await runWith(fixture.emulator, testCase.first.faults, ["create"], () => testCase.first.operation(container, firstOptions)));
          sides[side].push(await runWith(fixture.emulator, {}, ["create"], () => testCase.later.operation(container, {})));
        }
        const label = `plain ${JSON.stringify(sides.plain)}, hedged ${JSON.stringify(sides.hedged)}`;
        assert.deepEqual(sides.hedged.map((run) => run.outcome), sides.plain.map((run) => run.outcome), label);
        assert.deepEqual(sides.hedged.map((run) => run.regions), sides.plain.map((run) => run.regions), label);
      });
    });
  }
});

describe("never worse than plain, steering: a sparse excludedLocations of the caller's, which the SDK reads without its holes", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });
  // A spread would fill the hole with undefined, which the SDK cannot read: names are pushed after it instead.
  const sparseWith = (names: readonly string[] = []): string[] => {
    const list: string[] = [];
    list[1] = "East US";
    list.push(...names);
    return list;
  };
  for (const ours of [[], ["West US"]]) {
    it(`a point read with excludedRegions ${JSON.stringify(ours)}: the same outcome and regions as plain given the same names`, async function () {
      const sides: Partial<Record<"plain" | "hedged", Run>> = {};
      for (const side of ["plain", "hedged"] as const) {
        const { container } = await fixture.client({ hedging: side === "plain" ? false : {}, connectionPolicy: { requestTimeout }, warmUp });
        const options: RequestOptions = side === "plain" ? { excludedLocations: sparseWith(ours) } : hedgingRequestOptions({ excludedRegions: ours }, { excludedLocations: sparseWith() });
        sides[side] = await runWith(fixture.emulator, {}, ["pointRead"], () => pointRead(container, options));
      }
      assert.deepEqual(sides.hedged, sides.plain);
      assert.equal(sides.plain?.outcome.ok, true);
    });
  }
});

describe("never worse than plain, steering: an excludedLocations of the caller's read as the SDK reads it (an ignored value, a String object, a list whose own forEach does nothing)", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: true } });
  /** A list whose own forEach does nothing: the SDK maps it with Array.prototype's map, so its names still count. */
  const quiet = (names: readonly string[]): string[] => Object.assign([...names], { forEach: () => undefined });
  const callerLists: ReadonlyArray<readonly [string, () => unknown, readonly string[]]> = [
    ["an object, which the SDK ignores", () => ({}), []],
    ["a String object", () => [new String("East US")], ["East US"]],
    ["a list whose own forEach does nothing", () => quiet(["East US"]), ["East US"]],
  ];
  for (const [name, callerList, plainNames] of callerLists) {
    it(`${name}, with North Europe excluded and East US answering 503: the same outcome and regions as plain given the same names`, async function () {
      const sides: Partial<Record<"plain" | "hedged", Run>> = {};
      for (const side of ["plain", "hedged"] as const) {
        const { container } = await fixture.client({ hedging: side === "plain" ? false : {}, connectionPolicy: { requestTimeout }, warmUp });
        const options: RequestOptions =
          side === "plain"
            ? { excludedLocations: [...plainNames, "North Europe"] }
            : hedgingRequestOptions({ excludedRegions: ["North Europe"] }, { excludedLocations: callerList() as string[] });
        sides[side] = await runWith(fixture.emulator, { "East US": { status: 503 } }, ["pointRead"], () => pointRead(container, options));
      }
      assert.deepEqual(sides.hedged, sides.plain);
      assert.equal(sides.plain?.outcome.ok, true);
    });
  }
});
