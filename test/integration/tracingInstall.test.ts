import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { useEmulator } from "../support/emulatorFixture.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));

/**
 * What a user installs today to trace an application (the latest of each,
 * from the registry), beside the packed tarball. The install needs the npm
 * registry (about 40 s in all); `COSMOS_HEDGING_SKIP_REGISTRY_TESTS=1`
 * skips it on a machine without one.
 */
const userPackages = [
  "@azure/cosmos",
  "@opentelemetry/api",
  "@opentelemetry/sdk-trace-node",
  "@opentelemetry/instrumentation",
  "@azure/opentelemetry-instrumentation-azure-sdk",
];

/**
 * The loader hook line of an ES module app. `topLevel` is what the
 * OpenTelemetry documentation shows; `azureInstrumentation` registers the
 * hook of the `@opentelemetry/instrumentation` that the Azure
 * instrumentation itself depends on, which works whatever version sits at
 * the top level (see docs/tracing.md).
 */
const hookLines = {
  topLevel: `register("@opentelemetry/instrumentation/hook.mjs", import.meta.url);`,
  azureInstrumentation: `register("@opentelemetry/instrumentation/hook.mjs", import.meta.resolve("@azure/opentelemetry-instrumentation-azure-sdk"));`,
} as const;

/** The body of the app after its instrumentation: one read under the user's own span, then the spans as JSON. */
const appBody = `
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
registerInstrumentations({ instrumentations: [createAzureSdkInstrumentation()] });

async function main() {
  // Loaded after the instrumentation, as OpenTelemetry requires.
  const { CosmosClient } = await import("@azure/cosmos");
  const { withHedging } = await import("cosmos-hedging");
  const { ENDPOINT: endpoint, KEY: key } = process.env;
  const client = new CosmosClient(withHedging({ endpoint, key, connectionPolicy: { preferredLocations: ["West US", "East US"], enableBackgroundEndpointRefreshing: false } }, { crossRegion: { threshold: 100 } }));
  const container = client.database("db").container("items");
  await container.item("item-0", "pk-0").read();
  exporter.reset();
  await trace.getTracer("app").startActiveSpan("load order", async (span) => {
    try {
      await container.item("item-1", "pk-1").read();
    } finally {
      span.end();
    }
  });
  // Three reads at once, each in a span of its own: they wait for their threshold on one timer, which fires in the
  // context of the first; each race's span must still be under its own read's span.
  await Promise.all(["A", "B", "C"].map(async (name, i) => {
    await new Promise((resolve) => setTimeout(resolve, 20 * i));
    await trace.getTracer("app").startActiveSpan("order " + name, async (span) => {
      try {
        await container.item("item-1", "pk-1").read();
      } finally {
        span.end();
      }
    });
  }));
  // The drained loser's spans end after the read returns.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  client.dispose();
  const spans = exporter.getFinishedSpans().map((span) => ({ name: span.name, id: span.spanContext().spanId, parent: span.parentSpanContext?.spanId }));
  console.log(JSON.stringify(spans));
}
`;

const esmApp = (hook: keyof typeof hookLines): string => `
import { register } from "node:module";
import { trace } from "@opentelemetry/api";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { createAzureSdkInstrumentation } from "@azure/opentelemetry-instrumentation-azure-sdk";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";

${hookLines[hook]}
${appBody}
await main();
`;

const cjsApp = `
const { trace } = require("@opentelemetry/api");
const { registerInstrumentations } = require("@opentelemetry/instrumentation");
const { createAzureSdkInstrumentation } = require("@azure/opentelemetry-instrumentation-azure-sdk");
const { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-node");
${appBody.replaceAll("await import(", "require(")}
void main();
`;

interface Span {
  readonly name: string;
  readonly id: string;
  readonly parent?: string;
}

/** The names of the spans under `rootName`, depth first. */
function descendants(spans: readonly Span[], rootName: string): string[] {
  const root = spans.find((span) => span.name === rootName);
  if (root === undefined) return [];
  const under = (id: string): string[] => spans.filter((span) => span.parent === id).flatMap((span) => [span.name, ...under(span.id)]);
  return under(root.id);
}

