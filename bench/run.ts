// npm run bench — every benchmark in one run, all modes side by side, so that
// ratios hold on a noisy machine. Every latency case offers each mode the same
// open-loop load; the overhead suite (throughput) and the WAN suite (the
// connections losers cost, at a fixed concurrency) run closed-loop. Prints
// the tables and writes
// bench/results/latest.json (raw, not committed) and latest.md (committed).
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { benchModes } from "./support/benchModes.js";
import { coldStartTable, defaultColdStartSettings, runColdStartSuite } from "./suites/coldStart.js";
import { clientMemoryTable, defaultOverheadSettings, measureClientMemory, overheadTable, runOverheadSuite } from "./suites/overhead.js";
import { defaultSdkOverheadSettings, runSdkOverheadSuite, sdkOverheadTables } from "./suites/sdkOverhead.js";
import { brownOutTable, countScenarios, defaultBrownOut, defaultTailLoad, runBrownOut, runCountScenario, tailCaption, tailTable } from "./suites/tail.js";
import type { TailRow } from "./suites/tail.js";
import { defaultWanSettings, runWanSuite, wanSection } from "./suites/wan.js";

const resultsFolder = join("bench", "results");

function section(title: string, body: string): string {
  console.log(`\n## ${title}\n\n${body}`);
  return `## ${title}\n\n${body}\n`;
}

const started = new Date();
const parts: string[] = [];
const tail: TailRow[] = [];
for (const scenario of countScenarios) {
  console.log(`Running "${scenario.name}" (${scenario.reads} point reads per mode at ${defaultTailLoad.ratePerSecond}/s)...`);
  const rows = await runCountScenario(scenario, benchModes);
  tail.push(...rows);
  parts.push(section(`Tail latency: ${scenario.name}`, `${tailCaption(rows)}\n\n${tailTable(rows)}`));
}

console.log("Running the brown-out (every mode at once)...");
const brownOut = await runBrownOut(benchModes);
parts.push(section("Brown-out of the preferred region", brownOutTable(brownOut, defaultBrownOut)));

console.log("Running the metadata cold start...");
const coldStart = await runColdStartSuite(defaultColdStartSettings);
parts.push(section("Metadata cold start: time to first read of fresh clients", coldStartTable(coldStart)));

console.log("Running the overhead microbenchmark...");
const overhead = await runOverheadSuite(defaultOverheadSettings);
parts.push(section("Overhead of the pass-through path (in-process, instant fake transport)", overheadTable(overhead, defaultOverheadSettings)));
const clientMemory = await measureClientMemory();
parts.push(section("Memory per hedging client (in-process)", clientMemoryTable(clientMemory)));

console.log("Running the overhead suite through the real @azure/cosmos client...");
const sdkOverhead = await runSdkOverheadSuite(defaultSdkOverheadSettings);
parts.push(section("Client CPU per read through the real @azure/cosmos client", sdkOverheadTables(sdkOverhead, defaultSdkOverheadSettings)));

console.log("Running the WAN suite...");
const wan = await runWanSuite(defaultWanSettings);
parts.push(section("Over a WAN: the connections losers cost, aborted vs drained", wanSection(wan, defaultWanSettings)));

const machine = `${cpus().length} cores, Node ${process.version}, ${started.toISOString().slice(0, 10)}`;
mkdirSync(resultsFolder, { recursive: true });
writeFileSync(join(resultsFolder, "latest.json"), JSON.stringify({ machine, started, tail, brownOut, coldStart, overhead, clientMemory, sdkOverhead, wan }, null, 2));
writeFileSync(
  join(resultsFolder, "latest.md"),
  `# Benchmark results\n\n\`npm run bench\` on ${machine}; the multi-region emulator on loopback. ` +
    `Each table compares its modes in one run; the latency cases offer every mode the same open-loop load ` +
    `and time each read from its scheduled start (see CONTRIBUTING.md, "How the benchmarks and the demo measure").\n\n${parts.join("\n")}`,
);
console.log(`\nWrote ${join(resultsFolder, "latest.md")} and latest.json.`);
