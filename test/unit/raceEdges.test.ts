import assert from "node:assert/strict";
import { runRace } from "../../src/hedging/race.js";
import type { RaceOutcome, RaceStrategy, Verdict } from "../../src/hedging/race.js";
import { eastUs, northEurope, observe, pointRead, westUs } from "../support/hedgingFixtures.js";
import { useRaceHarness } from "../support/raceHarness.js";

/** The race engine where a strategy refuses, waits or throws, and where an arm's error is long. */
describe("race engine at its edges", () => {
  const harness = useRaceHarness();

  function strategy(overrides: Partial<RaceStrategy> = {}): RaceStrategy {
    return {
      delayBefore: () => 100,
      judge: (arm): Verdict => (arm.result.response !== undefined && arm.result.response.status < 400 ? "win" : "next"),
      earlyLaunchReason: "regionalFailure",
      ...overrides,
    };
  }

  function race(raceStrategy: RaceStrategy): ReturnType<typeof observe<RaceOutcome>> {
    return observe(
      runRace({
        request: pointRead(eastUs, harness.leaks.controller().signal),
        targets: [eastUs, westUs, northEurope],
        send: harness.transport.next,
        strategy: raceStrategy,
      }),
    );
  }

  it("returns the primary's outcome when its arm waits and the budget then refuses the hedge that would follow", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 10 });
    const outcome = race(strategy({ judge: () => "wait", admit: () => false }));
    await harness.clock.tickAsync(10);
    const state = outcome.state();
    assert.ok(state.done && "value" in state, "the race ended as soon as nothing was left in flight");
    assert.equal(state.value.kind, "decided");
    assert.ok(state.value.kind === "decided" && state.value.returnedIndex === 0 && state.value.fallback);
    assert.equal(state.value.hedgeRefused, true);
    assert.equal(harness.transport.received.length, 1);
  });

  it("a strategy that throws ends the race with its error, aborts the other arms and leaves no timer", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10 });
    const outcome = race(
      strategy({
        judge: (arm) => {
          if (arm.index === 1) throw new Error("a broken strategy");
          return "win";
        },
      }),
    );
    await harness.clock.tickAsync(110);
    const state = outcome.state();
    assert.ok(state.done && "error" in state, "the race rejected");
    assert.match(String((state as { error: unknown }).error), /a broken strategy/);
    assert.equal(harness.transport.received[0]?.signalAborted, true, "the primary was aborted");
    assert.equal(harness.clock.countTimers(), 0);
  });

  it("keeps at most 300 characters of an arm's error, thrown as an Error or as anything else", async () => {
    const long = `connect ECONNREFUSED ${"x".repeat(1000)}`;
    harness.transport.script(eastUs.endpoint, { error: new Error(long), delayMs: 5 });
    harness.transport.script(westUs.endpoint, { error: long, delayMs: 5 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 5 });
    const outcome = race(strategy());
    await harness.clock.tickAsync(20);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    const errors = state.value.arms.map((arm) => arm.error);
    assert.deepEqual(
      errors.map((error) => [error?.name, error?.message.length]),
      [
        ["Error", 300],
        ["string", 300],
        [undefined, undefined],
      ],
    );
    assert.ok(errors[0]?.message.startsWith("connect ECONNREFUSED"));
  });
});
