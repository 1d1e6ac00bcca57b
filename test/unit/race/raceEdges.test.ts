import assert from "node:assert/strict";
import { describeArm } from "../../../src/diagnostics/diagnosticsRecord.js";
import type { HedgeArmDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { runRace } from "../../../src/race/hedgingRace.js";
import type { RaceOutcome, RaceStrategy, Verdict } from "../../../src/race/race.js";
import { eastUs, northEurope, observe, pointRead, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";

/** The public records of a race's arms, as the edge describes them. */
function describedArms(outcome: RaceOutcome): HedgeArmDiagnostics[] {
  return outcome.arms.map((arm) => describeArm(arm, outcome.startedAt, outcome.kind === "decided" ? outcome.returnedIndex : undefined));
}

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
        primaryRegion: eastUs,
        hedges: () => [westUs, northEurope],
        send: harness.transport.next,
        strategy: raceStrategy,
      }),
    );
  }

  it("returns the primary's outcome when its arm waits, without asking the budget for a hedge (nothing launches once nothing is in flight)", async () => {
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 10 });
    const outcome = race(strategy({ judge: () => "wait", admit: () => false }));
    await harness.clock.tickAsync(10);
    const state = outcome.state();
    assert.ok(state.done && "value" in state, "the race ended as soon as nothing was left in flight");
    assert.equal(state.value.kind, "decided");
    assert.ok(state.value.kind === "decided" && state.value.returnedIndex === 0 && state.value.fallback);
    assert.equal(state.value.hedgeRefused, false);
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
    // West goes out at the threshold (100 ms); East's error at 103 ms brings North Europe forward; West fails while North is out.
    harness.transport.script(eastUs.endpoint, { error: new Error(long), delayMs: 103 });
    harness.transport.script(westUs.endpoint, { error: long, delayMs: 5 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 5 });
    const outcome = race(strategy());
    await harness.clock.tickAsync(110);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    const errors = describedArms(state.value).map((arm) => arm.error);
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

  it("times each arm from the race's start, whenever on the clock the race starts", async () => {
    await harness.clock.tickAsync(12_345);
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 30 });
    const outcome = race(strategy());
    await harness.clock.tickAsync(130);
    const state = outcome.state();
    assert.ok(state.done && "value" in state);
    assert.deepEqual(
      describedArms(state.value).map((arm) => [arm.region, arm.startOffsetMs, arm.durationMs]),
      [
        ["East US", 0, 130],
        ["West US", 100, 30],
      ],
    );
  });

  it("releases what it admitted, once per hedge and never for the primary, whether the hedge settled, won or was aborted", async () => {
    const admitted: number[] = [];
    const released: number[] = [];
    const releasing = (): RaceStrategy =>
      strategy({
        judge: (arm) => (arm.index === 1 ? "wait" : "win"),
        admit: (index) => (admitted.push(index), true),
        release: (index) => released.push(index),
      });
    // The third arm wins: the second settled before, the primary is aborted.
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5000 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 50 });
    const hedgeWins = race(releasing());
    await harness.clock.tickAsync(250);
    const won = hedgeWins.state();
    assert.ok(won.done && "value" in won && won.value.kind === "decided" && won.value.returnedIndex === 2);
    assert.deepEqual(admitted, [1, 2]);
    assert.deepEqual(released, [1, 2]);
    // The primary wins: the third arm, still in flight, is aborted and released.
    admitted.length = 0;
    released.length = 0;
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 503, delayMs: 10 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 5000 });
    const primaryWins = race(releasing());
    await harness.clock.tickAsync(1000);
    const kept = primaryWins.state();
    assert.ok(kept.done && "value" in kept && kept.value.kind === "decided" && kept.value.returnedIndex === 0);
    assert.deepEqual(admitted, [1, 2]);
    assert.deepEqual(released, [1, 2]);
  });

  it("keeps no timer of its own once every arm is out, or once the budget has refused a hedge", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 1000 });
    harness.transport.script(northEurope.endpoint, { status: 200, delayMs: 1000 });
    const allOut = race(strategy());
    await harness.clock.tickAsync(200);
    assert.equal(harness.transport.received.length, 3);
    assert.equal(harness.clock.countTimers(), 3, "the three arms' answers are all that is pending");
    await harness.clock.tickAsync(800);
    assert.ok(allOut.state().done);

    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 1000 });
    let asked = 0;
    const refused = race(strategy({ admit: () => (asked++, false) }));
    await harness.clock.tickAsync(100);
    assert.equal(asked, 1);
    assert.equal(harness.clock.countTimers(), 1, "after the refusal only the primary's answer is pending");
    await harness.clock.tickAsync(900);
    assert.ok(refused.state().done);
  });
});

