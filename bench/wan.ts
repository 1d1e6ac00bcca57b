// npm run bench:wan — issue 15's benchmark: point reads through the real
// @azure/cosmos over the emulator's WAN mode (HTTPS, round trips charged per
// TCP chunk), every mode side by side in one run, losers aborted (before)
// and drained (after). Prints the table and writes bench/results/wan.md.
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { defaultWanSettings, runWanSuite, wanSection } from "./suites/wan.js";

console.log("Running the WAN suite...");
const rows = await runWanSuite(defaultWanSettings);
const machine = `${cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
const section = wanSection(rows, defaultWanSettings);
console.log(`\n${section}`);
writeFileSync(join("bench", "results", "wan.md"), `# WAN benchmark\n\n\`npm run bench:wan\` on ${machine}.\n\n${section}`);
console.log(`\nWrote ${join("bench", "results", "wan.md")}.`);