(process.env["COSMOS_HEDGING_SKIP_REGISTRY_TESTS"] === "1" ? describe.skip : describe)("tracing as a user installs it: the packed tarball with the latest OpenTelemetry packages from the registry", function () {
  this.timeout(180_000);
  const fixture = useEmulator({ items: [0, 1].map((i) => ({ id: `item-${i}`, pk: `pk-${i}` })), preferredLocations: ["West US", "East US"] });
  let app: string;

  before(async function () {
    if (!existsSync(join(root, "dist", "esm", "index.js"))) throw new Error("npm pack ships dist/: run `npm run build` first.");
    app = mkdtempSync(join(tmpdir(), "cosmos-hedging-tracing-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", app], { cwd: root });
    const [packed] = JSON.parse(stdout) as [{ filename: string }];
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "traced-app", private: true }));
    const install = (...flags: string[]) => run("npm", ["install", "--no-audit", "--no-fund", ...flags, join(app, packed.filename), ...userPackages], { cwd: app });
    try {
      await install();
    } catch (error) {
      // On Node 22.15 and later the latest @opentelemetry/instrumentation wants an @opentelemetry/api that the latest
      // @opentelemetry/sdk-trace-node's peer range leaves out, and npm stops (ERESOLVE); the user retries as npm suggests
      // and docs/tracing.md says, and the spans must still come out.
      if (!String((error as { stderr?: unknown }).stderr).includes("ERESOLVE")) throw error;
      console.log("      npm stopped with ERESOLVE (the latest OpenTelemetry packages disagree on @opentelemetry/api); installed again with --legacy-peer-deps.");
      await install("--legacy-peer-deps");
    }
  });

  after(function () {
    if (app !== undefined) rmSync(app, { recursive: true, force: true });
  });

  async function spansOf(file: string, source: string): Promise<Span[]> {
    writeFileSync(join(app, file), source);
    fixture.emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1000 });
    const { stdout } = await run(process.execPath, [join(app, file)], { cwd: app, env: { ...process.env, ENDPOINT: fixture.emulator.endpoint, KEY: fixture.emulator.key } });
    return JSON.parse(stdout.trim().split("\n").at(-1) ?? "[]") as Span[];
  }

  function assertHedged(spans: readonly Span[]): void {
    const under = descendants(spans, "load order");
    assert.ok(under.includes("hedge pointRead"), `the race's span is under the user's span: ${JSON.stringify(under)}`);
    assert.ok(under.filter((name) => name === "hedge pointRead arm").length >= 2, `with a span per arm: ${JSON.stringify(under)}`);
    for (const read of ["order A", "order B", "order C"]) {
      const races = descendants(spans, read).filter((name) => name === "hedge pointRead");
      assert.equal(races.length, 1, `${read}: its own race's span under it, of three reads at once: ${JSON.stringify(descendants(spans, read))}`);
    }
  }

  it("records the hedge spans under the user's span in an ES module app that registers the loader hook of the Azure instrumentation's own @opentelemetry/instrumentation", async function () {
    assertHedged(await spansOf("app.mjs", esmApp("azureInstrumentation")));
  });

  it("records the hedge spans under the user's span in a CommonJS app, which needs no loader hook", async function () {
    assertHedged(await spansOf("app.cjs", cjsApp));
  });

  it("reports whether the top-level hook still loses the spans (the version trap), without failing on it", async function () {
    const installed = (name: string, from = app): string =>
      (JSON.parse(readFileSync(join(from, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
    const nested = join(app, "node_modules", "@azure", "opentelemetry-instrumentation-azure-sdk");
    const nestedVersion = existsSync(join(nested, "node_modules", "@opentelemetry", "instrumentation")) ? installed("@opentelemetry/instrumentation", nested) : "deduplicated";
    const under = descendants(await spansOf("trap.mjs", esmApp("topLevel")), "load order");
    console.log(
      `      top-level @opentelemetry/instrumentation ${installed("@opentelemetry/instrumentation")}, the Azure instrumentation's ${nestedVersion}: ` +
        `with the top-level hook the user's span has ${under.length} spans under it${under.includes("hedge pointRead") ? ", the hedge spans among them" : ", no hedge span"}.`,
    );
  });
});
