import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import type { DataPoint, Histogram, MetricData } from "@opentelemetry/sdk-metrics";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import { hedgingMetricAttributes, hedgingMetricNames } from "../../src/diagnostics/otelMetrics.js";
import { useEmulator } from "../support/emulatorFixture.js";

const items = Array.from({ length: 3 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i}`, value: i }));

describe("OpenTelemetry metrics of a hedging client, read with the SDK's in-memory exporter", function () {
  const fixture = useEmulator({ items, preferredLocations: ["West US", "East US", "North Europe"] });
  let exporter: InMemoryMetricExporter;
  let reader: PeriodicExportingMetricReader;
  let provider: MeterProvider;

  beforeEach(function () {
    exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    // Exported on demand only (forceFlush), never on a timer of its own.
    reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
  });

  afterEach(async function () {
    metrics.disable();
    await provider.shutdown();
  });

  async function collected(): Promise<Map<string, MetricData>> {
    await reader.forceFlush();
    const byName = new Map<string, MetricData>();
    for (const resource of exporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
    }
    return byName;
  }

  function points(metric: MetricData | undefined): { attributes: Record<string, unknown>; value: unknown }[] {
    return (metric?.dataPoints ?? []).map((point: DataPoint<unknown>) => ({ attributes: { ...point.attributes }, value: point.value }));
  }

  it("counts a hedged read: hedge started and won by operation, primary and hedge region; its delay; the drained loser's request units and drain once it ends", async function () {
    const { container } = await fixture.client({ hedging: { crossRegion: { threshold: 100, thresholdStep: 5000 } }, warmUp: { id: "item-0", pk: "pk-0" } });
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1500 });
    const response = await container.item("item-1", "pk-1").read();
    await getHedgingDetection(response)?.settled;
    // The drain's end is counted once the record is final, a moment after the reply that ended it.
    for (let waited = 0; waited < 2000 && points((await collected()).get(hedgingMetricNames.drains)).length === 0; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const byName = await collected();
    const base = { [hedgingMetricAttributes.dbSystemName]: "azure.cosmosdb", [hedgingMetricAttributes.dbOperationName]: "read_item", [hedgingMetricAttributes.primaryRegion]: "West US" };
    const hedge = { ...base, [hedgingMetricAttributes.region]: "East US", [hedgingMetricAttributes.reason]: "threshold" };
    assert.deepEqual(points(byName.get(hedgingMetricNames.hedged)), [{ attributes: { ...base, [hedgingMetricAttributes.terminalState]: "hedgeWon" }, value: 1 }]);
    assert.deepEqual(points(byName.get(hedgingMetricNames.hedges)), [{ attributes: hedge, value: 1 }]);
    assert.deepEqual(points(byName.get(hedgingMetricNames.hedgesWon)), [{ attributes: hedge, value: 1 }]);
    const [delay] = points(byName.get(hedgingMetricNames.delay));
    assert.deepEqual(delay?.attributes, hedge);
    const histogram = delay?.value as Histogram;
    assert.equal(histogram.count, 1);
    const seconds = histogram.sum ?? Number.NaN;
    assert.ok(seconds >= 0.09 && seconds < 1, `the hedge went after the 100 ms threshold: ${seconds} s`);
    assert.equal(byName.get(hedgingMetricNames.delay)?.descriptor.unit, "s");
    assert.deepEqual(points(byName.get(hedgingMetricNames.extraRequestCharge)), [{ attributes: { ...base, [hedgingMetricAttributes.region]: "West US" }, value: 1 }]);
    assert.equal(byName.get(hedgingMetricNames.extraRequestCharge)?.descriptor.unit, "{request_unit}");
    assert.deepEqual(points(byName.get(hedgingMetricNames.drains)), [
      { attributes: { ...base, [hedgingMetricAttributes.region]: "West US", [hedgingMetricAttributes.drainEnd]: "settled" }, value: 1 },
    ]);
    assert.equal(byName.has(hedgingMetricNames.budgetRefusals), false, "no refusal, no series");
  });

  it("counts a hedge the budget refused, and nothing for reads that did not hedge", async function () {
    const { container } = await fixture.client({
      // A budget that allows no hedge at all: the first slow read is refused its hedge.
      hedging: { crossRegion: { threshold: 100, budget: { maxExtraLoad: 0.01, minHedgesPerSecond: 0.01, maxHedgesInFlight: 1 } } },
      warmUp: { id: "item-0", pk: "pk-0" },
    });
    await container.item("item-1", "pk-1").read();
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 300 });
    const reads = [];
    for (let index = 0; index < 3; index++) reads.push(container.item("item-2", "pk-2").read());
    await Promise.all(reads);
    const byName = await collected();
    const refusals = points(byName.get(hedgingMetricNames.budgetRefusals));
    assert.equal(refusals.length, 1);
    assert.deepEqual(refusals[0]?.attributes, { [hedgingMetricAttributes.dbSystemName]: "azure.cosmosdb", [hedgingMetricAttributes.dbOperationName]: "read_item", [hedgingMetricAttributes.primaryRegion]: "West US" });
    const hedges = points(byName.get(hedgingMetricNames.hedges)).reduce((sum, point) => sum + (point.value as number), 0);
    assert.equal((refusals[0]?.value as number) + hedges, 3, "every slow read either hedged or was refused");
  });
});
