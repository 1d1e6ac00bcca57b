import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { ArmResult } from "../../../src/cosmos/statusTables.js";
import { PendingRead } from "../../../src/race/pendingRead.js";
import { ThresholdTimers } from "../../../src/race/thresholdTimers.js";
import type { PendingRace, PendingReadHost } from "../../../src/race/pendingRead.js";
import { eastUs, observe, pointRead } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

const threshold = 100;

/** What the host was asked, in order. */
type HostCall = "noteSettled" | "endsAlone" | "concludeAlone" | `promote(${boolean})` | `primaryEnded(${string})`;

/** A host that records what it is asked and races nothing: its race answers what the test tells it to. */
function recordingHost(options: { final?: (status: number) => boolean; conclude?: () => never; promote?: () => never } = {}) {
  const calls: HostCall[] = [];
  let answer: { resolve: (response: PipelineResponse) => void; reject: (error: unknown) => void } | undefined;
  const ended: ArmResult[] = [];
  const host: PendingReadHost = {
    timers: new ThresholdTimers(),
    noteSettled: () => void calls.push("noteSettled"),
    endsAlone: (_read, response) => {
      calls.push("endsAlone");
      return (options.final ?? ((status) => status < 400))(response.status);
    },
    concludeAlone: (_read, response) => {
      calls.push("concludeAlone");
      if (options.conclude !== undefined) options.conclude();
      return response;
    },
    promote: (_read, thresholdPassed): PendingRace => {
      calls.push(`promote(${thresholdPassed})`);
      if (options.promote !== undefined) options.promote();
      return {
        answer: new Promise<PipelineResponse>((resolve, reject) => (answer = { resolve, reject })),
        primaryEnded: (result) => {
          ended.push(result);
          calls.push(`primaryEnded(${result.response === undefined ? "error" : String(result.response.status)})`);
        },
      };
    },
  };
  return {
    host,
    calls,
    ended,
    raceAnswers: (response: PipelineResponse) => answer?.resolve(response),
    raceFails: (error: unknown) => answer?.reject(error),
  };
}

function response(request: PipelineRequest, status: number): PipelineResponse {
  return { request, status, headers: createHttpHeaders() };
}

/** A transport whose answer the test gives, when it likes. */
function heldTransport() {
  let settle: { resolve: (response: PipelineResponse) => void; reject: (error: unknown) => void } | undefined;
  const sent: PipelineRequest[] = [];
  return {
    sent,
    send: (request: PipelineRequest) => {
      sent.push(request);
      return new Promise<PipelineResponse>((resolve, reject) => (settle = { resolve, reject }));
    },
    answer: (status: number) => settle?.resolve(response(sent[0]!, status)),
    fail: (error: unknown) => settle?.reject(error),
  };
}

/** Asserts that the caller's answer rejected with `message`. */
function assertRejectedWith(answered: ReturnType<typeof observe<PipelineResponse>>, message: string): void {
  const state = answered.state();
  assert.ok(state.done && "error" in state && (state.error as Error).message === message, `rejected with ${message}`);
}

/** A pending read started over a held transport, with a host whose `step` throws `message`. */
function startedWithFault(step: "promote" | "conclude", message: string) {
  const host = recordingHost({
    [step]: () => {
      throw new Error(message);
    },
  });
  const transport = heldTransport();
  const answered = observe(new PendingRead(pointRead(eastUs), eastUs, threshold, host.host).start(transport.send));
  return { host, transport, answered };
}

