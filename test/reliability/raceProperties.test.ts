import assert from "node:assert/strict";
import { RestError, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import { RegionCache } from "../../src/topology/regionCache.js";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicy } from "../../src/policies/metadataHedgingPolicy.js";
import { FakeTransport } from "../support/fakeTransport.js";
import type { ScriptStep } from "../support/fakeTransport.js";
import { eastUs, northEurope, observe, pointRead, query, requestTo, ukSouth, westUs } from "../support/hedgingFixtures.js";
import { LeakCheck, useFakeClock } from "../support/leakCheck.js";

/*
 * The models below are written from the specification (DESIGN.md sections 3
 * and 4, the README's tables), not from the implementation: they simulate
 * the race on a timeline and say which arms go out, which outcome the caller
 * gets and when. Cases where two events fall on the same millisecond are
 * discarded, because the specification does not order simultaneous events.
 */

const runs = 200;
const allRegions: readonly RegionEndpoint[] = [eastUs, westUs, northEurope, ukSouth];

type Outcome =
  | { readonly kind: "response"; readonly status: number; readonly subStatus: number }
  | { readonly kind: "transportError"; readonly code: string };

interface ArmSpec {
  readonly delayMs: number;
  readonly outcome: Outcome;
}

const response = (status: number, subStatus = 0): Outcome => ({ kind: "response", status, subStatus });
const transportError = (code: string): Outcome => ({ kind: "transportError", code });

/** Every status the tables name, a few they do not, and the transport errors. */
const outcomes: readonly Outcome[] = [
  response(200),
  response(201),
  response(204),
  response(304),
  response(400),
  response(401),
  response(403),
  response(403, 3),
  response(403, 1008),
  response(404),
  response(404, 1002),
  response(405),
  response(408),
  response(409),
  response(410),
  response(410, 1022),
  response(412),
  response(413),
  response(429),
  response(449),
  response(500),
  response(502),
  response(503),
  response(504),
  transportError("ECONNRESET"),
  transportError("ECONNREFUSED"),
  transportError("ENOTFOUND"),
  transportError("ETIMEDOUT"),
];

/** Data-plane classes, from the README's table: final ends the race, anything else lets another region try. */
function isFinal(outcome: Outcome): boolean {
  if (outcome.kind === "transportError") return false;
  if (outcome.status < 400) return true;
  if ([400, 401, 405, 409, 412, 413].includes(outcome.status)) return true;
  return outcome.status === 404 && outcome.subStatus === 0;
}

type MetadataClass = "success" | "regional" | "definitive";

/** Metadata classes, from DESIGN.md section 4: only what another region could answer better is regional. */
function metadataClass(outcome: Outcome): MetadataClass {
  if (outcome.kind === "transportError") return "regional";
  if (outcome.status < 400) return "success";
  if (outcome.status === 500 || outcome.status === 503) return "regional";
  if (outcome.status === 410 && outcome.subStatus === 1022) return "regional";
  if (outcome.status === 403 && outcome.subStatus === 1008) return "regional";
  return "definitive";
}

/** What a model predicts for one race. */
interface Prediction {
  /** How many arms go out (arm k to target k). */
  readonly launched: number;
  /** The arm whose outcome the caller gets. */
  readonly returned: number;
  /** `true` when no arm was good enough and the primary's outcome is returned by default. */
  readonly fallback: boolean;
  /** Fake-clock milliseconds at which the caller gets it. */
  readonly decidedAt: number;
  /** The arms that had settled by then; every other launched arm must be aborted. */
  readonly settled: ReadonlySet<number>;
  /** Two events fell on the same millisecond. */
  readonly ambiguous: boolean;
}

/**
 * Data-plane race (DESIGN.md section 3, made additive): the primary at 0;
 * hedge 1 after the threshold, each later hedge a step after the previous
 * launch; a hedge's transient result or transport error brings the next
 * hedge forward, one at a time (not while another brought forward is in
 * flight); a hedge's success wins, but not its 304; the primary's outcome, whatever it is,
 * wins when it comes first (as a fallback when it is not final): a
 * transient one is the SDK's to retry, and a hedge's final error never
 * replaces it.
 */
