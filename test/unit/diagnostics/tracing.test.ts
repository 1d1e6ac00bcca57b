import assert from "node:assert/strict";
import { AsyncResource } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { createEmptyPipeline, RestError } from "@azure/core-rest-pipeline";
import { createTracingClient } from "@azure/core-tracing";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import type { HedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { packageInfo } from "../../../src/packageInfo.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { eastUs, observe, pointRead, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { useRaceHarness } from "../../support/raceHarness.js";
import { useRecordingInstrumenter } from "../../support/recordingInstrumenter.js";
import type { RecordedSpan, SpanRecording } from "../../support/recordingInstrumenter.js";

const secretSignature = "c2VjcmV0LXNpZ25hdHVyZS1ub3QtZm9yLXNwYW5z";
const authorization = encodeURIComponent(`type=master&ver=1.0&sig=${secretSignature}`);
const sessionToken = "0:1#98765#3=-1";

describe("tracing", () => {
  const harness = useRaceHarness();
  let recording: SpanRecording;

  beforeEach(() => {
    recording = useRecordingInstrumenter();
  });

  afterEach(() => {
    recording.restore();
  });

  function hedgingClient(drainLosers = true): HedgingHttpClient {
    const client = createHedgingHttpClient({ httpClient: harness.transport, crossRegion: { threshold: 100, thresholdStep: 50, drainLosers }, metadata: false });
    client.regions.setTopology({ readRegions: [eastUs, westUs] });
    return client;
  }

  function signedPointRead(): PipelineRequest {
    const request = pointRead(eastUs);
    request.headers.set("authorization", authorization);
    request.headers.set("x-ms-session-token", sessionToken);
    request.headers.set("x-ms-documentdb-partitionkey", '["pk-1"]');
    return request;
  }

  function ours(): RecordedSpan[] {
    return recording.spans.filter((span) => span.packageName === packageInfo.name);
  }

  function only<T>(values: T[], what: string): T {
    assert.equal(values.length, 1, `exactly one ${what}`);
    return values[0]!;
  }

  it("reports the package's own name and version", () => {
    const manifest = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { name: string; version: string };
    assert.deepEqual(packageInfo, { name: manifest.name, version: manifest.version });
  });

  it("traces a hedged read from its hedge on: a race span under the request's context, a child span per arm, an HTTP span under each hedge", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5000, requestCharge: 1 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 20, requestCharge: 1.5 });
    // The operation span of a Cosmos DB client, whose namespace the race span inherits.
    const operation = createTracingClient({ namespace: "Microsoft.DocumentDB", packageName: "test-service-client" }).startSpan("ServiceClient.getItem", {});
    const request = signedPointRead();
    request.tracingOptions = operation.updatedOptions.tracingOptions;
    const pending = observe(hedgingClient().sendRequest(request));
    await harness.clock.tickAsync(99);
    assert.deepEqual(ours(), [], "a read that has not hedged (yet) is not traced: the span starts when the hedge is due");
    await harness.clock.tickAsync(101);
    await pending.result();
    operation.span.end();
    const caller = only(recording.spans.filter((span) => span.name === "ServiceClient.getItem"), "operation span");

    const race = only(ours().filter((span) => span.name === "hedge pointRead"), "race span");
    assert.equal(race.parent, caller, "the race span is a child of the request's tracing context");
    assert.equal(race.kind, "internal");
    assert.deepEqual(race.attributes, {
      "az.namespace": "Microsoft.DocumentDB",
      "cosmos.hedging.policy": "crossRegion",
      "cosmos.hedging.operation": "pointRead",
      "cosmos.hedging.threshold_ms": 100,
      "cosmos.hedging.threshold_step_ms": 50,
      "cosmos.hedging.threshold_source": "options",
      "cosmos.hedging.primary_region": "East US",
      "cosmos.hedging.winning_region": "West US",
      "cosmos.hedging.hedge_fired": true,
      "cosmos.hedging.hedge_won": true,
      "cosmos.hedging.terminal_state": "hedgeWon",
      "cosmos.hedging.arms": 2,
      "cosmos.hedging.request_charge": 1.5,
      "cosmos.hedging.status_code": 200,
    });
    assert.deepEqual(race.status, { status: "success" });
    assert.ok(race.ended);

    const arms = ours().filter((span) => span.name === "hedge pointRead arm");
    assert.deepEqual(
      arms.map((arm) => [arm.parent, arm.attributes["cosmos.hedging.arm.index"], arm.attributes["cosmos.hedging.arm.region"], arm.attributes["cosmos.hedging.arm.reason"]]),
      [
        [race, 0, "East US", "primary"],
        [race, 1, "West US", "threshold"],
      ],
    );
    const [primary, hedge] = arms as [RecordedSpan, RecordedSpan];
    assert.equal(hedge.attributes["cosmos.hedging.arm.status_code"], 200);
    assert.equal(hedge.attributes["cosmos.hedging.arm.request_charge"], 1.5);
    assert.ok(hedge.ended);
    assert.equal(primary.ended, false, "the losing primary drains after the race: its span runs on");
    await harness.clock.tickAsync(5000);
    assert.ok(primary.ended, "the drained loser's span ends when its drain does");
    assert.equal(primary.attributes["cosmos.hedging.arm.status_code"], 200);
    assert.equal(primary.attributes["cosmos.hedging.arm.cancelled"], undefined);
    assert.equal(primary.status, undefined);

    const http = recording.spans.filter((span) => span.packageName === "@azure/core-rest-pipeline");
    assert.deepEqual(
      http.map((span) => [span.name, span.parent]),
      [["HTTP GET", hedge]],
      "core-rest-pipeline's tracingPolicy runs below the race for each hedge; the primary is the caller's request, sent before the race had a span",
    );
  });

  it("starts the race span under the caller's active span when the hedge goes at the threshold", async () => {
    // The primary answers 503 only after the hedge won: it drains, and its span ends with its status.
    harness.transport.script(eastUs.endpoint, { status: 503, delayMs: 150 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 20 });
    // Node's timers run their callback in the async context that set them, where the caller's span is active; the fake
    // clock's do not, so the threshold's timer is bound to that context here as Node binds it.
    const fakeSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      fakeSetTimeout(AsyncResource.bind(callback), ms, ...args)) as typeof setTimeout;
    let caller: RecordedSpan;
    try {
      const pending = observe(recording.inSpan("GET /orders/42", () => hedgingClient().sendRequest(signedPointRead())));
      await harness.clock.tickAsync(150);
      caller = (await pending.result()).span;
    } finally {
      globalThis.setTimeout = fakeSetTimeout;
    }
    const race = only(ours().filter((span) => span.name === "hedge pointRead"), "race span");
    assert.equal(race.parent, caller, "the race span is a child of the caller's active span");
    assert.equal(race.attributes["cosmos.hedging.terminal_state"], "hedgeWon");
    const arms = ours().filter((span) => span.name === "hedge pointRead arm");
    assert.deepEqual(
      arms.map((arm) => [arm.attributes["cosmos.hedging.arm.reason"], arm.attributes["cosmos.hedging.arm.status_code"], arm.ended]),
      [
        ["primary", 503, true],
        ["threshold", 200, true],
      ],
    );
  });

  it("marks a loser the race cancelled, when losers are not drained, and does not count it an error", async () => {
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 5000 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 20 });
    const pending = observe(hedgingClient(false).sendRequest(signedPointRead()));
    await harness.clock.tickAsync(200);
    await pending.result();
    const primary = ours().find((span) => span.name === "hedge pointRead arm" && span.attributes["cosmos.hedging.arm.index"] === 0);
    assert.ok(primary?.ended);
    assert.equal(primary.attributes["cosmos.hedging.arm.cancelled"], true);
    assert.equal(primary.attributes["cosmos.hedging.arm.status_code"], undefined);
    assert.equal(primary.status, undefined, "a cancelled arm is not an error");
  });

  it("starts the race span under the request's own tracing context when a core-client caller sets one", async () => {
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 100, drainLosers: false }));
    // The primary answers after the threshold: only a read that hedges is traced.
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 150 });
    harness.transport.script(westUs.endpoint, { status: 200, delayMs: 10_000 });
    const operation = createTracingClient({ namespace: "Microsoft.Test", packageName: "test-service-client" }).startSpan("ServiceClient.getItem", {});
    const request = pointRead(eastUs);
    request.tracingOptions = operation.updatedOptions.tracingOptions;
    // Some other span is active: the request's own context still wins, as it does for core-rest-pipeline's spans.
    const pending = observe(recording.inSpan("unrelated", () => pipeline.sendRequest(harness.transport, request)));
    await harness.clock.tickAsync(150);
    await pending.result();
    operation.span.end();
    const operationSpan = only(recording.spans.filter((span) => span.name === "ServiceClient.getItem"), "operation span");
    const race = only(ours().filter((span) => span.name === "hedge pointRead"), "race span");
    assert.equal(race.parent, operationSpan);
    assert.equal(race.attributes["cosmos.hedging.terminal_state"], "primaryWon");
  });

  it("puts no header value, credential or URL in any attribute or status, even when an arm's error echoes the authorization header", async () => {
    // The primary fails after the threshold; the hedge sent then fails first, and the primary's error decides.
    harness.transport.script(eastUs.endpoint, { error: new RestError(`connect ECONNRESET while sending authorization: ${authorization}`, { code: "ECONNRESET" }), delayMs: 150 });
    harness.transport.script(westUs.endpoint, { error: new RestError(`socket hang up; sig=${secretSignature}`, { code: "ECONNRESET" }), delayMs: 5 });
    const request = signedPointRead();
    const headerValues = Object.values(request.headers.toJSON());
    const pending = observe(hedgingClient().sendRequest(request));
    await harness.clock.tickAsync(150);
    await assert.rejects(pending.result(), RestError);

    assert.ok(ours().length >= 3, "the race and both arms were traced");
    // Every attribute of every span, core-rest-pipeline's HTTP spans included, and everything this package reports on its own spans.
    // (core-rest-pipeline sets its HTTP span's status from the transport's error object itself: the same error the caller receives.)
    const texts: string[] = [];
    for (const span of recording.spans) {
      for (const value of Object.values(span.attributes)) if (typeof value === "string") texts.push(value);
    }
    for (const span of ours()) {
      if (span.status?.status === "error") texts.push(String(span.status.error));
      for (const exception of span.exceptions) texts.push(String(exception));
    }
    for (const text of texts) {
      assert.ok(!text.includes(secretSignature), `a span carries the signature: ${text}`);
      assert.ok(!text.includes(authorization) && !text.includes(decodeURIComponent(authorization)), `a span carries the authorization header: ${text}`);
    }
    for (const span of ours()) {
      for (const value of Object.values(span.attributes)) {
        if (typeof value === "string") assert.ok(!headerValues.includes(value) && !value.includes("://"), `${span.name} carries ${value}`);
      }
    }
    const race = only(ours().filter((span) => span.name === "hedge pointRead"), "race span");
    assert.equal(race.status?.status, "error");
    assert.match(String(race.status?.status === "error" ? race.status.error : ""), /^RestError: connect ECONNRESET while sending \[redacted\]/);
    assert.equal(race.attributes["cosmos.hedging.terminal_state"], "primaryOutcome");
    const arms = ours().filter((span) => span.name === "hedge pointRead arm");
    assert.ok(arms.every((arm) => arm.status?.status === "error"), "an arm that failed on its own is an error");
  });

  it("starts no span for a request it does not race, HTTP span included", async () => {
    harness.transport.script(eastUs.endpoint, { status: 201 });
    const create = requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}" });
    const pending = observe(hedgingClient().sendRequest(create));
    await harness.clock.tickAsync(1);
    const response: PipelineResponse = await pending.result();
    assert.equal(response.status, 201);
    assert.deepEqual(recording.spans, []);
  });

  it("gives the arms no HTTP span while nobody traces, and leaves their tracing options as they were", async () => {
    recording.restore();
    harness.transport.script(eastUs.endpoint, { status: 200, delayMs: 10 });
    const request = pointRead(eastUs);
    const pending = observe(hedgingClient().sendRequest(request));
    await harness.clock.tickAsync(10);
    await pending.result();
    const [arm] = harness.transport.received;
    assert.equal(arm?.request.tracingOptions, undefined);
    assert.equal(arm?.headers["traceparent"], undefined);
  });
});
