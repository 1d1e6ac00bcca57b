/**
 * Tracing: hedging reports through `@azure/core-tracing`, the way Azure SDK
 * clients do, so OpenTelemetry with `@azure/opentelemetry-instrumentation-azure-sdk`
 * (or the Azure Monitor distro, which registers it for you) records it with
 * no code of yours: a span per race that hedged (it starts when the hedge is
 * due) under your own span, a child span per arm, and core-rest-pipeline's
 * HTTP span under each hedge (the primary is the SDK's own request). This sample
 * exports the spans to memory and prints the tree of one hedged read.
 *
 * Run: npm run sample -- tracing
 */
import { register } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { trace } from "@opentelemetry/api";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { createAzureSdkInstrumentation } from "@azure/opentelemetry-instrumentation-azure-sdk";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-node";

// What an application's instrumentation file does, before any Azure package loads. In an ES module
// application the instrumentation needs OpenTelemetry's loader hook; a CommonJS one needs only the two calls below it.
// The hook must be the one of the @opentelemetry/instrumentation that the Azure instrumentation itself uses, so it is
// resolved from that package: a newer copy at the top level (what `npm i @opentelemetry/instrumentation` installs
// today) has another import-in-the-middle, and its hook silently records no Azure span (see docs/tracing.md).
register("@opentelemetry/instrumentation/hook.mjs", import.meta.resolve("@azure/opentelemetry-instrumentation-azure-sdk"));
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
registerInstrumentations({ instrumentations: [createAzureSdkInstrumentation()] });

// Loaded after the instrumentation, as OpenTelemetry requires.
const { CosmosClient } = await import("@azure/cosmos");
const { withHedging } = await import("cosmos-hedging");
const { openSampleAccount, sampleContainer, slowDownRegion } = await import("./support/account.js");

/** The attributes worth a glance: this package's, and the HTTP status. */
function summary(span: ReadableSpan): string {
  const shown: string[] = [];
  for (const [name, value] of Object.entries(span.attributes)) {
    if (name.startsWith("cosmos.hedging.")) shown.push(`${name.slice("cosmos.hedging.".length)}=${String(value)}`);
    else if (name === "http.status_code") shown.push(`status=${String(value)}`);
  }
  return shown.join(" ");
}

function printTree(spans: readonly ReadableSpan[], parentId: string | undefined, depth: number): void {
  const children = spans
    .filter((span) => span.parentSpanContext?.spanId === parentId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  for (const span of children) {
    const ms = Math.round(span.duration[0] * 1000 + span.duration[1] / 1e6);
    console.log(`${"  ".repeat(depth)}${span.name} (${span.instrumentationScope.name}, ${ms} ms) ${summary(span)}`.trimEnd());
    printTree(spans, span.spanContext().spanId, depth + 1);
  }
}

const account = await openSampleAccount();
const { endpoint, key, preferredLocations } = account;
const options = withHedging({ endpoint, key, connectionPolicy: { preferredLocations } }, { crossRegion: { threshold: 100 } });
const client = new CosmosClient(options);

try {
  const container = sampleContainer(client);
  await container.item("item-0", "pk-0").read();
  slowDownRegion(account, { region: preferredLocations[0]!, delayMs: 1000, operations: ["pointRead"] }, options);
  exporter.reset();

  // Your own span: the hedging spans nest under whatever span is active when the SDK sends the request.
  await trace.getTracer("sample-app").startActiveSpan("load order", async (span) => {
    try {
      await container.item("item-1", "pk-1").read();
    } finally {
      span.end();
    }
  });
  // The losing arm is left to finish (so that its connection goes back to the pool): its spans end after the read returns.
  const allEnded = (): boolean => exporter.getFinishedSpans().filter((span) => span.name === "hedge pointRead arm").length >= 2;
  for (let waited = 0; !allEnded() && waited < 5000; waited += 50) await sleep(50);

  const spans = exporter.getFinishedSpans();
  const root = spans.find((span) => span.name === "load order");
  console.log(`\nSpans of one read while ${preferredLocations[0]} is slow:`);
  printTree(spans, root?.parentSpanContext?.spanId, 0);
} finally {
  client.dispose();
  await account.close();
  await provider.shutdown();
}
