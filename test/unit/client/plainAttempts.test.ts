import assert from "node:assert/strict";
import { AbortError } from "@azure/abort-controller";
import type { HttpClient, PipelineRequest } from "@azure/core-rest-pipeline";
import { buildHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import type { HedgingOptions } from "../../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { getHedgingDetection } from "../../../src/diagnostics/detection.js";
import { stateIfAny } from "../../../src/request/requestState.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { FakeTransport } from "../../support/fakeTransport.js";
import type { ScriptStep } from "../../support/fakeTransport.js";
import { eastUs, northEurope, observe, pointRead, query, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

const threshold = 100;

/** What an @azure/cosmos operation returned to the test, or threw. */
interface Outcome {
  readonly status?: number;
  readonly error?: string;
  readonly record: unknown;
  readonly requested: unknown;
  readonly responded: unknown;
  readonly charge: number | undefined;
  /** The operation's last record as the detection record serializes it. */
  readonly serialized: unknown;
}

/**
 * A `withHedging` client over a fake core transport, driven as @azure/cosmos
 * drives it: the operation plugin around the attempt, the request plugin,
 * then the client called in the same synchronous run with the request the
 * SDK built (its agent pools sockets). With `plain: false` the request
 * plugin never marks an attempt plain, so every request goes the full way:
 * the same client, options and script, the other path.
 */
function sdkClient(transport: HttpClient, plain: boolean, hedging: HedgingOptions = {}) {
  // As withHedging builds it: the client and the @azure/cosmos plugins that hand it each attempt.
  const { client, plugins } = buildHedgingHttpClient(
    { crossRegion: { threshold, thresholdStep: threshold }, metadata: false, ...hedging, preferredRegions: ["East US", "West US", "North Europe"] },
    { mayBePlain: plain ? () => true : undefined },
    transport,
  );
  client.regions.setTopology({ readRegions: [eastUs, westUs, northEurope] });
  /** The plugins of one phase run in their order, as @azure/cosmos runs them, around `last`. */
  const phase = (on: "operation" | "request", context: object, last: () => Promise<unknown>): Promise<unknown> =>
    plugins
      .filter((plugin) => plugin.on === on)
      .reduceRight<(passed: object) => Promise<unknown>>((next, plugin) => (passed) => plugin.plugin(passed as never, undefined, next as never), last)(context);
  /** One operation of one attempt; `kind` is what the SDK's context says of it. */
  const run = (
    request: PipelineRequest,
    kind: { resourceType: string; operationType: string } = { resourceType: "docs", operationType: "read" },
    options: { excludedLocations?: string[]; initialHeaders?: Record<string, string> } = {},
    /** Sent as one of the SDK's retries (its retry count is not 0). */
    retry = false,
  ): Promise<Outcome> => {
    request.agent = { sockets: {}, maxSockets: Infinity, maxTotalSockets: Infinity } as unknown as NonNullable<PipelineRequest["agent"]>;
    // The SDK copies initialHeaders into the request it builds.
    for (const [name, value] of Object.entries(options.initialHeaders ?? {})) request.headers.set(name, value);
    const context = { headers: {}, options, httpClient: client, plugins, method: request.method, ...kind, ...(retry ? { retryCount: Number.NaN } : {}) };
    const outcome = phase("operation", context, () =>
      phase("request", context, async () => {
        const response = await client.sendRequest(request);
        if (response.status >= 400) throw Object.assign(new Error(`status ${response.status}`), { code: response.status, headers: response.headers.toJSON() });
        return { headers: response.headers.toJSON(), code: response.status };
      }),
    ) as Promise<{ headers: Record<string, string>; code: number }>;
    return outcome.then(
      (result) => describeOutcome(result, { status: result.code }),
      (error: Error & { code?: number }) => describeOutcome(error, { error: `${error.name}: ${typeof error.code === "number" ? error.code : error.message}` }),
    );
  };
  return { client, run };
}

function describeOutcome(value: object, how: { status?: number; error?: string }): Outcome {
  const detection = getHedgingDetection(value);
  const serialized = detection === undefined ? undefined : (JSON.parse(JSON.stringify(detection)) as { lastRecord?: unknown }).lastRecord;
  return { ...how, record: getHedgeDiagnostics(value), requested: detection?.requestedRegions(), responded: detection?.respondedRegions(), charge: detection?.requestCharge, serialized };
}

describe("plain attempts of @azure/cosmos: sent lazily, ending as the full way ends", () => {
  const harness = useRaceHarness();

  /** Runs one scenario on both paths, one after the other on the fake clock, and returns both outcomes and metrics. */
  async function both(
    script: (transport: FakeTransport) => void,
    drive: (run: ReturnType<typeof sdkClient>["run"], transport: FakeTransport) => Promise<Outcome>,
    hedging: HedgingOptions = {},
  ) {
    const results = [];
    for (const plain of [true, false]) {
      const transport = new FakeTransport();
      script(transport);
      const { client, run } = sdkClient(transport, plain, hedging);
      const outcome = await drive(run, transport);
      // Every drained loser ends, so that both metrics are final.
      await harness.clock.tickAsync(10_000);
      results.push({ outcome, metrics: client.metrics(), received: transport.received.map((each) => `${each.origin} ${each.outcome}`), primary: transport.received[0]?.request });
    }
    const [lazy, full] = results as [(typeof results)[0], (typeof results)[0]];
    assert.deepEqual(lazy.outcome, full.outcome, "the same outcome, record and detection");
    assert.deepEqual(lazy.metrics, full.metrics, "the same metrics");
    assert.deepEqual(lazy.received, full.received, "the same requests, ended the same way");
    return { lazy, full };
  }

  const answering = (...steps: ScriptStep[]) => (transport: FakeTransport) => transport.script(eastUs.endpoint, ...steps);
  /** East US, the primary's region, answers `primary`; West US, the first hedge's, answers `hedge`. */
  const primaryThenHedge = (primary: ScriptStep, hedge: ScriptStep) => (transport: FakeTransport) => {
    transport.script(eastUs.endpoint, primary);
    transport.script(westUs.endpoint, hedge);
  };

  /** Drives one read to its end on the fake clock. */
  const settle = async (
    run: ReturnType<typeof sdkClient>["run"],
    request: PipelineRequest,
    kind?: { resourceType: string; operationType: string },
    options?: Parameters<ReturnType<typeof sdkClient>["run"]>[2],
  ) => {
    const pending = observe(run(request, kind, options));
    await harness.clock.tickAsync(5_000);
    return pending.result();
  };

  it("a read answered before the threshold: nothing kept on the request, the record built only when read, and the same as the full way's", async () => {
    const { lazy } = await both(answering({ status: 200, requestCharge: 1.5, delayMs: 10 }), (run) => settle(run, pointRead(eastUs)));
    assert.equal(lazy.outcome.status, 200);
    assert.equal(stateIfAny(lazy.primary!), undefined, "the lazy way kept nothing on the caller's request");
    assert.deepEqual(lazy.outcome.requested, [{ region: "East US", reason: "initial" }]);
    assert.equal(lazy.outcome.charge, 1.5);
  });

  it("the record a detection record serializes is the record itself, built or deferred", async () => {
    const { lazy } = await both(answering({ status: 200, delayMs: 2 }), (run) => settle(run, pointRead(eastUs)));
    assert.deepEqual(lazy.outcome.serialized, lazy.outcome.record);
  });

  it("a caller that aborted before the read is sent: handed to the transport as it is, which refuses it, as the full way", async () => {
    const { lazy } = await both(answering(), async (run) => {
      const caller = new AbortController();
      caller.abort();
      return settle(run, pointRead(eastUs, caller.signal));
    });
    assert.equal(lazy.outcome.error, "AbortError: The operation was aborted. Request has already been canceled.", "the transport's own refusal");
    assert.deepEqual(lazy.outcome.requested, [{ region: "East US", reason: "initial" }]);
    assert.deepEqual(lazy.received, [`${new URL(eastUs.endpoint).origin} aborted`]);
  });

  it("reads won alone, then one sent the full way: the metrics count them in the order they came", async () => {
    await both(answering({ status: 200, delayMs: 1 }, { status: 200, delayMs: 1 }, { status: 200, delayMs: 1 }), async (run, transport) => {
      for (let read = 0; read < 2; read++) await settle(run, pointRead(eastUs));
      transport.script(westUs.endpoint, { status: 200, delayMs: 1 });
      await settle(run, pointRead(westUs), undefined, { initialHeaders: hedgingRequestOptions({ hedging: false }).initialHeaders });
      return settle(run, pointRead(eastUs));
    });
  });

  it("a query answered before the threshold, classified by its path as the full way does", async () => {
    await both(answering({ status: 200, delayMs: 3 }), (run) => settle(run, query(eastUs), { resourceType: "docs", operationType: "query" }));
  });

  it("a primary slower than the threshold: the hedge goes at the threshold, and its answer wins the same way", async () => {
    const { lazy } = await both(
      primaryThenHedge({ status: 200, delayMs: 400 }, { status: 200, delayMs: 20 }),
      (run) => settle(run, pointRead(eastUs)),
    );
    const record = lazy.outcome.record as { terminalState: string; arms: Array<{ region: string; reason: string; startOffsetMs: number }> };
    assert.equal(record.terminalState, "hedgeWon");
    assert.deepEqual(record.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs]), [["East US", "primary", 0], ["West US", "threshold", threshold]]);
  });

  it("a fast 503: it goes back at once, unhedged, as the full way's does", async () => {
    const { lazy } = await both(
      primaryThenHedge({ status: 503, delayMs: 5 }, { status: 200, delayMs: 10 }),
      (run) => settle(run, pointRead(eastUs)),
    );
    assert.equal(lazy.outcome.error, "Error: 503", "the SDK gets the 503 to retry, as it would unhedged");
    const record = lazy.outcome.record as { hedgeFired: boolean; terminalState: string; arms: Array<{ region: string; reason: string; status?: number; durationMs?: number }> };
    assert.equal(record.hedgeFired, false);
    assert.equal(record.terminalState, "primaryOutcome");
    assert.deepEqual(record.arms.map((arm) => [arm.region, arm.reason, arm.status, arm.durationMs]), [["East US", "primary", 503, 5]]);
    assert.deepEqual(lazy.received, [`${new URL(eastUs.endpoint).origin} response`], "no hedge sent");
  });

  for (const [what, answer, learned] of [
    ["a 429 with its sub-status and retry-after", { status: 429, subStatus: 3200, requestCharge: 0.5, activityId: "act-429", headers: { "x-ms-retry-after-ms": "40" } }, "error"],
    ["a 408", { status: 408, requestCharge: 1 }, "timeout"],
  ] as const) {
    it(`${what} before the threshold goes back at once, concluded without a race, recorded and learned (${learned}) as the full way's`, async () => {
      const { lazy, full } = await both(
        primaryThenHedge({ ...answer, delayMs: 7 }, { status: 200, delayMs: 10 }),
        (run) => settle(run, pointRead(eastUs)),
      );
      assert.equal(lazy.outcome.error, `Error: ${answer.status}`, "the SDK gets the answer to retry, as it would unhedged");
      assert.equal(stateIfAny(lazy.primary!), undefined, "no race was built: nothing kept on the caller's request");
      assert.notEqual(stateIfAny(full.primary!), undefined, "the full way's race kept its state on the request");
      const record = lazy.outcome.record as { terminalState: string; hedgeFired: boolean; arms: Array<{ status?: number; subStatus?: number; activityId?: string; durationMs?: number }> };
      assert.equal(record.terminalState, "primaryOutcome");
      assert.equal(record.hedgeFired, false);
      assert.deepEqual(
        record.arms.map((arm) => [arm.status, arm.subStatus, arm.durationMs]),
        [[answer.status, "subStatus" in answer ? answer.subStatus : undefined, 7]],
      );
      assert.deepEqual(lazy.received, [`${new URL(eastUs.endpoint).origin} response`], "no hedge sent");
    });
  }

  it("a hedge's fast 503: the next hedge goes at once, as the full way's does", async () => {
    const { lazy } = await both(
      (transport) => {
        transport.script(eastUs.endpoint, { status: 200, delayMs: 1_000 });
        transport.script(westUs.endpoint, { status: 503, delayMs: 5 });
        transport.script(northEurope.endpoint, { status: 200, delayMs: 10 });
      },
      (run) => settle(run, pointRead(eastUs)),
    );
    const record = lazy.outcome.record as { terminalState: string; arms: Array<{ region: string; reason: string; startOffsetMs: number }> };
    assert.equal(record.terminalState, "hedgeWon");
    assert.deepEqual(record.arms.map((arm) => [arm.region, arm.reason, arm.startOffsetMs]), [
      ["East US", "primary", 0],
      ["West US", "threshold", threshold],
      ["North Europe", "transientResult", threshold + 5],
    ]);
  });

  it("a fast final error (404/0) ends the race alone, and the SDK gets it", async () => {
    const { lazy } = await both(answering({ status: 404, delayMs: 5 }), (run) => settle(run, pointRead(eastUs)));
    assert.equal(lazy.outcome.error, "Error: 404");
  });

  it("a transport error before the threshold goes back at once, unhedged", async () => {
    const { lazy } = await both(
      primaryThenHedge({ error: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), delayMs: 5 }, { status: 200, delayMs: 10 }),
      (run) => settle(run, pointRead(eastUs)),
    );
    assert.equal(lazy.outcome.error, "Error: connect ECONNREFUSED", "the SDK gets the transport error to retry, as it would unhedged");
    const record = lazy.outcome.record as { hedgeFired: boolean; arms: Array<{ region: string; durationMs?: number }> };
    assert.equal(record.hedgeFired, false);
    assert.deepEqual(record.arms.map((arm) => [arm.region, arm.durationMs]), [["East US", 5]]);
    assert.deepEqual(lazy.received, [`${new URL(eastUs.endpoint).origin} error`], "no hedge sent");
  });

  it("the caller's abort before the threshold: an AbortError, the primary aborted, nothing hedged", async () => {
    const { lazy } = await both(answering({ status: 200, delayMs: 1_000 }), async (run) => {
      const caller = new AbortController();
      const pending = observe(run(pointRead(eastUs, caller.signal)));
      await harness.clock.tickAsync(50);
      caller.abort();
      await harness.clock.tickAsync(100);
      return pending.result();
    });
    assert.equal(lazy.outcome.error, "AbortError: The operation was aborted. Rejecting from abort signal callback while making request.");
    assert.deepEqual(lazy.received, [`${new URL(eastUs.endpoint).origin} aborted`]);
  });

  it("the caller's abort before the threshold: the caller gets the transport's own AbortError, as it would unhedged", async () => {
    const own = new AbortError("aborted, in this transport's words");
    const transport: HttpClient = {
      sendRequest: (request) => new Promise((_, reject) => request.abortSignal?.addEventListener("abort", () => reject(own), { once: true })),
    };
    const { run } = sdkClient(transport, true);
    const caller = new AbortController();
    const pending = observe(run(pointRead(eastUs, caller.signal)));
    await harness.clock.tickAsync(50);
    caller.abort();
    await harness.clock.tickAsync(0);
    assert.equal((await pending.result()).error, "AbortError: aborted, in this transport's words");
  });

  it("the caller's abort after a hedge went: every arm cut, as the full way cuts them", async () => {
    await both(
      primaryThenHedge({ status: 200, delayMs: 1_000 }, { status: 200, delayMs: 1_000 }),
      async (run) => {
        const caller = new AbortController();
        const pending = observe(run(pointRead(eastUs, caller.signal)));
        await harness.clock.tickAsync(threshold + 50);
        caller.abort();
        await harness.clock.tickAsync(100);
        return pending.result();
      },
    );
  });

  it("a primary that wins after the threshold leaves the hedge to drain, and the record says so the same way", async () => {
    const { lazy } = await both(
      primaryThenHedge({ status: 200, delayMs: 150 }, { status: 200, delayMs: 500 }),
      (run) => settle(run, pointRead(eastUs)),
    );
    const record = lazy.outcome.record as { terminalState: string; final: boolean; arms: Array<{ outcome: string }> };
    assert.equal(record.terminalState, "primaryWon");
    assert.deepEqual(record.arms.map((arm) => arm.outcome), ["returned", "drained"]);
    assert.equal(record.final, true, "completed in place once the drain ended");
  });

  // Metadata hedging stays on: with both kinds off, off means off (below).
  it("data-plane hedging off: the record says disabled, the same way, and is built only when read", async () => {
    const { lazy } = await both(answering({ status: 200, requestCharge: 2, delayMs: 1 }), (run) => settle(run, pointRead(eastUs)), { crossRegion: false, metadata: true });
    assert.equal((lazy.outcome.record as { skipReason: string }).skipReason, "disabled");
    assert.equal(stateIfAny(lazy.primary!), undefined, "the lazy way kept nothing on the caller's request");
  });

  for (const [what, step] of [
    ["an error answer", { status: 404, delayMs: 1 }],
    ["a transport error", { error: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), delayMs: 1 }],
  ] as const) {
    it(`data-plane hedging off, ${what}: the same record on the error, and the same detection`, async () => {
      const { lazy } = await both(answering(step), (run) => settle(run, pointRead(eastUs)), { crossRegion: false, metadata: true });
      assert.ok(lazy.outcome.error !== undefined);
      assert.equal((lazy.outcome.record as { skipReason: string }).skipReason, "disabled");
    });
  }


  describe("both kinds of hedging off: off means off", () => {
    const off: HedgingOptions = { crossRegion: false, metadata: false };

    it("a plain operation is the SDK's alone: its request goes out untouched, and nothing is kept of it", async () => {
      const transport = new FakeTransport().script(eastUs.endpoint, { status: 200, delayMs: 3 });
      const { client, run } = sdkClient(transport, true, off);
      const request = pointRead(eastUs);
      const pending = observe(run(request));
      await harness.clock.tickAsync(10);
      const outcome = await pending.result();
      assert.equal(outcome.status, 200);
      assert.equal(outcome.record, undefined, "no diagnostics record");
      assert.equal(outcome.requested, undefined, "no detection record");
      assert.equal(transport.received[0]?.request, request);
      assert.equal(stateIfAny(request), undefined);
      assert.equal(client.metrics().requests, 0);
      assert.equal(transport.received[0]?.headers["x-cosmos-hedging-diagnostics"], undefined);
    });

    it("an SDK retry of such an operation (after a 503, a 429) is the SDK's alone too: nothing kept of it either", async () => {
      const transport = new FakeTransport().script(westUs.endpoint, { status: 200, delayMs: 3 });
      const { client, run } = sdkClient(transport, true, off);
      const pending = observe(run(pointRead(westUs), undefined, {}, true));
      await harness.clock.tickAsync(10);
      const outcome = await pending.result();
      assert.equal(outcome.status, 200);
      assert.equal(outcome.record, undefined, "no diagnostics record of the retry");
      assert.equal(outcome.requested, undefined, "no detection record");
      assert.equal(client.metrics().requests, 0);
    });

    it("an operation that asks something of the client (its excludedLocations) is recorded as before, its record saying disabled", async () => {
      const transport = new FakeTransport().script(eastUs.endpoint, { status: 200, delayMs: 3 });
      const { run } = sdkClient(transport, true, off);
      const pending = observe(run(pointRead(eastUs), undefined, { excludedLocations: ["West US"] }));
      await harness.clock.tickAsync(10);
      const outcome = await pending.result();
      assert.equal((outcome.record as { skipReason?: string } | undefined)?.skipReason, "disabled");
      assert.deepEqual(outcome.requested, [{ region: "East US", reason: "initial" }]);
    });

    it("while the client steers (its own excluded regions), every operation is recorded and steered as before", async () => {
      const transport = new FakeTransport().script(westUs.endpoint, { status: 200, delayMs: 3 });
      const { client, run } = sdkClient(transport, true, off);
      client.regions.setExcludedRegions(["East US"]);
      const pending = observe(run(pointRead(eastUs)));
      await harness.clock.tickAsync(10);
      const outcome = await pending.result();
      assert.equal(outcome.status, 200);
      assert.deepEqual(outcome.requested, [{ region: "West US", reason: "initial" }], "re-pointed away from the excluded region, and recorded");
    });
  });
});
