// Builds the dual package: ESM under dist/esm, CommonJS under dist/cjs. Each
// folder gets a package.json naming its module type, because the root says
// "type": "module" and Node would otherwise load the CommonJS files as ESM.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
const tsc = ["node_modules/typescript/bin/tsc"];
execFileSync(process.execPath, [...tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
execFileSync(process.execPath, [...tsc, "-p", "tsconfig.cjs.json"], { stdio: "inherit" });
for (const [folder, type] of [["dist/esm", "module"], ["dist/cjs", "commonjs"]]) {
  mkdirSync(folder, { recursive: true });
  writeFileSync(`${folder}/package.json`, JSON.stringify({ type }, null, 2) + "\n");
}
