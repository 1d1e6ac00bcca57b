// npm run test:sdk-matrix [-- [--suites differential,integration] 4.7.0 4.9.3 ...]
//
// Runs the suites against other @azure/cosmos versions than the one the lock file pins: for each version, a fresh
// clone of HEAD in a temporary folder, `npm ci`, that version installed over the pinned one (`--no-save`), the build,
// then each suite, whose closing counts are gathered into one table. Every test compares plain @azure/cosmos with
// hedging on the same version, so a failure here is either a defect of this package's under that version or a test
// that assumes 4.10.1's SDK; read the failures before moving the floor (src/cosmos/sdkVersion.ts, peerDependencies).
// Not part of `npm test`: about three minutes a version for the differential suite, eight with integration.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { suites: { type: "string", default: "differential" } },
});
const versions = positionals.length > 0 ? positionals : ["4.6.0", "4.7.0", "4.8.0", "4.9.3", "4.10.1"];
const suites = values.suites.split(",");
for (const suite of suites) {
  if (!["unit", "reliability", "integration", "differential"].includes(suite)) throw new RangeError(`--suites: unknown suite ${JSON.stringify(suite)}`);
}
for (const version of versions) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new RangeError(`a version must be major.minor.patch; got ${JSON.stringify(version)}`);
}

const repo = execFileSync("git", ["rev-parse", "--show-toplevel"], { encoding: "utf8" }).trim();
const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", cwd: repo }).trim();

/** Runs a command in `cwd`, its output passed through; returns its output and exit status. */
function run(cwd, command, args) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", env: { ...process.env, CI: "true" }, maxBuffer: 256 * 1024 * 1024 });
  process.stdout.write(result.stdout ?? "");
  process.stderr.write(result.stderr ?? "");
  return { output: `${result.stdout ?? ""}\n${result.stderr ?? ""}`, status: result.status };
}

/** Mocha's closing counts, summed over its lines (a parallel run prints one set). */
function counts(output) {
  // Mocha's colours (ESC [ ... m) out.
  const plain = output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "");
  const sum = (word) => [...plain.matchAll(new RegExp(`^\\s*(\\d+) ${word}`, "gm"))].reduce((total, match) => total + Number(match[1]), 0);
  return { passing: sum("passing"), failing: sum("failing"), pending: sum("pending") };
}

const rows = [];
for (const version of versions) {
  const folder = mkdtempSync(join(tmpdir(), `sdk-matrix-${version}-`));
  try {
    run(folder, "git", ["clone", "--quiet", repo, "."]);
    run(folder, "git", ["checkout", "--quiet", head]);
    run(folder, "npm", ["ci", "--no-audit", "--no-fund", "--silent"]);
    const installed = run(folder, "npm", ["install", "--no-save", "--no-audit", "--no-fund", "--silent", `@azure/cosmos@${version}`]);
    if (installed.status !== 0) {
      rows.push(`| ${version} | ${suites.map(() => "install failed").join(" | ")} |`);
      continue;
    }
    run(folder, "npm", ["run", "build", "--silent"]);
    const cells = [];
    for (const suite of suites) {
      const started = Date.now();
      const { output } = run(folder, "npm", ["run", `test:${suite}`, "--silent"]);
      const { passing, failing, pending } = counts(output);
      cells.push(`${passing} passing, ${failing} failing${pending > 0 ? `, ${pending} pending` : ""} (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    rows.push(`| ${version} | ${cells.join(" | ")} |`);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

console.log(`\n@azure/cosmos versions on ${head} (${new Date().toISOString()}):\n`);
console.log(`| @azure/cosmos | ${suites.join(" | ")} |`);
console.log(`| --- | ${suites.map(() => "---").join(" | ")} |`);
for (const row of rows) console.log(row);
