import assert from "node:assert/strict";
import { createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { Pipeline, PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { ScriptStep } from "./fakeTransport.js";
import { eastUs, observe, pointRead, westUs } from "./hedgingFixtures.js";
import type { RaceHarness } from "./raceHarness.js";

/** A successful answer after `delayMs`, with whatever else the step needs. */
export const ok = (delayMs: number, extra: Partial<Extract<ScriptStep, { status: number }>> = {}): ScriptStep => ({ status: 200, delayMs, ...extra });

/** A pipeline holding the one policy under test. */
export function pipelineOf(policy: PipelinePolicy): Pipeline {
  const pipeline = createEmptyPipeline();
  pipeline.addPolicy(policy);
  return pipeline;
}

/** East's and West's next answers, as the fake transport will give them. */
export interface ScriptedSteps {
  readonly east?: ScriptStep;
  readonly west?: ScriptStep;
}

/**
 * A `send` over the harness: scripts each region's next step, sends one request
 * (a point read to East unless given) and runs the fake clock until it settles,
 * returning the diagnostics the response carries.
 */
export function scriptedSender(harness: RaceHarness): (pipeline: Pipeline, steps: ScriptedSteps, request?: PipelineRequest) => Promise<HedgeDiagnostics> {
  return async (pipeline, steps, request = pointRead(eastUs, harness.leaks.controller().signal)) => {
    if (steps.east !== undefined) harness.transport.script(eastUs.endpoint, steps.east);
    if (steps.west !== undefined) harness.transport.script(westUs.endpoint, steps.west);
    const pending = observe(pipeline.sendRequest(harness.transport, request));
    for (let waited = 0; !pending.state().done && waited < 20_000; waited++) await harness.clock.tickAsync(1);
    const diagnostics = getHedgeDiagnostics(await pending.result());
    assert.ok(diagnostics !== undefined, "diagnostics are attached");
    return diagnostics;
  };
}
