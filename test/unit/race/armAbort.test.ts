import assert from "node:assert/strict";
import type { AbortSignalLike } from "@azure/abort-controller";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { AbortError } from "@azure/abort-controller";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { armAbortFor, markForCoreTransport } from "../../../src/race/armAbort.js";
import { runRace } from "../../../src/race/hedgingRace.js";
import { DocumentRaceStrategy } from "../../../src/race/raceStrategies.js";
import { eastUs, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useFakeClock } from "../../support/leakCheck.js";
import { captureAzureLogs } from "../../support/logCapture.js";

/** A transport of the caller's that answers at once and records the abort signal of every request it gets. */
function recordingSignals(seen: AbortSignalLike[]): HttpClient {
  return {
    sendRequest: async (request) => {
      if (request.abortSignal !== undefined) seen.push(request.abortSignal);
      return { request, status: 200, headers: createHttpHeaders() };
    },
  };
}

/** A request of a client over core's own transport, whose arms get light signals. */
function markedRequest(): PipelineRequest {
  const request = pointRead(eastUs, new AbortController().signal);
  markForCoreTransport(request, true);
  return request;
}

describe("arm abort signals", () => {
  const regionsOf = { readRegions: [eastUs, westUs] };

  describe("the light signal of an arm bound for core's own transport", () => {
    it("is not a native AbortSignal, and a request nobody marked gets a native AbortController", () => {
      assert.equal(armAbortFor(markedRequest()) instanceof AbortController, false);
      assert.equal(armAbortFor(markedRequest()).signal instanceof AbortSignal, false);
      const native = armAbortFor(pointRead(eastUs));
      assert.ok(native instanceof AbortController);
      assert.ok(native.signal instanceof AbortSignal);
    });

    it("runs every listener once, in the order added, synchronously, with an abort event, and reads aborted from then on", () => {
      const arm = armAbortFor(markedRequest());
      const signal = arm.signal;
      const calls: string[] = [];
      const first = function (this: AbortSignalLike, event: { type: string; target: unknown }): void {
        calls.push(`first ${event.type} ${this === signal} ${event.target === signal} ${signal.aborted}`);
      };
      signal.addEventListener("abort", first);
      signal.addEventListener("abort", first);
      signal.addEventListener("abort", () => calls.push("second"), { once: true });
      signal.addEventListener("abort", { handleEvent: (event: { type: string }) => calls.push(`object ${event.type}`) } as never);
      assert.equal(signal.aborted, false);
      arm.abort();
      assert.deepEqual(calls, ["first abort true true true", "second", "object abort"]);
      arm.abort();
      assert.equal(calls.length, 3, "a second abort runs nothing");
      assert.equal(signal.aborted, true);
    });

    it("does not run a listener that was removed, or one added after the abort", () => {
      const arm = armAbortFor(markedRequest());
      const calls: string[] = [];
      const removed = (): number => calls.push("removed");
      arm.signal.addEventListener("abort", removed);
      arm.signal.addEventListener("abort", () => calls.push("kept"));
      arm.signal.removeEventListener("abort", removed);
      arm.signal.removeEventListener("abort", () => undefined);
      arm.abort();
      arm.signal.addEventListener("abort", () => calls.push("late"));
      assert.deepEqual(calls, ["kept"]);
    });

    it("logs a listener that throws, by the error's name only, and still runs the others", () => {
      const logs = captureAzureLogs("warning");
      try {
        const arm = armAbortFor(markedRequest());
        const calls: string[] = [];
        arm.signal.addEventListener("abort", () => {
          throw new TypeError("sig=secret");
        });
        arm.signal.addEventListener("abort", () => calls.push("after"));
        arm.abort();
        assert.deepEqual(calls, ["after"]);
        const warnings = logs.packageLines();
        assert.equal(warnings.length, 1);
        assert.match(warnings[0] ?? "", /abort listener of a hedge arm threw and was ignored: TypeError/);
        assert.doesNotMatch(warnings[0] ?? "", /secret/);
      } finally {
        logs.restore();
      }
    });

    it("aborts the loser of a decided race through its light signal, and leaves the winner's alone", async () => {
      const clock = useFakeClock();
      try {
        const request = markedRequest();
        const signals: AbortSignalLike[] = [];
        const send = (arm: PipelineRequest): Promise<PipelineResponse> => {
          const signal = arm.abortSignal;
          assert.ok(signal !== undefined);
          signals.push(signal);
          if (signals.length === 2) return Promise.resolve({ request: arm, status: 200, headers: createHttpHeaders() });
          // The primary hangs until it is aborted, as core's transport does with its listener.
          return new Promise((_, reject) => signal.addEventListener("abort", () => reject(new AbortError("aborted"))));
        };
        // Eager: the primary gets a signal of the race's, as it does wherever losers are aborted.
        const pending = runRace({
          request,
          primaryRegion: eastUs,
          hedges: () => [westUs],
          send,
          strategy: new DocumentRaceStrategy(100, 50, undefined),
          eager: true,
        });
        await clock.tickAsync(100);
        const outcome = await pending;
        assert.equal(outcome.kind === "decided" ? outcome.returnedIndex : undefined, 1);
        assert.ok(signals.every((signal) => !(signal instanceof AbortSignal)), "both arms of a marked request have light signals");
        assert.deepEqual(
          signals.map((signal) => signal.aborted),
          [true, false],
        );
        assert.equal(outcome.arms[0]?.aborted, true);
      } finally {
        clock.restore();
      }
    });
  });

  describe("the route a hedging client composes over its pipeline", () => {
    it("runs a policy added after the first request from the next request on, and not once it is removed", async () => {
      const seen: string[] = [];
      const transport: HttpClient = { sendRequest: async (request) => ({ request, status: 200, headers: createHttpHeaders() }) };
      const client = createHedgingHttpClient({ httpClient: transport, crossRegion: { threshold: 100 } });
      client.regions.setTopology(regionsOf);
      const send = (): Promise<unknown> => client.sendRequest(pointRead(eastUs, new AbortController().signal));
      await send();
      client.pipeline.addPolicy({ name: "mine", sendRequest: (request, next) => (seen.push(request.url), next(request)) });
      await send();
      await send();
      client.pipeline.removePolicy({ name: "mine" });
      await send();
      assert.equal(seen.length, 2);
    });
  });

  describe("which requests a hedging client marks", () => {
    it("none when the client runs over a transport of the caller's, which may need a native signal", async () => {
      const seen: AbortSignalLike[] = [];
      const transport = recordingSignals(seen);
      const client = createHedgingHttpClient({ httpClient: transport, crossRegion: { threshold: 100 } });
      client.regions.setTopology(regionsOf);
      const request = pointRead(eastUs, new AbortController().signal);
      await client.sendRequest(request);
      assert.equal(seen.length, 1);
      assert.ok(seen[0] instanceof AbortSignal);
      assert.ok(armAbortFor(request) instanceof AbortController);
    });

    it("every request while the pipeline holds the client's own policies only, none while the caller's policy is in it", async () => {
      const client = createHedgingHttpClient({ crossRegion: { threshold: 100 } });
      client.regions.setTopology(regionsOf);
      /** Hands a request to the client, which marks it as it takes it; the caller's signal is already aborted, so nothing is sent. */
      const take = async (): Promise<PipelineRequest> => {
        const controller = new AbortController();
        controller.abort();
        const request = pointRead(eastUs, controller.signal);
        await assert.rejects(client.sendRequest(request), { name: "AbortError" });
        return request;
      };
      assert.equal(armAbortFor(await take()) instanceof AbortController, false);
      const mine = { name: "mine", sendRequest: (request: PipelineRequest, next: (request: PipelineRequest) => Promise<never>) => next(request) };
      client.pipeline.addPolicy(mine as never);
      assert.ok(armAbortFor(await take()) instanceof AbortController, "a policy of the caller's below the race may need a native signal");
      client.pipeline.removePolicy({ name: "mine" });
      assert.equal(armAbortFor(await take()) instanceof AbortController, false);
    });

    it("not a request it marked before, when the request comes back (a retry of the same object) after a policy of the caller's was added", async () => {
      const client = createHedgingHttpClient({ crossRegion: { threshold: 100 } });
      client.regions.setTopology(regionsOf);
      const aborted = new AbortController();
      aborted.abort();
      const request = pointRead(eastUs, aborted.signal);
      // Taken and marked while the pipeline holds the client's own policies; the caller's abort keeps it off the wire.
      await assert.rejects(client.sendRequest(request), { name: "AbortError" });
      const seen: AbortSignalLike[] = [];
      client.pipeline.addPolicy({
        name: "mine",
        sendRequest: async (arm) => {
          if (arm.abortSignal !== undefined) seen.push(arm.abortSignal);
          return { request: arm, status: 200, headers: createHttpHeaders() };
        },
      });
      // core's retry and bearer-token policies send one request object again.
      request.abortSignal = new AbortController().signal;
      await client.sendRequest(request);
      assert.equal(seen.length, 1);
      assert.ok(seen[0] instanceof AbortSignal, "the caller's policy below the race must get a native signal");
    });

    it("not a request another hedging client marked, when it comes to one over the caller's transport", async () => {
      const own = createHedgingHttpClient({ crossRegion: { threshold: 100 } });
      own.regions.setTopology(regionsOf);
      const seen: AbortSignalLike[] = [];
      const transport = recordingSignals(seen);
      const overTheirs = createHedgingHttpClient({ httpClient: transport, crossRegion: { threshold: 100 } });
      overTheirs.regions.setTopology(regionsOf);
      const aborted = new AbortController();
      aborted.abort();
      const request = pointRead(eastUs, aborted.signal);
      await assert.rejects(own.sendRequest(request), { name: "AbortError" });
      request.abortSignal = new AbortController().signal;
      await overTheirs.sendRequest(request);
      assert.equal(seen.length, 1);
      assert.ok(seen[0] instanceof AbortSignal, "a transport of the caller's (fetch) must get a native signal");
    });
  });
});

