import assert from "node:assert/strict";
import type { Container } from "@azure/cosmos";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { masterKeyAuthorization, masterKeySigner } from "../../src/cosmos/masterKeySigner.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { arrivalOf, assertSeen, settledRequests } from "../support/wire.js";

const preferredLocations = ["West US", "East US", "North Europe"];
const item = { id: "item-1", pk: "pk-1", value: 1 };
const warmUp = { id: item.id, pk: item.pk };
/** A primary stalled this long never answers within a test: an arm that is not aborted shows up as answered, not cut. */
const stallMs = 20_000;

/**
 * What the service sees of hedging through the real `@azure/cosmos` client:
 * losers cut, hedges signed as the service checks, writes sent once. Each
 * assertion reads the emulator's record of the requests, never the
 * diagnostics the policies write about themselves.
 */
describe("hedging as the service sees it", function () {
  const fixture = useEmulator({ items: [item], preferredLocations });

  describe("aborted arms", function () {
    it("a hedge win cuts the slow primary's request at the service", async function () {
      const { emulator } = fixture;
      const { container } = await fixture.client({ hedging: { crossRegion: { threshold: 100, thresholdStep: stallMs / 2 } }, warmUp });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: stallMs });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.statusCode, 200);
      const reads = await settledRequests(emulator, "pointRead");
      assertSeen(reads, [
        { region: "West US", status: undefined, cutByClient: true },
        { region: "East US", status: 200, cutByClient: false },
      ]);
      const primary = reads.find((request) => request.region === "West US");
      const hedge = reads.find((request) => request.region === "East US");
      assert.ok(primary!.endedAt! >= hedge!.at, "the primary was cut after the hedge went out, not before");
    });

    it("a caller's abort cuts every arm in flight at the service", async function () {
      const { emulator } = fixture;
      const { container } = await fixture.client({ hedging: { crossRegion: { threshold: 50, thresholdStep: 50 } }, warmUp });
      for (const region of emulator.regions) region.addFault({ operations: ["pointRead"], delayMs: stallMs });
      const controller = new AbortController();
      const reading = container.item(item.id, item.pk).read({ abortSignal: controller.signal });
      // Abort once all three arms have reached the service: the outcome cannot depend on how fast the machine is.
      await arrivalOf(emulator, (request) => request.kind === "pointRead" && request.region === "North Europe");
      controller.abort();
      await assert.rejects(reading, { name: "AbortError" });
      const reads = await settledRequests(emulator, "pointRead");
      assertSeen(reads, [
        { region: "West US", status: undefined, cutByClient: true },
        { region: "East US", status: undefined, cutByClient: true },
        { region: "North Europe", status: undefined, cutByClient: true },
      ]);
    });

    it("a metadata hedge win cuts the stalled primary Collection read at the service", async function () {
      const { emulator } = fixture;
      emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: stallMs });
      const { container } = await fixture.client({ hedging: { crossRegion: false, metadata: { threshold: 200 } } });
      const response = await container.read();
      assert.equal(response.statusCode, 200);
      const reads = await settledRequests(emulator, "collectionRead");
      assertSeen(reads, [
        { region: "West US", status: undefined, cutByClient: true },
        { region: "East US", status: 200, cutByClient: false },
      ]);
    });
  });

  describe("signatures of hedges, on a service that allows 3 s of clock skew", function () {
    const strict = useEmulator({ emulator: { allowedClockSkewMs: 3000 }, items: [item], preferredLocations });

    it("a hedge carries a signature of its own: accepted although the primary's date has aged past the allowed skew", async function () {
      this.timeout(30_000);
      // A hedge 4.5 s after the primary: had it reused the primary's signature, its date would be 4.5 s
      // old and the service would refuse it; signed afresh, it is accepted.
      const { container } = await strict.client({ hedging: { crossRegion: { threshold: 4500, thresholdStep: stallMs / 2 } }, warmUp });
      strict.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: stallMs });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.statusCode, 200);
      assert.equal(getHedgeDiagnostics(response.headers)?.winningRegion, "East US");
      const reads = await settledRequests(strict.emulator, "pointRead");
      assert.deepEqual(
        reads.map((request) => [request.region, request.authorization, request.status]).sort(),
        [
          ["East US", "valid", 200],
          ["West US", "valid", undefined],
        ],
      );
      const primary = reads.find((request) => request.region === "West US");
      const hedge = reads.find((request) => request.region === "East US");
      assert.ok(Date.parse(hedge!.headers["x-ms-date"]!) - Date.parse(primary!.headers["x-ms-date"]!) >= 3000, "the hedge was dated when it was sent");
    });
  });

  describe("signatures of hedges", function () {
    it("a hedge signed with the wrong key is refused by the service with 401, and the read waits for the primary's answer", async function () {
      const { emulator } = fixture;
      const wrongKey = Buffer.from("a key of another account").toString("base64");
      // A signer that signs every hedge with the wrong key, as a broken signer would.
      const wrongSigner = (request: PipelineRequest): void => {
        const date = new Date().toUTCString();
        request.headers.set("x-ms-date", date);
        request.headers.set("authorization", masterKeyAuthorization(Buffer.from(wrongKey, "base64"), request.method, request.url, date));
      };
      const hedging = createHedgingHttpClient({ crossRegion: { threshold: 100 }, metadata: false, signer: wrongSigner, preferredRegions: preferredLocations });
      const { container } = await fixture.client({ hedging: false, httpClient: hedging });
      await container.read();
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1500 });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.statusCode, 200);
      assert.equal(getHedgeDiagnostics(response.headers)?.winningRegion, "West US", "a hedge's 401 never beats the primary in flight");
      const reads = await settledRequests(emulator, "pointRead");
      const refused = reads.filter((request) => request.authorization !== "valid");
      assert.ok(refused.length >= 1, "a wrongly signed arm reached the service");
      assert.ok(refused.every((request) => request.authorization === "badSignature" && request.status === 401 && request.region !== "West US"));
    });

    it("masterKeySigner with another account's key leaves the arms as the SDK signed them, and the service accepts them", async function () {
      const { emulator } = fixture;
      const otherAccountsKey = Buffer.from("a key of another account").toString("base64");
      const hedging = createHedgingHttpClient({ crossRegion: { threshold: 100 }, metadata: false, signer: masterKeySigner(otherAccountsKey), preferredRegions: preferredLocations });
      const { container } = await fixture.client({ hedging: false, httpClient: hedging });
      await container.read();
      emulator.resetCounters();
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1500 });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(getHedgeDiagnostics(response.headers)?.hedgeWon, true);
      const reads = await settledRequests(emulator, "pointRead");
      assert.equal(reads.length, 2);
      assert.ok(reads.every((request) => request.authorization === "valid"));
    });
  });

  describe("writes", function () {
    const writeKinds: readonly OperationKind[] = ["create", "upsert", "replace", "patch", "delete"];

    /** Each write kind once, with every region slow enough for any hedge to fire; returns the writes that reached the service. */
    async function writeOnce(container: Container, round: string): Promise<Array<[string, string]>> {
      const pk = `writes-${round}`;
      for (const name of ["replaced", "patched", "deleted"]) await container.items.upsert({ id: `${name}-${round}`, pk });
      fixture.emulator.resetCounters();
      for (const region of fixture.emulator.regions) region.addFault({ operations: [...writeKinds], delayMs: 300 });
      await Promise.all([
        container.items.create({ id: `created-${round}`, pk }),
        container.items.upsert({ id: `upserted-${round}`, pk }),
        container.item(`replaced-${round}`, pk).replace({ id: `replaced-${round}`, pk, version: 2 }),
        container.item(`patched-${round}`, pk).patch([{ op: "add", path: "/patched", value: true }]),
        container.item(`deleted-${round}`, pk).delete(),
      ]);
      fixture.emulator.clearFaults();
      const writes = await settledRequests(fixture.emulator, writeKinds);
      return writes.map((request) => [request.kind, request.region]);
    }

    it("are sent once on a single-write account, even one that lists a second writable region", async function () {
      const { emulator } = fixture;
      // A hedging client sees a second write region here: only the account's single-write flag keeps writes from being hedged to it.
      emulator.setAccount({ writeRegions: ["East US", "West US"], multipleWriteLocations: false });
      try {
        const { container } = await fixture.client({
          hedging: { crossRegion: { threshold: 1, thresholdStep: 1, enableMultiWriteRegionHedge: true, budget: false } },
          warmUp,
        });
        const writes = await writeOnce(container, "single");
        assert.deepEqual(writes.map(([kind]) => kind).sort(), [...writeKinds].sort(), "each write reached the service once");
        assert.equal(new Set(writes.map(([, region]) => region)).size, 1, `all in the region the SDK chose: ${JSON.stringify(writes)}`);
      } finally {
        emulator.setAccount({ writeRegions: ["East US"], multipleWriteLocations: false });
      }
    });

    it("(the control: the same writes on a multi-write account with write hedging on do reach a second region)", async function () {
      const { emulator } = fixture;
      emulator.setAccount({ writeRegions: ["East US", "West US"], multipleWriteLocations: true });
      try {
        const { container } = await fixture.client({
          preferredLocations: ["East US", "West US"],
          hedging: { crossRegion: { threshold: 1, thresholdStep: 1, enableMultiWriteRegionHedge: true, budget: false } },
          warmUp,
        });
        const writes = await writeOnce(container, "multi");
        assert.ok(
          writes.some(([, region]) => region === "West US"),
          `no write was hedged to West US: ${JSON.stringify(writes)}`,
        );
      } finally {
        emulator.setAccount({ writeRegions: ["East US"], multipleWriteLocations: false });
      }
    });
  });
});
