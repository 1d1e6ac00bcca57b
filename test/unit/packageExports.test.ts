import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import { ensureFreshBuild } from "../support/freshBuild.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const manifest = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as {
  name: string;
  type?: string;
  sideEffects?: unknown;
  engines?: { node?: string };
  files?: string[];
  main?: string;
  types?: string;
  exports?: Record<string, unknown>;
};

/** The runtime entry points every build must expose under the same names. */
const requiredFunctions = [
  "crossRegionHedgingPolicy",
  "RegionCache",
  "withHedging",
  "createHedgingHttpClient",
  "getHedgeDiagnostics",
  "masterKeySigner",
  "classifyOperation",
];

type ModuleRecord = Record<string, unknown>;

function functionNames(module: ModuleRecord): string[] {
  return Object.keys(module)
    .filter((name) => name !== "default" && typeof module[name] === "function")
    .sort();
}

function valueExports(module: ModuleRecord): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(module).filter(([name, value]) => name !== "default" && name !== "__esModule" && typeof value !== "function"),
  );
}

// Runs against the built package (`npm run build`), through the package's own `exports` map.
describe("package exports", function () {
  let esm: ModuleRecord;
  let cjs: ModuleRecord;

  before(async function () {
    // A stale build would test yesterday's package: rebuild it first when src/ is newer.
    this.timeout(120_000);
    ensureFreshBuild();
    for (const file of ["dist/esm/index.js", "dist/cjs/index.js", "dist/esm/index.d.ts", "dist/cjs/index.d.ts", "dist/esm/testing.js", "dist/cjs/testing.js", "dist/esm/testing.d.ts", "dist/cjs/testing.d.ts"]) {
      assert.ok(existsSync(`${root}${file}`), `${file} is missing after the build`);
    }
    esm = (await import(manifest.name)) as ModuleRecord;
    cjs = createRequire(import.meta.url)(manifest.name) as ModuleRecord;
  });

  it("resolves the import condition to the ESM build and the require condition to the CommonJS build", async function () {
    const esmBuild = (await import(pathToFileURL(`${root}dist/esm/index.js`).href)) as ModuleRecord;
    assert.equal(esm["RegionCache"], esmBuild["RegionCache"]);
    const require = createRequire(import.meta.url);
    assert.equal(require.resolve(manifest.name), `${root}dist/cjs/index.js`);
    assert.equal(cjs["RegionCache"], require(`${root}dist/cjs/index.js`).RegionCache);
    assert.notEqual(esm["RegionCache"], cjs["RegionCache"]);
  });

  it("serves faultInjectionPolicy from cosmos-hedging/testing in both builds, and no longer from the main entry point", async function () {
    const require = createRequire(import.meta.url);
    const testingEsm = (await import(`${manifest.name}/testing`)) as ModuleRecord;
    const testingCjs = require(`${manifest.name}/testing`) as ModuleRecord;
    assert.equal(require.resolve(`${manifest.name}/testing`), `${root}dist/cjs/testing.js`);
    assert.equal(testingEsm["faultInjectionPolicy"], ((await import(pathToFileURL(`${root}dist/esm/testing.js`).href)) as ModuleRecord)["faultInjectionPolicy"]);
    assert.notEqual(testingEsm["faultInjectionPolicy"], testingCjs["faultInjectionPolicy"]);
    for (const module of [testingEsm, testingCjs]) {
      assert.deepEqual(functionNames(module), ["faultInjectionPolicy"]);
      assert.deepEqual(valueExports(module), { faultInjectionPolicyName: "faultInjectionPolicy" });
    }
    for (const module of [esm, cjs]) {
      assert.equal(module["faultInjectionPolicy"], undefined);
      assert.equal(module["faultInjectionPolicyName"], undefined);
    }
  });

  it("marks each build folder with its module type", function () {
    assert.deepEqual(JSON.parse(readFileSync(`${root}dist/esm/package.json`, "utf8")), { type: "module" });
    assert.deepEqual(JSON.parse(readFileSync(`${root}dist/cjs/package.json`, "utf8")), { type: "commonjs" });
  });

  it("exposes the required functions from both builds", function () {
    for (const name of requiredFunctions) {
      assert.equal(typeof esm[name], "function", `ESM build lacks ${name}`);
      assert.equal(typeof cjs[name], "function", `CommonJS build lacks ${name}`);
    }
  });

  it("exposes the same functions and the same values from both builds", function () {
    assert.deepEqual(functionNames(cjs), functionNames(esm));
    assert.deepEqual(valueExports(cjs), valueExports(esm));
  });

  it("works from both builds", function () {
    for (const [build, module] of [["ESM", esm], ["CommonJS", cjs]] as const) {
      const RegionCache = module["RegionCache"] as new (options: unknown) => { regionOf(url: string): { name: string } | undefined };
      const cache = new RegionCache({ topology: { readRegions: [{ name: "West US", endpoint: "https://acct-westus.documents.azure.com/" }] } });
      assert.equal(cache.regionOf("https://acct-westus.documents.azure.com/dbs/db")?.name, "West US", build);

      const classifyOperation = module["classifyOperation"] as (request: unknown) => string;
      const request = createPipelineRequest({
        url: "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs",
        method: "POST",
        headers: createHttpHeaders({ "x-ms-documentdb-isquery": "True" }),
      });
      assert.equal(classifyOperation(request), "query", build);
    }
  });

  it("lets one build's policies share the other build's RegionCache, as an app loading both does, and still refuses anything else", function () {
    for (const [from, to] of [[esm, cjs], [cjs, esm]] as const) {
      const RegionCache = from["RegionCache"] as new () => object;
      const regions = new RegionCache();
      const policyOf = to["crossRegionHedgingPolicy"] as (options: unknown) => { name: string };
      assert.equal(policyOf({ regions }).name, "crossRegionHedgingPolicy");
      const excludedOf = to["excludedRegionsPolicy"] as (options: unknown) => { name: string };
      assert.equal(excludedOf({ regions }).name, "excludedRegionsPolicy");
      assert.throws(() => policyOf({ regions: { regionOf: () => undefined } }), /^TypeError: regions must be a RegionCache; got an object\./);
    }
  });

  describe("package.json", function () {
    it("is an ES module package without side effects", function () {
      assert.equal(manifest.type, "module");
      assert.equal(manifest.sideEffects, false);
    });

    it("declares the Node versions it supports", function () {
      assert.match(manifest.engines?.node ?? "", /^>=\s*20(\.|$)/);
    });

    it("publishes the builds", function () {
      assert.ok(Array.isArray(manifest.files), "files must be a list");
      assert.ok(
        manifest.files.some((entry) => /^(\.\/)?dist\/?$/.test(entry)),
        `files ${JSON.stringify(manifest.files)} must include dist/`,
      );
    });

    it("publishes the docs the README links to, and the testing/ stub that resolvers ignoring the export map read", function () {
      for (const entry of ["docs/", "testing/package.json"]) assert.ok(manifest.files?.includes(entry), `files ${JSON.stringify(manifest.files)} must include ${entry}`);
      const stub = JSON.parse(readFileSync(`${root}testing/package.json`, "utf8")) as { main?: string; types?: string };
      // The same builds the root's legacy main and types fields name, so that both entry points agree under node10 resolution.
      assert.equal(stub.main, `../${manifest.main?.replace(/^\.\//, "").replace(/index\.js$/, "testing.js")}`);
      assert.equal(stub.types, `../${manifest.types?.replace(/^\.\//, "").replace(/index\.d\.ts$/, "testing.d.ts")}`);
      for (const target of [stub.main, stub.types]) assert.ok(existsSync(`${root}testing/${target}`), `${target} does not exist`);
    });

    it("lists types first in each condition of the export map, as TypeScript requires", function () {
      for (const path of [".", "./testing"]) {
        const entry = manifest.exports?.[path] as Record<string, Record<string, string>> | undefined;
        assert.ok(entry !== undefined, `exports["${path}"] is missing`);
        assert.deepEqual(Object.keys(entry.import ?? {}), ["types", "default"]);
        assert.deepEqual(Object.keys(entry.require ?? {}), ["types", "default"]);
        for (const target of [entry.import?.types, entry.import?.default, entry.require?.types, entry.require?.default]) {
          assert.ok(target !== undefined && existsSync(`${root}${target}`), `${target} does not exist`);
        }
      }
    });

    it("points the legacy main and types fields at the builds", function () {
      assert.ok(manifest.main !== undefined && existsSync(`${root}${manifest.main}`), `main ${manifest.main} does not exist`);
      assert.ok(manifest.types !== undefined && existsSync(`${root}${manifest.types}`), `types ${manifest.types} does not exist`);
    });
  });
});

// @azure/cosmos declares node >= 22; this package supports Node 20, so check that it loads and works here.
describe("@azure/cosmos on this Node version", function () {
  it("runs on Node 20 or later", function () {
    const major = Number(process.versions.node.split(".")[0]);
    assert.ok(major >= 20, `Node ${process.versions.node} is older than 20`);
  });

  it("constructs a CosmosClient, and dispose leaves no timer behind", function () {
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
    const before = timers();
    const client = new CosmosClient({ endpoint: "https://localhost:1", key: "dGVzdA==" });
    assert.equal(client.database("db").container("items").url, "dbs/db/colls/items");
    client.dispose();
    assert.equal(timers(), before);
  });
});
