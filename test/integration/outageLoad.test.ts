import assert from "node:assert/strict";
import type { ConnectionPolicy } from "@azure/cosmos";
import type { FaultRule } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
const preferredLocations = ["West US", "East US", "North Europe"];
const regions = ["East US", "West US", "North Europe"];
const reads = 3;

/**
 * Issue 22 item 5: in a total outage a quiet client (too few requests for the
 * load budget to bind) sends at most twice the requests plain @azure/cosmos
 * sends, across the SDK's own retries. Before, a transient result launched
 * every region left at once, and each SDK retry began such a race again
 * (2.83x under 503).
 */
describe("bounded load in a total outage, for a quiet client (issue 22 item 5)", function () {
  this.timeout(120_000);
  const fixture = useEmulator({ items, preferredLocations });

  /** The point-read requests that reached any region for `reads` reads of a client, every region faulted alike. */
  async function requestsFor(hedging: boolean, fault: FaultRule, connectionPolicy: Omit<ConnectionPolicy, "preferredLocations">, deadlineMs?: number): Promise<number> {
    const { container } = await fixture.client({
      hedging: hedging ? {} : false,
      connectionPolicy,
      warmUp: { id: "item-0", pk: "pk-0" },
    });
    const faults = regions.map((name) => fixture.emulator.region(name).addFault({ operations: ["pointRead"], ...fault }));
    try {
      for (let i = 0; i < reads; i++) {
        // The SDK retries a timed-out read up to 120 times: a caller's deadline ends it, the same for both clients.
        const options = deadlineMs === undefined ? {} : { abortSignal: AbortSignal.timeout(deadlineMs) };
        await container.item(`item-${i + 1}`, `pk-${(i + 1) % 3}`).read(options).then(
          () => assert.fail("a read succeeded in a total outage"),
          (error: unknown) => assert.ok(error instanceof Error),
        );
      }
      await fixture.emulator.idle();
      return fixture.emulator.count("pointRead");
    } finally {
      for (const handle of faults) handle.remove();
      fixture.emulator.resetCounters();
    }
  }

  const outages: ReadonlyArray<readonly [string, FaultRule, Omit<ConnectionPolicy, "preferredLocations">, number | undefined]> = [
    ["every region answering 503", { status: 503 }, {}, undefined],
    // Attempts of 300 ms (the hedge threshold half of that), every region 1 s late; each read is given 2 s.
    ["every region timing out", { delayMs: 1000 }, { requestTimeout: 300 }, 2000],
    [
      "429 everywhere",
      { status: 429, headers: { "x-ms-retry-after-ms": "10" } },
      { retryOptions: { maxRetryAttemptCount: 3, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 10 } },
      undefined,
    ],
  ];
  for (const [label, fault, connectionPolicy, deadlineMs] of outages) {
    it(`${label}: at most 2x the requests of plain @azure/cosmos`, async function () {
      const plain = await requestsFor(false, fault, connectionPolicy, deadlineMs);
      const hedged = await requestsFor(true, fault, connectionPolicy, deadlineMs);
      assert.ok(plain > 0);
      assert.ok(hedged <= 2 * plain, `${label}: ${hedged} requests hedged, ${plain} plain (${(hedged / plain).toFixed(2)}x)`);
    });
  }
});
