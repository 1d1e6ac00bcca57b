import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

function newestModification(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((newest, entry) => Math.max(newest, newestModification(join(path, entry))), stat.mtimeMs);
}

/**
 * Makes sure `dist/` is the build of the current sources, for the tests that
 * use the package by its name (the samples, the package exports): builds it
 * (`scripts/build.mjs`, as `npm run build`) when it is missing or older than
 * anything in `src/` or the build configuration, and fails with the build's
 * own output when that build fails. Under `npm test` the build has just run
 * and this costs a few `stat` calls.
 */
export function ensureFreshBuild(): void {
  const built = [join(root, "dist/esm/index.js"), join(root, "dist/cjs/index.js")];
  const sources = ["src", "package.json", "tsconfig.json", "tsconfig.build.json", "tsconfig.cjs.json", "scripts/build.mjs"].map((path) => join(root, path));
  const newestSource = Math.max(...sources.filter((path) => existsSync(path)).map(newestModification));
  if (built.every((path) => existsSync(path) && statSync(path).mtimeMs >= newestSource)) return;
  try {
    execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "pipe", encoding: "utf8" });
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`dist/ is missing or older than src/, and building it (npm run build) failed:\n${stdout}${stderr}`, { cause: error });
  }
}
