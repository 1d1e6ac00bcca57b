import assert from "node:assert/strict";
import { RestError } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import type { SinonFakeTimers } from "sinon";
import type { RegionEndpoint } from "../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { CrossRegionHedgingOptions, HedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics, HedgeDrainEnd } from "../../src/diagnostics/diagnostics.js";
import { metadataHedgingDefaults } from "../../src/policies/metadataHedgingPolicy.js";
import { faultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import type { FaultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import { runUntilIdle } from "../support/clockDriver.js";
import { eastUs, northEurope, query, requestTo, ukSouth, westUs } from "../support/hedgingFixtures.js";
import { LeakCheck, checkEachTest, useFakeClock } from "../support/leakCheck.js";
import { PlannedTransport } from "../support/plannedTransport.js";
import type { Plan } from "../support/plannedTransport.js";

const regions: readonly RegionEndpoint[] = [eastUs, westUs, northEurope, ukSouth];
const threshold = 100;
const thresholdStep = 50;
const metadataThreshold = 150;
/** Every arm (faulted hangs included) gives up after this, so that a request nobody aborts still ends. */
const requestTimeout = 5000;
const stormSize = 3000;
/** Fixed, so that a failure can be replayed; change it to explore other storms. */
const seed = 20240601;
const idHeader = "x-storm-request";

type Operation = "pointRead" | "query" | "collectionRead" | "pkRanges";

/** When the caller aborts, relative to sending. */
type AbortMoment =
  | { readonly when: "beforeSend" }
  | { readonly when: "beforeThreshold"; readonly afterMs: number }
  | { readonly when: "betweenHedges"; readonly afterMs: number }
  | { readonly when: "anyTime"; readonly afterMs: number }
  | { readonly when: "afterSettle" }
  | { readonly when: "never" };

interface StormRequest {
  readonly operation: Operation;
  readonly primary: number;
  readonly startAt: number;
  readonly abort: AbortMoment;
  /** What each region answers, by region index. */
  readonly plans: readonly Plan[];
}

// No 429: a throttled region is kept out of hedging for a while, which would leave most of the storm unhedged.
const planArbitrary: fc.Arbitrary<Plan> = fc.oneof(
  fc.record({ status: fc.constantFrom(200, 304, 404, 409), delayMs: fc.integer({ min: 1, max: 600 }) }),
  fc.record({ status: fc.constantFrom(403, 408, 410, 449, 500, 503), delayMs: fc.integer({ min: 1, max: 600 }) }),
  fc.record({
    error: fc.constantFrom("ECONNRESET", "ECONNREFUSED", "ETIMEDOUT").map((code) => new RestError(`storm ${code}`, { code })),
    delayMs: fc.integer({ min: 1, max: 600 }),
  }),
);

const abortArbitrary: fc.Arbitrary<AbortMoment> = fc.oneof(
  fc.constant({ when: "beforeSend" as const }),
  fc.record({ when: fc.constant("beforeThreshold" as const), afterMs: fc.integer({ min: 0, max: threshold - 1 }) }),
  fc.record({ when: fc.constant("betweenHedges" as const), afterMs: fc.integer({ min: threshold + 1, max: threshold + 2 * thresholdStep }) }),
  fc.record({ when: fc.constant("anyTime" as const), afterMs: fc.integer({ min: 0, max: 1500 }) }),
  fc.constant({ when: "afterSettle" as const }),
  fc.constant({ when: "never" as const }),
);

const stormArbitrary: fc.Arbitrary<StormRequest> = fc.record({
  operation: fc.constantFrom<Operation>("pointRead", "query", "collectionRead", "pkRanges"),
  primary: fc.integer({ min: 0, max: regions.length - 1 }),
  startAt: fc.integer({ min: 0, max: 2000 }),
  abort: abortArbitrary,
  plans: fc.array(planArbitrary, { minLength: regions.length, maxLength: regions.length }),
});

function requestFor(spec: StormRequest, id: number, signal: AbortSignal): PipelineRequest {
  const region = regions[spec.primary]!;
  const request =
    spec.operation === "query"
      ? query(region, signal)
      : requestTo(region, "GET", { pointRead: "dbs/db/colls/c/docs/1", collectionRead: "dbs/db/colls/c", pkRanges: "dbs/db/colls/c/pkranges" }[spec.operation], {
          abortSignal: signal,
        });
  request.headers.set(idHeader, String(id));
  request.timeout = requestTimeout;
  return request;
}

/** One arm as it left the hedging policies: its request, and whether the rest of the pipeline has settled it. */
interface RecordedArm {
  readonly request: PipelineRequest;
  /** Whether its signal was already aborted when it left the hedging policies. */
  readonly abortedWhenSent: boolean;
  settled: boolean;
}

/** A policy behind the hedging policies that sees every arm, faulted or not, before anything else happens to it. */
function armRecorder(arms: Map<string, RecordedArm[]>): PipelinePolicy {
  return {
    name: "stormArmRecorder",
    sendRequest(request, next) {
      const id = request.headers.get(idHeader) ?? "";
      const arm: RecordedArm = { request, abortedWhenSent: (request.abortSignal as AbortSignal | undefined)?.aborted === true, settled: false };
      arms.set(id, [...(arms.get(id) ?? []), arm]);
      const sent = next(request);
      const markSettled = (): void => {
        arm.settled = true;
      };
      sent.then(markSettled, markSettled);
      return sent;
    },
  };
}

interface Tally {
  settled: number;
  abortedWhilePending: number;
  abortedWithHedgesInFlight: number;
  abortedAfterSettle: number;
  /** How the drained losers of the data-plane and metadata races ended, counted once the storm is over. */
  drainEnds: Partial<Record<HedgeDrainEnd, number>>;
}

describe("abort storms (fake clock)", function () {
  let clock: SinonFakeTimers;
  let leaks: LeakCheck;
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => {
    warnings.push(warning);
  };
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  beforeEach(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
    warnings.length = 0;
    process.on("warning", onWarning);
    clock = useFakeClock();
    leaks = new LeakCheck(clock);
  });

  checkEachTest(async () => {
    await leaks.verify();
    assert.deepEqual(
      warnings.map((warning) => `${warning.name}: ${warning.message}`),
      [],
      "process warnings (MaxListenersExceededWarning among them)",
    );
  });

  afterEach(function () {
    leaks.dispose();
    process.off("warning", onWarning);
    clock.restore();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  function hedgingClient(
    transport: PlannedTransport,
    arms: Map<string, RecordedArm[]>,
    crossRegion: CrossRegionHedgingOptions,
    records: HedgeDiagnostics[],
  ): { client: HedgingHttpClient; faults: FaultInjectionPolicy } {
    const metadata = { threshold: metadataThreshold, ...(crossRegion.drainLosers !== undefined ? { drainLosers: crossRegion.drainLosers } : {}) };
    const client = createHedgingHttpClient({ httpClient: transport, crossRegion, metadata, onDiagnostics: (record) => records.push(record) });
    client.regions.setTopology({ readRegions: regions });
    client.pipeline.addPolicy(armRecorder(arms));
    // Faults nearest the wire: some arms wait before they are sent, some never answer until aborted or timed out.
    const faults = faultInjectionPolicy({
      regions: client.regions,
      seed,
      rules: [
        { id: "slow-send", delayMs: 120, probability: 0.1 },
        { id: "hang", timeout: true, probability: 0.05 },
      ],
    });
    client.pipeline.addPolicy(faults, { afterPhase: "Sign" });
    return { client, faults };
  }

  /**
   * Sends the storm through a hedging client, checks each request as it
   * settles and everything at the end; returns the tally. Both policies
   * drain or abort their losers as `crossRegion.drainLosers` says.
   */
  async function runStorm(crossRegion: CrossRegionHedgingOptions): Promise<Tally> {
    const draining = crossRegion.drainLosers !== false;
    const storm = fc.sample(stormArbitrary, { seed, numRuns: stormSize });
    const planOf = new Map<string, readonly Plan[]>(storm.map((spec, id) => [String(id), spec.plans]));
    const transport = new PlannedTransport({
      plan: (request) => {
        const plans = planOf.get(request.headers.get(idHeader) ?? "");
        const index = regions.findIndex((region) => new URL(region.endpoint).origin === new URL(request.url).origin);
        const plan = plans?.[index];
        if (plan === undefined) throw new Error(`no plan for ${request.url}`);
        return plan;
      },
    });
    const arms = new Map<string, RecordedArm[]>();
    const records: HedgeDiagnostics[] = [];
    const { client, faults } = hedgingClient(transport, arms, crossRegion, records);
    const tally: Tally = { settled: 0, abortedWhilePending: 0, abortedWithHedgesInFlight: 0, abortedAfterSettle: 0, drainEnds: {} };
    const failures: string[] = [];
    const outcomes: Promise<void>[] = [];

    storm.forEach((spec, id) => {
      const key = String(id);
      const controller = leaks.controller(`caller signal of request ${id}`);
      let settled = false;
      let abortedWhilePending = false;
      const abort = (): void => {
        if (!settled) {
          abortedWhilePending = true;
          tally.abortedWhilePending += 1;
          const inFlight = (arms.get(key) ?? []).filter((arm) => !arm.settled).length;
          if (inFlight >= 2) tally.abortedWithHedgesInFlight += 1;
        }
        controller.abort();
      };
      const onSettled = (error: unknown, response?: unknown): void => {
        settled = true;
        tally.settled += 1;
        // When the caller has its answer, the only arms still running un-aborted are the losers the diagnostics call drained.
        const running = (arms.get(key) ?? []).filter((arm) => !arm.settled && !(arm.request.abortSignal as AbortSignal).aborted);
        const drained = getHedgeDiagnostics(response ?? error)?.arms.filter((arm) => arm.outcome === "drained").length ?? 0;
        if (running.length > (draining ? drained : 0)) {
          failures.push(`request ${id}: ${running.length} arms (to ${running[0]?.request.url}) still running, ${drained} drained, when the caller got its answer`);
        }
        // A drain listens to the caller's signal until it ends, so that the caller's abort still reaches it.
        const listeners = leaks.listenerCount(controller.signal);
        if (listeners > (running.length > 0 ? 1 : 0)) {
          failures.push(`request ${id}: ${listeners} abort listeners left on the caller's signal when it settled, ${running.length} arms draining`);
        }
        const isAbortError = error instanceof Error && error.name === "AbortError";
        if (abortedWhilePending && !isAbortError) failures.push(`request ${id}: aborted while pending, but got ${String(error ?? "a response")}`);
        // An unhedged request goes down the pipeline aborted and the transport refuses it; nothing may go out un-aborted.
        if (spec.abort.when === "beforeSend" && (arms.get(key) ?? []).some((arm) => !arm.abortedWhenSent)) {
          failures.push(`request ${id}: aborted before sending, yet an arm went out with a live signal`);
        }
        if (spec.abort.when === "afterSettle") {
          tally.abortedAfterSettle += 1;
          abort();
        }
      };
      setTimeout(() => {
        if (spec.abort.when === "beforeSend") abort();
        outcomes.push(
          client.sendRequest(requestFor(spec, id, controller.signal)).then(
            (response) => onSettled(undefined, response),
            (error: unknown) => onSettled(error),
          ),
        );
        if ("afterMs" in spec.abort) setTimeout(abort, spec.abort.afterMs);
      }, spec.startAt);
    });

    await runUntilIdle(clock, 60_000);
    await Promise.all(outcomes);

    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failures`);
    assert.equal(tally.settled, stormSize, "every request settled");
    assert.equal(transport.inFlight, 0, "no request is still in flight at the transport");
    for (const arm of transport.arms) assert.ok(arm.outcome !== undefined, `an arm to ${arm.request.url} never ended`);
    for (const [id, recorded] of arms) {
      for (const arm of recorded) assert.ok(arm.settled, `request ${id}: an arm to ${arm.request.url} never settled`);
    }
    assert.ok(tally.abortedWhilePending > stormSize / 4, `only ${tally.abortedWhilePending} aborts hit a pending request`);
    assert.ok(tally.abortedAfterSettle > 0);
    assert.ok(transport.arms.some((arm) => arm.outcome === "aborted"), "some arms were aborted at the transport");
    const losers = client.metrics().losers;
    if (draining) assert.ok(losers.drained > 0, `losers: ${JSON.stringify(losers)}`);
    else assert.equal(losers.drained, 0);
    assert.equal(losers.drainsInFlight, 0, "every drain has ended");
    for (const arm of records.flatMap((record) => record.arms)) {
      if (arm.outcome !== "drained") continue;
      assert.ok(arm.drainEnd !== undefined, "every drained arm's record was completed");
      tally.drainEnds[arm.drainEnd] = (tally.drainEnds[arm.drainEnd] ?? 0) + 1;
    }
    faults.enabled = false;
    await assertMetadataBudgetFree(client, planOf);
    return tally;
  }

  /**
   * Every metadata hedge slot an aborted race held must have come back: as
   * many slow metadata reads as the budget holds, sent at once, all hedge.
   */
  async function assertMetadataBudgetFree(client: HedgingHttpClient, planOf: Map<string, readonly Plan[]>): Promise<void> {
    const slowPrimary: readonly Plan[] = regions.map((_, index) => ({ status: 200, delayMs: index === 0 ? 1000 : 10 }));
    const reads = Array.from({ length: metadataHedgingDefaults.maxConcurrentHedges }, (_, index) => {
      const id = stormSize + index;
      planOf.set(String(id), slowPrimary);
      const request = requestTo(eastUs, "GET", "dbs/db/colls/c", { abortSignal: leaks.controller().signal });
      request.headers.set(idHeader, String(id));
      return client.sendRequest(request);
    });
    await runUntilIdle(clock, 60_000);
    const responses = await Promise.all(reads);
    assert.deepEqual(
      responses.map((response) => getHedgeDiagnostics(response)?.terminalState),
      responses.map(() => "hedgeWon"),
      "every slot of the metadata hedge budget is free after the storm",
    );
  }

  it(`${stormSize} requests aborted at random moments all settle, abort every arm in flight and leave nothing behind`, async function () {
    const tally = await runStorm({ threshold, thresholdStep, budget: false, drainLosers: false });
    // The storm must really have hit races in flight, or it proves nothing.
    assert.ok(tally.abortedWithHedgesInFlight > stormSize / 20, `only ${tally.abortedWithHedgesInFlight} aborts hit a race with hedges in flight`);
  });

  it(`${stormSize} requests aborted at random moments with their losers draining: the caller's abort reaches the drains, and nothing is left behind`, async function () {
    const tally = await runStorm({ threshold, thresholdStep, budget: false });
    assert.ok(tally.abortedAfterSettle > stormSize / 20, `only ${tally.abortedAfterSettle} aborts came after the answer, when drains run`);
    const drains = Object.values(tally.drainEnds).reduce((sum, count) => sum + count, 0);
    assert.ok(drains > stormSize / 20, `only ${drains} losers drained`);
    assert.ok((tally.drainEnds.callerAborted ?? 0) > 0 && (tally.drainEnds.settled ?? 0) > 0, `drain ends: ${JSON.stringify(tally.drainEnds)}`);
  });

  it(`${stormSize} requests aborted at random moments under the default hedge load budget leave nothing behind either`, async function () {
    const tally = await runStorm({ threshold, thresholdStep });
    assert.ok(tally.abortedWithHedgesInFlight > 0, "some aborts hit a race with hedges in flight");
  });
});