describe("PendingRead", () => {
  const harness = useRaceHarness();

  /** A pending read over a held transport and a recording host, its threshold just passed. */
  async function pastThreshold() {
    const request = pointRead(eastUs);
    const host = recordingHost();
    const transport = heldTransport();
    const answered = observe(new PendingRead(request, eastUs, threshold, host.host).start(transport.send));
    await harness.clock.tickAsync(threshold);
    return { request, host, transport, answered };
  }

  it("sends the caller's request itself, and ends alone on a final answer before the threshold: no race built, its timer gone", async () => {
    const request = pointRead(eastUs);
    const host = recordingHost();
    const transport = heldTransport();
    const read = new PendingRead(request, eastUs, threshold, host.host, performance.now());
    const answered = observe(read.start(transport.send));
    assert.equal(transport.sent[0], request, "the request the caller built, not a copy");
    await harness.clock.tickAsync(threshold - 1);
    transport.answer(200);
    await harness.clock.tickAsync(0);
    const state = answered.state();
    assert.ok(state.done && "value" in state && state.value.status === 200);
    assert.deepEqual(host.calls, ["noteSettled", "endsAlone", "concludeAlone"]);
    assert.equal(harness.clock.countTimers(), 0, "the threshold timer is cleared");
    assert.ok(read.endedAt !== undefined && read.endedAt - read.startedAt === threshold - 1);
  });

  it("becomes a race when the threshold passes, adopting the primary in flight: its settlement goes to the race, whose answer the caller gets", async () => {
    const { request, host, transport, answered } = await pastThreshold();
    assert.deepEqual(host.calls, ["promote(true)"]);
    transport.answer(200);
    await harness.clock.tickAsync(0);
    assert.deepEqual(host.calls, ["promote(true)", "noteSettled", "primaryEnded(200)"], "a race decides, not the read");
    assert.equal(answered.state().done, false, "the caller waits for the race");
    host.raceAnswers(response(request, 299));
    await harness.clock.tickAsync(0);
    const state = answered.state();
    assert.ok(state.done && "value" in state && state.value.status === 299);
  });

  it("answers from the race as soon as it decides, while the adopted primary still runs", async () => {
    const { request, host, transport, answered } = await pastThreshold();
    host.raceAnswers(response(request, 201));
    await harness.clock.tickAsync(0);
    const state = answered.state();
    assert.ok(state.done && "value" in state && state.value.status === 201);
    transport.answer(200);
    await harness.clock.tickAsync(0);
    assert.deepEqual(host.calls.slice(-1), ["primaryEnded(200)"], "the primary's late settlement still reaches its race (to drain it)");
  });

  for (const [what, settle, expected] of [
    ["an answer its host leaves to the race (a 503 here; the policy's host does so only for a caller that aborted)", (transport: ReturnType<typeof heldTransport>) => transport.answer(503), "primaryEnded(503)"],
    ["a transport error", (transport: ReturnType<typeof heldTransport>) => transport.fail(new Error("ECONNRESET")), "primaryEnded(error)"],
  ] as const) {
    it(`becomes a race at once on ${what} before the threshold, which judges the primary's result`, async () => {
      const host = recordingHost();
      const transport = heldTransport();
      const answered = observe(new PendingRead(pointRead(eastUs), eastUs, threshold, host.host).start(transport.send));
      await harness.clock.tickAsync(10);
      settle(transport);
      await harness.clock.tickAsync(0);
      assert.deepEqual(host.calls.filter((call) => call !== "endsAlone"), ["noteSettled", "promote(false)", expected]);
      assert.equal(harness.clock.countTimers(), 0, "the threshold timer went with the pending read");
      host.raceFails(new Error("the race's own outcome"));
      await harness.clock.tickAsync(0);
      assertRejectedWith(answered, "the race's own outcome");
    });
  }

  it("treats a send that throws as a failed primary", async () => {
    const host = recordingHost();
    const read = new PendingRead(pointRead(eastUs), eastUs, threshold, host.host);
    observe(
      read.start(() => {
        throw new Error("thrown, not rejected");
      }),
    ).result().catch(() => undefined);
    await harness.clock.tickAsync(0);
    assert.deepEqual(host.calls, ["noteSettled", "promote(false)", "primaryEnded(error)"]);
    host.raceFails(new Error("done"));
    await harness.clock.tickAsync(0);
  });

  it("rejects with the host's fault when the race cannot be built, and ignores the primary that settles afterwards", async () => {
    const { host, transport, answered } = startedWithFault("promote", "a strategy fault");
    await harness.clock.tickAsync(threshold);
    assertRejectedWith(answered, "a strategy fault");
    transport.answer(200);
    await harness.clock.tickAsync(0);
    assert.deepEqual(host.calls, ["promote(true)", "noteSettled"], "no second race for a read that already failed");
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("rejects with the host's fault when concluding a lone answer fails", async () => {
    const { transport, answered } = startedWithFault("conclude", "publishing failed");
    transport.answer(200);
    await harness.clock.tickAsync(0);
    assertRejectedWith(answered, "publishing failed");
    assert.equal(harness.clock.countTimers(), 0);
  });
});
