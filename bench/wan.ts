// npm run bench:wan — issue 15's benchmark: point reads through the real
// @azure/cosmos over the emulator's WAN mode (HTTPS, round trips charged per
// TCP chunk), every mode side by side in one run, losers aborted (before)
// and drained (after), then a quiet client whose hedge region idles past the
// server's keep-alive timeout. Prints the tables and writes bench/results/wan.md.
// `npm run bench:wan -- --warmup-reads 300 --out bench/results/wan-300.md`
// runs it with a shorter warm-up (the pools still growing) into another file.
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defaultWanSettings, runWanSuite, wanSection } from "./suites/wan.js";
import { defaultWanIdleSettings, runWanIdleSuite, wanIdleSection } from "./suites/wanIdle.js";

const { values } = parseArgs({ options: { "warmup-reads": { type: "string" }, out: { type: "string" } } });
const warmupReads = values["warmup-reads"] === undefined ? defaultWanSettings.warmupReads : Number(values["warmup-reads"]);
if (!Number.isInteger(warmupReads) || warmupReads < 0) throw new RangeError(`--warmup-reads must be a whole number; got ${values["warmup-reads"]}`);
const settings = { ...defaultWanSettings, warmupReads };
const out = values.out ?? join("bench", "results", "wan.md");

console.log("Running the WAN suite...");
const rows = await runWanSuite(settings);
const idleRows = await runWanIdleSuite(defaultWanIdleSettings);
const machine = `${cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
const section = `${wanSection(rows, settings)}\n## A hedge region left idle\n\n${wanIdleSection(idleRows, defaultWanIdleSettings)}`;
console.log(`\n${section}`);
writeFileSync(out, `# WAN benchmark\n\n\`npm run bench:wan\` on ${machine}.\n\n${section}`);
console.log(`\nWrote ${out}.`);
