// npm run bench:yardstick [-- --cases stragglers,mixed --repeats 3 --reads 3000 --rate 100 --out FILE]
//
// Issue 24's verdict, repeated until it means something. `npm run bench`
// measures the learner against the hindsight-best fixed threshold in two
// passes of a thousand reads, each p99 resting on its slowest ten, and the
// learner's own p99 moved by 1.5x between passes of one seed: wider than any
// gap it was asked to show. Here the emulators run in a host process of
// their own, so that the client can be offered several times the load
// (100 reads/s per mode, five modes at once, against 30 in process), each
// pass holds several times the reads, and every case runs again with other
// seeds (fault draws and arrivals). It prints every pass's ratio, how they
// spread, and the verdict over every seed pooled: in each pass, the
// learner's p99 over every read it served against each fixed threshold's
// over every read that threshold served beside it.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { adaptiveMode } from "./support/benchModes.js";
import { hindsightVerdicts, nearestRankP99, onsetSeconds, sweepModes, sweepPasses, sweepStepMs, sweepThresholdsMs } from "./support/hindsight.js";
import type { HindsightVerdict, YardstickPoint } from "./support/hindsight.js";
import { startEmulatorHost } from "./support/remoteEmulator.js";
import { ms, percent } from "./support/stats.js";
import { markdownTable } from "./support/table.js";
import { healthy, mixedTail, noisyHealthy, runCountScenario, stragglers } from "./suites/tail.js";
import type { CountScenario, TailRow } from "./suites/tail.js";

const cases: Readonly<Record<string, CountScenario>> = { healthy, noisy: noisyHealthy, stragglers, mixed: mixedTail };

const { values } = parseArgs({
  options: {
    cases: { type: "string", default: "stragglers,mixed" },
    repeats: { type: "string", default: "3" },
    reads: { type: "string", default: "3000" },
    rate: { type: "string", default: "100" },
    out: { type: "string" },
  },
});

function wholeNumber(option: string, text: string, least: number): number {
  const value = Number(text);
  if (!(Number.isInteger(value) && value >= least)) throw new RangeError(`--${option} takes a whole number >= ${least}; got ${text}`);
  return value;
}

const repeats = wholeNumber("repeats", values.repeats, 1);
const reads = wholeNumber("reads", values.reads, 200);
const rate = wholeNumber("rate", values.rate, 1);
const chosen = values.cases.split(",").map((name) => name.trim());
for (const name of chosen) {
  if (cases[name] === undefined) throw new RangeError(`--cases takes ${Object.keys(cases).join(", ")}; got ${name}`);
}

const learner = adaptiveMode();
const groups = sweepPasses(learner, sweepModes);

function point(mode: string, rows: readonly TailRow[]): YardstickPoint {
  const samples = rows.flatMap((row) => row.latencySamples);
  const sorted = Float64Array.from(samples).sort();
  return {
    mode,
    p50: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
    p99: nearestRankP99(samples),
    extra: rows.reduce((sum, row) => sum + row.extraRequests, 0) / rows.length,
    samples,
  };
}

const interval = (value: readonly [number, number] | undefined): string => (value === undefined ? "-" : `${value[0].toFixed(2)}-${value[1].toFixed(2)}`);
const bare = (mode: string): string => mode.replace(/^sweep: /, "").replace(/, one hedge$/, "");

function verdictCells(verdict: HindsightVerdict): string[] {
  return [
    ms(verdict.learner.p99),
    percent(verdict.learner.extra),
    verdict.best === undefined ? "none spends so little" : `${bare(verdict.best.mode)}: ${ms(verdict.best.p99)} at ${percent(verdict.best.extra)}`,
    verdict.ratio === undefined ? "-" : verdict.ratio.toFixed(2),
    interval(verdict.interval),
    verdict.crossValidated === undefined ? "-" : verdict.crossValidated.ratio.toFixed(2),
    interval(verdict.crossValidated?.interval),
  ];
}

const verdictHeader = ["learner p99 ms", "learner extra", "best fixed at no more extra: p99 ms at extra", "÷ it", "95 % interval", "÷ cross-validated best", "95 % interval"];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const shownOnset = (seconds: number | undefined): string => (seconds === undefined ? "never" : `${seconds} s`);

/** Issue 24's onset (see `onsetSeconds`) in a pass that ran fixed 100 ms beside the learner, else a dash. */
function onset(rows: readonly TailRow[]): string {
  const own = rows.find((row) => row.mode === learner.name)!.secondP99s;
  const reference = rows.find((row) => bare(row.mode) === "fixed 100 ms")?.secondP99s;
  if (reference === undefined) return "-";
  return `${shownOnset(onsetSeconds(own, reference, 100))} / ${shownOnset(onsetSeconds(own, reference))}`;
}

const geometricMean = (values: readonly number[]): number => Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);