describe("the light signal's listeners", () => {
  it("takes only abort listeners that are functions or have handleEvent, ignoring the rest without a throw", () => {
    const logs = captureAzureLogs("warning");
    try {
      const arm = armAbortFor(markedRequest());
      const calls: string[] = [];
      const add = arm.signal.addEventListener as (type: string, listener: unknown) => void;
      add.call(arm.signal, "other", () => calls.push("other type"));
      add.call(arm.signal, "abort", {});
      add.call(arm.signal, "abort", null);
      add.call(arm.signal, "abort", { handleEvent: "not a function" });
      add.call(arm.signal, "abort", () => calls.push("abort"));
      arm.abort();
      assert.deepEqual(calls, ["abort"]);
      assert.deepEqual(logs.packageLines(), [], "no listener it should not have taken ran");
    } finally {
      logs.restore();
    }
  });

  it("removes a listener only for the abort type, and only that listener", () => {
    const arm = armAbortFor(markedRequest());
    const calls: string[] = [];
    const first = (): number => calls.push("first");
    const second = (): number => calls.push("second");
    const third = (): number => calls.push("third");
    arm.signal.removeEventListener("abort", first);
    arm.signal.addEventListener("abort", first);
    arm.signal.addEventListener("abort", second);
    arm.signal.addEventListener("abort", third);
    (arm.signal.removeEventListener as (type: string, listener: unknown) => void).call(arm.signal, "other", first);
    arm.signal.removeEventListener("abort", () => undefined);
    arm.signal.removeEventListener("abort", third);
    arm.abort();
    assert.deepEqual(calls, ["first", "second"]);
  });

  it("writes no mark on a request bound elsewhere that was never marked, and clears a mark once set", () => {
    const request = pointRead(eastUs);
    const ownSymbols = Object.getOwnPropertySymbols(request).length;
    markForCoreTransport(request, false);
    assert.equal(Object.getOwnPropertySymbols(request).length, ownSymbols, "nothing is added for a request that keeps its native signal");
    assert.ok(armAbortFor(request) instanceof AbortController);
    markForCoreTransport(request, true);
    assert.equal(armAbortFor(request) instanceof AbortController, false);
    markForCoreTransport(request, false);
    assert.ok(armAbortFor(request) instanceof AbortController);
  });
});
