// npm run bench:sdk-allocations: what a warm point read allocates through the real @azure/cosmos client, per
// mode of the overhead suite (in memory, each mode in a fresh process): promises and timers counted exactly
// (async_hooks), bytes sampled by V8's heap profiler. Unlike CPU time these hardly move with the machine's
// load, so they show a change of the package's hot path in one run.
import { spawn } from "node:child_process";
import { sdkOverheadModes } from "./suites/sdkOverhead.js";
import { markdownTable } from "./support/table.js";

interface Allocations {
  readonly promises: number;
  readonly timers: number;
  readonly bytes: number;
}

function measure(modeIndex: number): Promise<Allocations> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/support/sdkAllocationsWorker.ts"], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, SDK_ALLOCATIONS_MODE: String(modeIndex) },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(output) as Allocations) : reject(new Error(`mode ${modeIndex} exited with ${code}`))));
  });
}

// Plain, hedging on, hedging off and the floor: the modes whose difference is the package's hot path.
const modes = [0, 2, 3, 5];
const rows: Allocations[] = [];
for (const index of modes) rows.push(await measure(index));
const plain = rows[0]!;
console.log(
  markdownTable(
    ["mode", "promises a read", "timers a read", "KiB a read", "KiB over plain"],
    modes.map((index, at) => {
      const row = rows[at]!;
      return [sdkOverheadModes[index]!.name, row.promises.toFixed(1), row.timers.toFixed(1), (row.bytes / 1024).toFixed(1), ((row.bytes - plain.bytes) / 1024).toFixed(1)];
    }),
  ),
);