function modelDataPlane(arms: readonly ArmSpec[], armCount: number, threshold: number, step: number): Prediction {
  const launchedAt: number[] = [0];
  const settled = new Set<number>();
  /** The hedges a transient result brought forward. */
  const early = new Set<number>();
  let timerAt: number | undefined = armCount > 1 ? threshold : undefined;
  let ambiguous = false;
  const launch = (now: number): void => {
    launchedAt.push(now);
    timerAt = launchedAt.length < armCount ? now + step : undefined;
  };
  for (;;) {
    const events: { at: number; arm?: number }[] = [];
    launchedAt.forEach((at, arm) => {
      if (!settled.has(arm)) events.push({ at: at + arms[arm]!.delayMs, arm });
    });
    if (timerAt !== undefined) events.push({ at: timerAt });
    events.sort((a, b) => a.at - b.at);
    const [first, second] = events;
    if (first === undefined) throw new Error("the model ran out of events");
    if (second !== undefined && second.at === first.at) ambiguous = true;
    const now = first.at;
    if (first.arm === undefined) {
      launch(now);
      continue;
    }
    settled.add(first.arm);
    const base = { launched: launchedAt.length, decidedAt: now, settled, ambiguous };
    const outcome = arms[first.arm]!.outcome;
    const final = isFinal(outcome);
    if (first.arm === 0) return { ...base, returned: 0, fallback: !final };
    // A hedge's 304 ("nothing newer" from a region that may be behind) is held like its final errors.
    if (final && outcome.kind === "response" && outcome.status < 400 && outcome.status !== 304) return { ...base, returned: first.arm, fallback: false };
    if (final) continue;
    const earlyInFlight = [...early].some((arm) => !settled.has(arm));
    if (launchedAt.length < armCount && !earlyInFlight) {
      early.add(launchedAt.length);
      launch(now);
    }
  }
}

/**
 * Metadata race (DESIGN.md section 4, made additive): one hedge, after the
 * threshold. The primary's outcome wins verbatim when it comes (a regional
 * failure as a fallback, for the SDK's retry); the hedge wins only with a
 * success before it.
 */
function modelMetadata(arms: readonly ArmSpec[], threshold: number): Prediction {
  const primaryAt = arms[0]!.delayMs;
  const primary = metadataClass(arms[0]!.outcome);
  const fallback = primary === "regional";
  let ambiguous = primaryAt === threshold;
  if (primaryAt < threshold) {
    return { launched: 1, returned: 0, fallback, decidedAt: primaryAt, settled: new Set([0]), ambiguous };
  }
  const hedgeAt = threshold + arms[1]!.delayMs;
  ambiguous ||= hedgeAt === primaryAt;
  const hedge = metadataClass(arms[1]!.outcome);
  if (hedge === "success" && hedgeAt < primaryAt) {
    return { launched: 2, returned: 1, fallback: false, decidedAt: hedgeAt, settled: new Set([1]), ambiguous };
  }
  return { launched: 2, returned: 0, fallback, decidedAt: primaryAt, settled: new Set(hedgeAt < primaryAt ? [0, 1] : [0]), ambiguous };
}

const armArbitrary: fc.Arbitrary<ArmSpec> = fc.record({
  // Not 0: the fake clock defers a zero-delay timer set while it fires timers to the next millisecond.
  delayMs: fc.integer({ min: 1, max: 1500 }),
  outcome: fc.constantFrom(...outcomes),
});

/** The script step of arm `index`: its outcome after its delay, with an activity id that names the arm. */
function stepOf(arm: ArmSpec, index: number, error: RestError | undefined): ScriptStep {
  if (arm.outcome.kind === "transportError") return { error, delayMs: arm.delayMs };
  return { status: arm.outcome.status, subStatus: arm.outcome.subStatus, activityId: `arm-${index}`, requestCharge: 1, delayMs: arm.delayMs };
}

