import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelinePolicy, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { useEmulator } from "../support/emulatorFixture.js";
import { catchUnhandled } from "../support/unhandledRejections.js";
import { arrivalOf, settledRequests } from "../support/wire.js";

const preferredLocations = ["West US", "East US", "North Europe"];
const item = { id: "item-1", pk: "pk-1", value: 1 };
const warmUp = { id: item.id, pk: item.pk };
/** Hedges fire after {@link threshold}; a slow region answers after {@link slow}: no outcome hinges on a close race. */
const threshold = 50;
const slow = 800;
const hedging = { crossRegion: { threshold, thresholdStep: 5_000, drainLosers: false as const } };

/**
 * A transport of the user's over Node's `fetch`, which hands `request.abortSignal`
 * to `fetch` as it is: `fetch` refuses anything but a native `AbortSignal`.
 */
function fetchTransport(signals: unknown[]): HttpClient {
  return {
    async sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
      signals.push(request.abortSignal);
      const body = typeof request.body === "string" ? request.body : undefined;
      const answer = await fetch(request.url, {
        method: request.method,
        headers: request.headers.toJSON(),
        ...(body !== undefined ? { body } : {}),
        signal: (request.abortSignal ?? null) as AbortSignal | null,
      });
      const headers = createHttpHeaders();
      answer.headers.forEach((value, name) => headers.set(name, value));
      return { request, status: answer.status, headers, bodyAsText: await answer.text() };
    },
  };
}

/**
 * Which abort signal each arm of a race carries, through the real
 * `@azure/cosmos` client: a light one only where nothing but
 * core-rest-pipeline's own transport reads it, and a native one wherever a
 * transport or policy of the user's may hand it on.
 */
describe("arm abort signals through the real CosmosClient", function () {
  const fixture = useEmulator({ items: [item], preferredLocations });

  it("over the user's own fetch transport: every arm carries a native signal, and the loser is aborted through fetch", async function () {
    const { emulator } = fixture;
    const signals: unknown[] = [];
    const unhandled = catchUnhandled();
    try {
      const { container, diagnostics } = await fixture.client({ hedging, httpClient: fetchTransport(signals), warmUp });
      signals.length = 0;
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.resource?.value, 1);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(reads.map((read) => `${read.region} ${read.cutByClient}`).sort(), ["East US false", "West US true"]);
      assert.equal(signals.length, 2);
      assert.ok(signals.every((signal) => signal instanceof AbortSignal));
      assert.deepEqual(diagnostics.at(-1)?.arms.map((arm) => arm.outcome), ["aborted", "returned"]);
      assert.deepEqual(unhandled.seen, []);
    } finally {
      unhandled.stop();
    }
  });

  it("a policy added to the client's pipeline while a race is in flight: the race ends as it began, and the next read's arms reach the policy with native signals", async function () {
    const { emulator } = fixture;
    const { container, hedging: client, diagnostics } = await fixture.client({ hedging, warmUp });
    assert.ok(client !== undefined);
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow, count: 1 });
    const inFlight = container.item(item.id, item.pk).read();
    await arrivalOf(emulator, (request) => request.kind === "pointRead" && request.region === "East US");
    const seen: unknown[] = [];
    const mine: PipelinePolicy = { name: "mine", sendRequest: (request, next) => (seen.push(request.abortSignal), next(request)) };
    client.pipeline.addPolicy(mine);
    const first = await inFlight;
    assert.equal(first.resource?.value, 1);
    assert.equal(seen.length, 0, "the race in flight keeps the route it started on");
    assert.equal(diagnostics.at(-1)?.winningRegion, "East US");
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow, count: 1 });
    const second = await container.item(item.id, item.pk).read();
    assert.equal(second.resource?.value, 1);
    assert.equal(seen.length, 2);
    assert.ok(seen.every((signal) => signal instanceof AbortSignal));
    const reads = await settledRequests(emulator, "pointRead");
    assert.deepEqual(reads.map((read) => `${read.region} ${read.cutByClient}`).sort(), ["East US false", "East US false", "West US true", "West US true"]);
  });

  // Over the client's own transport, with no policy of the user's: the arms carry light signals.
  const moments: ReadonlyArray<readonly [string, (abort: () => void, emulator: typeof fixture.emulator) => Promise<void> | void]> = [
    ["before the read is sent", (abort) => abort()],
    ["while the primary alone is in flight", async (abort, emulator) => {
      await arrivalOf(emulator, (request) => request.kind === "pointRead" && request.region === "West US");
      abort();
    }],
    ["once the hedge is in flight too", async (abort, emulator) => {
      await arrivalOf(emulator, (request) => request.kind === "pointRead" && request.region === "East US");
      abort();
    }],
  ];
  for (const [moment, abortAt] of moments) {
    it(`the SDK's abortSignal aborted ${moment}: the read rejects with AbortError at once, every arm sent is cut on the wire, and no rejection goes unhandled`, async function () {
      const { emulator } = fixture;
      const unhandled = catchUnhandled();
      try {
        const { container } = await fixture.client({ hedging, warmUp });
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
        emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slow });
        const controller = new AbortController();
        const started = performance.now();
        const reading = container.item(item.id, item.pk).read({ abortSignal: controller.signal });
        const rejected = assert.rejects(reading, (error: Error) => error.name === "AbortError");
        await abortAt(() => controller.abort(), emulator);
        await rejected;
        assert.ok(performance.now() - started < slow, "the read ended when it was aborted, not when the regions answered");
        const reads = await settledRequests(emulator, "pointRead");
        assert.ok(reads.every((read) => read.cutByClient), reads.map((read) => `${read.region} ${read.status} ${read.cutByClient}`).join(", "));
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(unhandled.seen, []);
      } finally {
        unhandled.stop();
      }
    });
  }
});
