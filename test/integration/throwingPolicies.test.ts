import assert from "node:assert/strict";
import type { PipelinePolicy } from "@azure/core-rest-pipeline";
import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import { useEmulator } from "../support/emulatorFixture.js";

/**
 * A user policy below the hedging layer (added to `hedging.pipeline`
 * as the docs show) whose `sendRequest` is not `async` and throws
 * synchronously, e.g. a data-residency guard refusing one region, or a
 * transport of the user's that does: the operation ends as it does through
 * plain @azure/cosmos with the same guard, and its detection record becomes
 * final (a throw that skipped the end of the request would leave it running
 * for good).
 */
const items = [{ id: "a", pk: "p" }];
const slowMs = 3_000;

function residencyGuard(forbiddenPort: string): PipelinePolicy {
  return {
    name: "residencyGuard",
    // Deliberately not async: a plain function policy, as many are written.
    sendRequest(request, next) {
      if (new URL(request.url).port === forbiddenPort) throw new Error("residencyGuard: region forbidden");
      return next(request);
    },
  };
}

/** A plain client's httpClient: a pipeline of its own over the default transport, to add the same guard to. */
function plainTransport(): HttpClient & { readonly pipeline: ReturnType<typeof createEmptyPipeline> } {
  const pipeline = createEmptyPipeline();
  const transport = createDefaultHttpClient();
  return { pipeline, sendRequest: (request) => pipeline.sendRequest(transport, request) };
}

function within<T>(promise: Promise<T>, ms: number): Promise<T | "timed out"> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<"timed out">((resolve) => (timer = setTimeout(() => resolve("timed out"), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

describe("a user policy below the hedging layer that throws synchronously", function () {
  const fixture = useEmulator({ items, preferredLocations: ["East US", "West US", "North Europe"] });

  /** A plain client and a hedged one, each with the guard refusing `region`: plain's in its own pipeline, the hedged one's below the hedging layer. */
  async function guardedClients(region: string) {
    const port = new URL(fixture.emulator.region(region).endpoint).port;
    const transport = plainTransport();
    const plain = await fixture.client({ hedging: false, httpClient: transport, warmUp: { id: "a", pk: "p" } });
    transport.pipeline.addPolicy(residencyGuard(port));
    const hedged = await fixture.client({ hedging: { crossRegion: { threshold: 100, thresholdStep: 20_000 } }, warmUp: { id: "a", pk: "p" } });
    hedged.hedging!.pipeline.addPolicy(residencyGuard(port), { afterPhase: "Sign" });
    return { plain, hedged };
  }

  it("a hedge refused by a sync-throwing guard: the read succeeds like plain, and its detection record becomes final", async function () {
    const { plain, hedged } = await guardedClients("West US");
    fixture.emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowMs });

    const plainRead = await plain.container.item("a", "p").read();
    const hedgedRead = await hedged.container.item("a", "p").read();
    assert.equal(plainRead.statusCode, 200);
    assert.equal(hedgedRead.statusCode, 200);
    const detection = getHedgingDetection(hedgedRead);
    assert.ok(detection);
    // Both requests have ended (the primary answered, the hedge threw before it was sent): the record must be final.
    const settled = await within(detection.settled, 5_000);
    assert.equal(detection.final, true, "every request of the operation has ended, so the record is final");
    assert.notEqual(settled, "timed out", "detection.settled resolves");
  });

  it("a guard refusing the preferred region: the hedged read fails as plain's does, and its record becomes final", async function () {
    const { plain, hedged } = await guardedClients("East US");

    await assert.rejects(plain.container.item("a", "p").read(), /residencyGuard: region forbidden/);
    // The refused primary's error goes back to the SDK as it came, whose retry policy does not retry it.
    const error: unknown = await hedged.container.item("a", "p").read().then(
      () => assert.fail("the guard refuses the region the SDK addressed"),
      (thrown: unknown) => thrown,
    );
    assert.match(String(error), /residencyGuard: region forbidden/);
    const detection = getHedgingDetection(error);
    assert.ok(detection);
    assert.deepEqual(
      detection.requestedRegions().map(({ region, reason }) => `${region} ${reason}`),
      ["East US initial"],
    );
    assert.notEqual(await within(detection.settled, 5_000), "timed out", "detection.settled resolves");
    assert.equal(detection.final, true, "the operation has ended and nothing is in flight");
  });

  it("the same guard as the transport under withHedging (a custom HttpClient whose sendRequest throws synchronously): the record becomes final", async function () {
    const westPort = new URL(fixture.emulator.region("West US").endpoint).port;
    const inner = createDefaultHttpClient();
    const guarded: HttpClient = {
      sendRequest(request) {
        if (new URL(request.url).port === westPort) throw new Error("transport: region forbidden");
        return inner.sendRequest(request);
      },
    };
    const hedged = await fixture.client({ httpClient: guarded, hedging: { crossRegion: { threshold: 100, thresholdStep: 20_000 } }, warmUp: { id: "a", pk: "p" } });
    fixture.emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowMs });
    const hedgedRead = await hedged.container.item("a", "p").read();
    assert.equal(hedgedRead.statusCode, 200);
    const detection = getHedgingDetection(hedgedRead);
    assert.ok(detection);
    assert.notEqual(await within(detection.settled, 5_000), "timed out", "detection.settled resolves");
    assert.equal(detection.final, true);
  });
});
