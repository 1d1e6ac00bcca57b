import assert from "node:assert/strict";
import { Session } from "node:inspector/promises";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import { useEmulator } from "../../support/emulatorFixture.js";
import { items, pointRead, regionNames, requestTimeout, steeredOnly, warmUp } from "./support.js";

/** Live OperationDetection instances, after a full GC (Runtime.queryObjects collects first). */
async function liveOperations(session: Session): Promise<number> {
  (globalThis as Record<string, unknown>)["__operationDetectionPrototype"] = OperationDetection.prototype;
  const { result: proto } = await session.post("Runtime.evaluate", { expression: "globalThis.__operationDetectionPrototype" });
  delete (globalThis as Record<string, unknown>)["__operationDetectionPrototype"];
  const { objects } = await session.post("Runtime.queryObjects", { prototypeObjectId: proto.objectId! });
  const { result } = await session.post("Runtime.callFunctionOn", { objectId: objects.objectId!, functionDeclaration: "function () { return this.length; }", returnByValue: true });
  await session.post("Runtime.releaseObjectGroup", { objectGroup: "" }).catch(() => undefined);
  return result.value as number;
}

describe("never worse than plain, steering: the per-operation walks keep nothing alive", function () {
  this.timeout(120_000);
  const fixture = useEmulator({ items, preferredLocations: regionNames, emulator: { regions: regionNames.map((name) => ({ name })), recordRequests: false } });

  it("600 re-pointed reads with SDK retries (503 in West US, East US excluded), and 200 page-by-page queries: the operations are collected", async function () {
    const client = await fixture.client({ hedging: { crossRegion: false }, connectionPolicy: { requestTimeout }, warmUp });
    fixture.emulator.region("West US").addFault({ operations: ["pointRead", "query"], status: 503, every: 2 });
    const session = new Session();
    session.connect();
    try {
      const before = await liveOperations(session);
      for (let i = 0; i < 600; i++) await pointRead(client.container, steeredOnly({ excludedRegions: ["East US"] }));
      for (let i = 0; i < 200; i++) {
        const iterator = client.container.items.query("SELECT c.id FROM c", steeredOnly({ excludedRegions: ["East US"] }, { maxItemCount: 1, partitionKey: "pk-1" }));
        while (iterator.hasMoreResults()) await iterator.fetchNext();
      }
      const after = await liveOperations(session);
      // The counter counts: responses held keep their operation's record (attached to them) alive.
      const held: unknown[] = [];
      for (let i = 0; i < 20; i++) held.push(await client.container.item("item-1", "pk-1").read(steeredOnly({ excludedRegions: ["East US"] })));
      assert.ok((await liveOperations(session)) - after >= 20, "the counter sees held operations");
      held.length = 0;
      assert.ok(after - before < 50, `live OperationDetection: ${before} before, ${after} after`);
    } finally {
      session.disconnect();
    }
  });
});
