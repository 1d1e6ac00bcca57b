// Runs one sample: `npm run sample -- <name>` runs samples/<name>.ts. Samples
// import the package by its public name, which resolves to dist/, so the
// package is built first when dist/ is missing or older than src/.
import { spawn, execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const samplesDir = join(root, "samples");
const available = readdirSync(samplesDir)
  .filter((file) => file.endsWith(".ts"))
  .map((file) => file.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (name === undefined || !available.includes(name.replace(/\.ts$/, ""))) {
  const problem = name === undefined ? "Name a sample to run." : `There is no sample ${JSON.stringify(name)}.`;
  console.error(`${problem} Usage: npm run sample -- <name>\nSamples: ${available.join(", ")}`);
  process.exit(2);
}

function newestModification(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestModification(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const builtEntry = join(root, "dist", "esm", "index.js");
if (!existsSync(builtEntry) || statSync(builtEntry).mtimeMs < newestModification(join(root, "src"))) {
  console.error("Building cosmos-hedging first (dist/ is missing or older than src/)...");
  execFileSync(process.execPath, [join(root, "scripts", "build.mjs")], { cwd: root, stdio: "inherit" });
}

const child = spawn(process.execPath, ["--import", "tsx", join(samplesDir, `${name.replace(/\.ts$/, "")}.ts`), ...args], {
  cwd: root,
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  process.exitCode = code ?? (signal !== null ? 1 : 0);
});
