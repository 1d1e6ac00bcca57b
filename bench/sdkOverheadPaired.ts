// npm run bench:sdk-overhead-paired [-- <mode index>]: a plain client and the client of one mode of the
// overhead suite (bench/suites/sdkOverhead.ts; default 2, hedging on) in one process, over the in-memory
// account, their rounds of point reads alternating; prints the median over the pairs of the ratio of CPU per
// read, and of reads a second (in memory the client is the whole of the work, so its throughput is what its
// CPU allows). Less exact than the suite (the two clients share one heap, and each other's garbage), and much less
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

/** One round of a client: its CPU per read (user and system, µs) and its reads a second. */
interface Round {
  readonly cpuPerRead: number;
  readonly readsPerSecond: number;
}

async function round(container: Container): Promise<Round> {
  const before = process.cpuUsage();
  const began = performance.now();
  await readRound(container, readsPerRound, concurrency);
  const elapsedMs = performance.now() - began;
  const used = process.cpuUsage(before);
  return { cpuPerRead: (used.user + used.system) / readsPerRound, readsPerSecond: (readsPerRound * 1000) / elapsedMs };
}

const plain = new CosmosClient(sdkOverheadModes[0]!.options(sdkOverheadBaseOptions({ kind: "inMemory" })));
const other = new CosmosClient(mode.options(sdkOverheadBaseOptions({ kind: "inMemory" })));
try {
  const plainItems = plain.database("bench").container("items");
  const otherItems = other.database("bench").container("items");
  for (let warmUp = 0; warmUp < 3; warmUp++) {
    await round(plainItems);
    await round(otherItems);
  }
  const cpuRatios: number[] = [];
  const throughputRatios: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    // Each pair starts with the other client than the last, so that neither always runs first.
    const otherFirst = pair % 2 === 1;
    const first = await round(otherFirst ? otherItems : plainItems);
    const second = await round(otherFirst ? plainItems : otherItems);
    const [own, plainRound] = otherFirst ? [first, second] : [second, first];
    cpuRatios.push(own.cpuPerRead / plainRound.cpuPerRead);
    throughputRatios.push(own.readsPerSecond / plainRound.readsPerSecond);
  }
  console.log(
    `${mode.name}: CPU per read ${median(cpuRatios).toFixed(3)} x plain's, throughput ${median(throughputRatios).toFixed(3)} x plain's ` +
      `(medians of ${pairs} pairs of ${readsPerRound} reads)`,
  );
} finally {
  plain.dispose();
  other.dispose();
}