interface RaceRun {
  readonly targets: readonly RegionEndpoint[];
  readonly arms: readonly ArmSpec[];
  readonly prediction: Prediction;
  readonly policy: PipelinePolicy;
  readonly request: (region: RegionEndpoint, signal: AbortSignal) => PipelineRequest;
  /** Whether the policy leaves losers to drain (`drainLosers`) rather than aborting them. */
  readonly drain: boolean;
}

/**
 * Runs one race on a fake clock and checks it against the prediction, arm by
 * arm; then that drained losers end on their own and nothing leaked.
 */
async function checkRace(run: RaceRun): Promise<void> {
  const { targets, arms, prediction } = run;
  const clock = useFakeClock();
  const leaks = new LeakCheck(clock);
  try {
    const transport = new FakeTransport();
    const errors = arms.map((arm, index) =>
      arm.outcome.kind === "transportError" ? new RestError(`arm ${index}: ${arm.outcome.code}`, { code: arm.outcome.code }) : undefined,
    );
    targets.forEach((region, index) => transport.script(region.endpoint, stepOf(arms[index]!, index, errors[index])));
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(run.policy);
    const caller = leaks.controller();
    const pending = observe(pipeline.sendRequest(transport, run.request(targets[0]!, caller.signal)));

    await clock.tickAsync(prediction.decidedAt - 1);
    assert.equal(pending.state().done, false, `settled before ${prediction.decidedAt} ms`);
    await clock.tickAsync(1);
    const state = pending.state();
    assert.ok(state.done, `not settled at ${prediction.decidedAt} ms`);

    assert.deepEqual(
      transport.received.map((record) => record.origin),
      targets.slice(0, prediction.launched).map((region) => new URL(region.endpoint).origin),
      "the arms that went out, in order",
    );
    const returned = arms[prediction.returned]!;
    if (returned.outcome.kind === "transportError") {
      assert.ok("error" in state, "the returned arm's transport error is rethrown");
      assert.equal(state.error, errors[prediction.returned], "the very error of the returned arm");
    } else {
      assert.ok("value" in state, `a response was expected; got ${"error" in state ? String(state.error) : ""}`);
      const answer: PipelineResponse = state.value;
      assert.equal(answer.status, returned.outcome.status);
      assert.equal(answer.headers.get("x-ms-activity-id"), `arm-${prediction.returned}`);
    }

    // A hedge in flight past the primary's answer that did not win is aborted, not drained: the SDK retries that attempt.
    const drains = run.drain && !prediction.fallback;
    const ownEnd = (index: number): string => (arms[index]!.outcome.kind === "transportError" ? "error" : "response");
    transport.received.forEach((record, index) => {
      const signal = record.request.abortSignal as AbortSignal;
      if (prediction.settled.has(index)) {
        assert.equal(record.outcome, ownEnd(index), `arm ${index} settled`);
      } else if (drains) {
        assert.equal(record.outcome, undefined, `arm ${index}, a loser in flight, is left to drain`);
        assert.equal(signal.aborted, false, `arm ${index}'s signal is left alone while it drains`);
      } else {
        assert.equal(record.outcome, "aborted", `arm ${index}, a loser in flight, was aborted`);
        assert.equal(signal.aborted, true, `arm ${index}'s signal is aborted`);
      }
      if (index === prediction.returned) assert.equal(signal.aborted, false, "the returned arm's signal is left alone");
    });

    const diagnostics = getHedgeDiagnostics("value" in state ? state.value : state.error);
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    assert.equal(diagnostics.terminalState, prediction.fallback ? "primaryOutcome" : prediction.returned === 0 ? "primaryWon" : "hedgeWon");
    assert.equal(diagnostics.winningRegion, targets[prediction.returned]!.name);
    assert.deepEqual(
      diagnostics.arms.map((arm) => [arm.region, arm.outcome]),
      targets
        .slice(0, prediction.launched)
        .map((region, index) => [
          region.name,
          index === prediction.returned ? "returned" : prediction.settled.has(index) ? "lost" : drains ? "drained" : "aborted",
        ]),
    );

    if (drains) {
      // Every arm answers within its delay (at most 1500 ms) of its launch, which came before the decision.
      await clock.tickAsync(1500);
      transport.received.forEach((record, index) => {
        if (prediction.settled.has(index)) return;
        assert.equal(record.outcome, ownEnd(index), `drained arm ${index} ended on its own`);
        assert.equal(diagnostics.arms[index]?.drainEnd, "settled", `drained arm ${index}'s record is completed`);
      });
    }

    await leaks.verify();
    assert.deepEqual(transport.unscripted, [], "requests to a region that already had its arm");
  } finally {
    // After a failed check, still stop listening for rejections (verify is idempotent); the first failure is the one reported.
    await leaks.verify().catch(() => undefined);
    clock.restore();
  }
}

