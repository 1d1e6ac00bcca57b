// Builds the dual package: ESM under dist/esm, CommonJS under dist/cjs. Each
// folder gets a package.json naming its module type, because the root says
// "type": "module" and Node would otherwise load the CommonJS files as ESM.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
const tsc = ["node_modules/typescript/bin/tsc"];
execFileSync(process.execPath, [...tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
execFileSync(process.execPath, [...tsc, "-p", "tsconfig.cjs.json"], { stdio: "inherit" });
for (const [folder, type] of [["dist/esm", "module"], ["dist/cjs", "commonjs"]]) {
  mkdirSync(folder, { recursive: true });
  writeFileSync(`${folder}/package.json`, JSON.stringify({ type }, null, 2) + "\n");
}

// Every entry point the export map names ("." and "./testing", each for import and require) must have been built;
// tsc builds whatever src/ holds, so an entry missing from src/ would otherwise surface only in a consumer's install.
const targets = (entry) => (typeof entry === "string" ? [entry] : Object.values(entry).flatMap(targets));
const { exports } = JSON.parse(readFileSync("package.json", "utf8"));
const missing = targets(exports).filter((target) => !existsSync(target));
if (missing.length > 0) throw new Error(`The build lacks entry points that package.json exports: ${missing.join(", ")}`);
