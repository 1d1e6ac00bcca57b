// npm run bench:sdk-overhead-paired [-- <mode index>]: a plain client and the client of one mode of the
// overhead suite (bench/suites/sdkOverhead.ts; default 2, hedging on) in one process, over the in-memory
// account, their rounds of point reads alternating; prints the median over the pairs of the ratio of CPU per
// read. Less exact than the suite (the two clients share one heap, and each other's garbage), and much less
// spread by a busy machine (the two rounds of a pair run a moment apart): for comparing two builds of the
// package, or variants of one.
import { CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { median, readRound, sdkOverheadBaseOptions, sdkOverheadModes } from "./suites/sdkOverhead.js";

const pairs = Number(process.env.PAIRS ?? 30);
const readsPerRound = Number(process.env.READS ?? 1000);
const concurrency = 8;

const modeIndex = Number(process.argv[2] ?? 2);
const mode = sdkOverheadModes[modeIndex];
if (mode === undefined || modeIndex === 0) {
  throw new RangeError(`the mode index must be 1 to ${sdkOverheadModes.length - 1} (0 is plain itself); got ${process.argv[2]}`);
}

/** The client's CPU per read (user and system, µs) over one round. */
async function cpuPerRead(container: Container): Promise<number> {
  const before = process.cpuUsage();
  await readRound(container, readsPerRound, concurrency);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / readsPerRound;
}

const plain = new CosmosClient(sdkOverheadModes[0]!.options(sdkOverheadBaseOptions({ kind: "inMemory" })));
const other = new CosmosClient(mode.options(sdkOverheadBaseOptions({ kind: "inMemory" })));
try {
  const plainItems = plain.database("bench").container("items");
  const otherItems = other.database("bench").container("items");
  for (let warmUp = 0; warmUp < 3; warmUp++) {
    await cpuPerRead(plainItems);
    await cpuPerRead(otherItems);
  }
  const ratios: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    // Each pair starts with the other client than the last, so that neither always runs first.
    const [first, second] = pair % 2 === 0 ? [plainItems, otherItems] : [otherItems, plainItems];
    const firstCpu = await cpuPerRead(first);
    const secondCpu = await cpuPerRead(second);
    ratios.push(first === otherItems ? firstCpu / secondCpu : secondCpu / firstCpu);
  }
  console.log(`${mode.name}: CPU per read ${median(ratios).toFixed(3)} x plain's (median of ${pairs} pairs of ${readsPerRound} reads)`);
} finally {
  plain.dispose();
  other.dispose();
}