describe("race properties (fast-check, fake clock)", function () {
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  before(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
  });

  after(function () {
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  it("the data-plane race returns a hedge's success that comes before the primary's answer, else the primary's outcome", async function () {
    const dataCase = fc
      .record({
        regionCount: fc.integer({ min: 2, max: 4 }),
        primaryIndex: fc.nat(),
        preferred: fc.option(fc.shuffledSubarray([0, 1, 2, 3], { minLength: 4, maxLength: 4 }), { nil: undefined }),
        threshold: fc.integer({ min: 1, max: 600 }),
        step: fc.integer({ min: 1, max: 400 }),
        operation: fc.constantFrom("pointRead", "query"),
        arms: fc.array(armArbitrary, { minLength: 4, maxLength: 4 }),
        drain: fc.boolean(),
      })
      .map((drawn) => {
        const regions = allRegions.slice(0, drawn.regionCount);
        const primary = regions[drawn.primaryIndex % regions.length]!;
        // The hedge order is the preferred order (or the account's), less the primary.
        const order = drawn.preferred === undefined ? regions : drawn.preferred.filter((index) => index < regions.length).map((index) => regions[index]!);
        return { ...drawn, regions, targets: [primary, ...order.filter((region) => region !== primary)] };
      });

    await fc.assert(
      fc.asyncProperty(dataCase, async (drawn) => {
        const prediction = modelDataPlane(drawn.arms, drawn.targets.length, drawn.threshold, drawn.step);
        fc.pre(!prediction.ambiguous);
        const regions = new RegionCache({
          topology: { readRegions: drawn.regions },
          ...(drawn.preferred !== undefined ? { preferredRegions: drawn.preferred.map((index) => allRegions[index]!.name) } : {}),
        });
        await checkRace({
          targets: drawn.targets,
          arms: drawn.arms,
          prediction,
          policy: crossRegionHedgingPolicy({ regions, threshold: drawn.threshold, thresholdStep: drawn.step, drainLosers: drawn.drain }),
          request: drawn.operation === "query" ? query : pointRead,
          drain: drawn.drain,
        });
      }),
      { numRuns: runs },
    );
  });

  it("the metadata race keeps the primary authoritative", async function () {
    const metadataCase = fc.record({
      regionCount: fc.integer({ min: 2, max: 4 }),
      threshold: fc.integer({ min: 1, max: 2000 }),
      operation: fc.constantFrom("dbs/db/colls/c", "dbs/db/colls/c/pkranges"),
      arms: fc.array(armArbitrary, { minLength: 2, maxLength: 2 }),
      drain: fc.boolean(),
    });

    await fc.assert(
      fc.asyncProperty(metadataCase, async (drawn) => {
        const prediction = modelMetadata(drawn.arms, drawn.threshold);
        fc.pre(!prediction.ambiguous);
        const accountRegions = allRegions.slice(0, drawn.regionCount);
        const regions = new RegionCache({ topology: { readRegions: accountRegions } });
        await checkRace({
          // One hedge at most, to the first other region in the account's order.
          targets: accountRegions.slice(0, 2),
          arms: drawn.arms,
          prediction,
          policy: metadataHedgingPolicy({ regions, enabled: true, threshold: drawn.threshold, drainLosers: drawn.drain }),
          request: (region, signal) => requestTo(region, "GET", drawn.operation, { abortSignal: signal }),
          drain: drawn.drain,
        });
      }),
      { numRuns: runs },
    );
  });
});