const started = new Date();
const loads: string[] = [`start ${loadavg().map((value) => value.toFixed(2)).join(" ")}`];
const parts: string[] = [
  `# Yardstick: the learner against the hindsight-best fixed threshold, repeated\n\n` +
    `Started ${started.toISOString()}; ${repeats} seeds a case, ${reads} reads a mode a pass at ${rate} reads/s a mode (Poisson), ` +
    `five modes at once (${learner.name} beside four of the fixed thresholds ${sweepThresholdsMs.join(", ")} ms, thresholdStep ${sweepStepMs} ms, ` +
    `so one hedge a read), two passes a seed; every mode on its own emulator, all emulators in one host process. Seed s draws the ` +
    `faults and the arrivals of every mode of both passes of that seed.`,
];
const host = await startEmulatorHost();
try {
  for (const name of chosen) {
    const scenario = { ...cases[name]!, reads };
    const passes: { seed: number; pass: number; rows: TailRow[] }[] = [];
    for (let repeat = 0; repeat < repeats; repeat++) {
      const seed = 7 + repeat;
      for (const [pass, group] of groups.entries()) {
        console.log(`${scenario.name}: seed ${seed}, pass ${pass + 1}...`);
        const rows = await runCountScenario(scenario, group, { host, seed, load: { ratePerSecond: rate, arrivals: "poisson", seed, maxInFlight: 512 } });
        passes.push({ seed, pass: pass + 1, rows });
      }
    }
    loads.push(`${name} ${loadavg().map((value) => value.toFixed(2)).join(" ")}`);
    const verdicts = passes.map(({ rows }) => {
      const learnerRow = rows.find((row) => row.mode === learner.name)!;
      const sweep = rows.filter((row) => row.mode !== learner.name).map((row) => point(row.mode, [row]));
      return hindsightVerdicts(sweep, [point(learner.name, [learnerRow])])[0]!;
    });
    const passTable = markdownTable(
      ["seed", "pass", ...verdictHeader, "onset vs fixed 100 ms, tolerant / strict", "start lag p99 ms (worst mode)", "errors"],
      passes.map(({ seed, pass, rows }, p) => [
        String(seed),
        String(pass),
        ...verdictCells(verdicts[p]!),
        onset(rows),
        ms(Math.max(...rows.map((row) => row.startLagP99))),
        String(rows.reduce((sum, row) => sum + row.errors, 0)),
      ]),
    );
    const thresholdTable = markdownTable(
      ["seed", "pass", "reads with a threshold", "benefit", "noBenefit", "adaptive", "adaptiveWarmup", "p10 ms", "p50 ms", "p90 ms", "p99 ms"],
      passes.map(({ seed, pass, rows }) => {
        const thresholds = rows.find((row) => row.mode === learner.name)!.thresholds;
        const share = (source: string): string => percent(thresholds.filter((each) => each.source === source).length / Math.max(1, thresholds.length));
        const sorted = Float64Array.from(thresholds.map((each) => each.ms)).sort();
        const at = (q: number): string => ms(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
        return [String(seed), String(pass), String(thresholds.length), share("benefit"), share("noBenefit"), share("adaptive"), share("adaptiveWarmup"), at(0.1), at(0.5), at(0.9), at(0.99)];
      }),
    );
    const ratios = verdicts.flatMap((verdict) => (verdict.ratio === undefined ? [] : [verdict.ratio]));
    const above = verdicts.filter((verdict) => verdict.ratio !== undefined && verdict.ratio > 1).length;
    const wholly = verdicts.filter((verdict) => verdict.interval !== undefined && verdict.interval[0] > 1).length;
    const spreads = Array.from({ length: repeats }, (_, repeat) => {
      const own = passes.filter((each) => each.seed === 7 + repeat).map((each) => each.rows.find((row) => row.mode === learner.name)!.latency.p99);
      return Math.max(...own) / Math.min(...own);
    });
    const spread =
      ratios.length === 0
        ? "No pass had a fixed threshold that spent no more than the learner."
        : `Per pass, learner ÷ best: min ${Math.min(...ratios).toFixed(2)}, median ${median(ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}, ` +
          `geometric mean ${geometricMean(ratios).toFixed(3)}; ${above} of ${verdicts.length} passes above 1.0, ${wholly} with the interval wholly above 1.0. ` +
          `The learner's p99, pass 1 against pass 2 of one seed (the larger ÷ the smaller): ${spreads.map((each) => each.toFixed(2)).join(", ")}.`;
    // A fixed threshold is pooled only with the learner's reads of the passes it ran in: passes differ more than modes do.
    const pooledGroups = groups.map((_, g) => {
      const own = passes.filter((each) => each.pass === g + 1);
      const learnerPoint = point(learner.name, own.map(({ rows }) => rows.find((row) => row.mode === learner.name)!));
      const sweep = sweepModes
        .filter((mode) => own.some(({ rows }) => rows.some((row) => row.mode === mode.name)))
        .map((mode) => point(mode.name, own.flatMap(({ rows }) => rows.filter((row) => row.mode === mode.name))));
      return { pass: g + 1, learner: learnerPoint, sweep, verdict: hindsightVerdicts(sweep, [learnerPoint])[0]! };
    });
    const pooledTable = markdownTable(
      ["pass", "mode", "reads", "p50 ms", "p99 ms", "extra requests"],
      pooledGroups.flatMap(({ pass, learner: own, sweep }) =>
        [own, ...sweep].map((each) => [String(pass), bare(each.mode), String(each.samples!.length), ms(each.p50), ms(each.p99), percent(each.extra)]),
      ),
    );
    const pooledVerdict = markdownTable(
      ["", ...verdictHeader],
      pooledGroups.map(({ pass, verdict }) => [`pass ${pass}, every seed pooled`, ...verdictCells(verdict)]),
    );
    parts.push(`## ${scenario.name}\n\n### Pass by pass\n\n${passTable}\n\n${spread}\n\nThe learner's thresholds, read by read (where each came from, and its percentiles):\n\n${thresholdTable}\n\n### Every seed pooled, pass by pass\n\n${pooledTable}\n\n${pooledVerdict}`);
    console.log(parts[parts.length - 1]);
  }
} finally {
  await host.close();
}
parts.push(`Load averages (1, 5, 15 min): ${loads.join("; ")}. Took ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} min.`);
const report = `${parts.join("\n\n")}\n`;
if (values.out !== undefined) writeFileSync(values.out, report);
console.log(`\n${parts[parts.length - 1]}`);
