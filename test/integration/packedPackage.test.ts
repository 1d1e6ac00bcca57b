import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));

/**
 * What a consumer who uses only the policies writes: no `@azure/cosmos` anywhere.
 * It tests its own pipeline with the fault injection policy from `cosmos-hedging/testing`
 * (a rule that delays nothing, so the output does not hinge on time), and reports whether
 * the main entry point still exports that policy.
 */
const appSource = `
import { createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import {
  RegionCache,
  collectHedgeDiagnostics,
  crossRegionHedgingPolicy,
  excludedRegionsPolicy,
  getHedgeDiagnostics,
  metadataHedgingPolicy,
} from "cosmos-hedging";
import type { HedgeDiagnostics } from "cosmos-hedging";
import * as main from "cosmos-hedging";
import { faultInjectionPolicy } from "cosmos-hedging/testing";
import type { FaultInjectionPolicy } from "cosmos-hedging/testing";

const regions = new RegionCache({
  topology: {
    readRegions: [
      { name: "East US", endpoint: "https://acct-eastus.documents.azure.com/" },
      { name: "West US", endpoint: "https://acct-westus.documents.azure.com/" },
    ],
  },
});
const pipeline = createEmptyPipeline();
pipeline.addPolicy(excludedRegionsPolicy({ regions }));
pipeline.addPolicy(metadataHedgingPolicy({ regions }));
pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 50 }));
const faults: FaultInjectionPolicy = faultInjectionPolicy({ regions, rules: [{ id: "once", region: "East US", delayMs: 0, count: 1 }] });
pipeline.addPolicy(faults);
const transport: HttpClient = {
  sendRequest: async (request) => ({ request, status: 200, headers: createHttpHeaders({ "x-ms-request-charge": "1" }), bodyAsText: "{}" }),
};
const request = createPipelineRequest({ url: "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1", method: "GET" });
const { result, diagnostics } = await collectHedgeDiagnostics(() => pipeline.sendRequest(transport, request));
const record: HedgeDiagnostics | undefined = getHedgeDiagnostics(result);
console.log(JSON.stringify({
  status: result.status,
  terminalState: record?.terminalState,
  collected: diagnostics.length,
  faultHits: faults.hits("once"),
  mainExportsFaultInjection: "faultInjectionPolicy" in main || "faultInjectionPolicyName" in main,
}));
`;

/** The same for CommonJS, where top-level await is not available. */
const cjsSource = appSource.replace(/^const \{ result, diagnostics \} = await (.*)$/m, "void (async () => {\nconst { result, diagnostics } = await $1").concat("})();\n");

interface Project {
  name: string;
  packageType: "module" | "commonjs";
  compilerOptions: Record<string, unknown>;
  source: string;
  /** Whether the compiled app is run with Node afterwards. */
  runs: boolean;
}

const strict = { strict: true, target: "ES2022", types: ["node"], outDir: "out", rootDir: "." };
const projects: Project[] = [
  { name: "nodenext-esm", packageType: "module", compilerOptions: { ...strict, module: "NodeNext", moduleResolution: "NodeNext" }, source: appSource, runs: true },
  { name: "nodenext-cjs", packageType: "commonjs", compilerOptions: { ...strict, module: "NodeNext", moduleResolution: "NodeNext" }, source: cjsSource, runs: true },
  { name: "bundler", packageType: "module", compilerOptions: { ...strict, module: "ESNext", moduleResolution: "Bundler", noEmit: true }, source: appSource, runs: false },
  // The resolution that ignores `exports`: cosmos-hedging/testing resolves through the testing/package.json stub the package ships.
  { name: "node10-cjs", packageType: "commonjs", compilerOptions: { ...strict, module: "CommonJS", moduleResolution: "Node10" }, source: cjsSource, runs: true },
];

function filesUnder(dir: string, prefix = ""): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown document's headings, a repeated heading numbered as GitHub numbers it. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of markdown.replace(/^```[\s\S]*?^```$/gm, "").matchAll(/^#{1,6} +(.+)$/gm)) {
    const base = slug(match[1]!);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n += 1) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** Every link target of a Markdown document, code blocks left out. */
function linksOf(markdown: string): string[] {
  return [...markdown.replace(/^ *```[\s\S]*?^ *```$/gm, "").matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
}

/**
 * The links of the Markdown files under `base` that do not resolve: a relative link to a
 * file that is not there, or to a heading that file does not have; a link into the
 * repository (`repository`/blob/main/...) to a file that this checkout does not hold.
 */
function deadLinks(base: string, documents: readonly string[], repository: string, checkout: string): string[] {
  const dead: string[] = [];
  for (const document of documents) {
    const markdown = readFileSync(join(base, document), "utf8");
    for (const target of linksOf(markdown)) {
      const repositoryPath = new RegExp(`^${repository.replace(/[.]/g, "\\.")}/(?:blob|tree)/main/([^#]+)`).exec(target)?.[1];
      if (repositoryPath !== undefined) {
        if (!existsSync(join(checkout, repositoryPath))) dead.push(`${document}: ${target} (not in the repository)`);
        continue;
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const file = path === "" ? document : join(dirname(document), path);
      if (!existsSync(join(base, file))) {
        dead.push(`${document}: ${target} (no ${file} in the package)`);
        continue;
      }
      if (anchor !== undefined && !anchorsOf(readFileSync(join(base, file), "utf8")).has(anchor)) dead.push(`${document}: ${target} (no heading #${anchor} in ${file})`);
    }
  }
  return dead;
}

describe("the packed tarball, installed in a fresh app without @azure/cosmos", function () {
  this.timeout(60_000);
  let work: string;
  let packageDir: string;
  const compiles = new Map<string, string>();

  before(async function () {
    if (!existsSync(join(root, "dist", "esm", "index.js"))) throw new Error("npm pack ships dist/: run `npm run build` first.");
    work = mkdtempSync(join(tmpdir(), "cosmos-hedging-pack-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: root });
    const [packed] = JSON.parse(stdout) as [{ filename: string }];
    const modules = join(work, "node_modules");
    packageDir = join(modules, "cosmos-hedging");
    mkdirSync(packageDir, { recursive: true });
    await run("tar", ["-xzf", join(work, packed.filename), "-C", packageDir, "--strip-components=1"]);
    // The package's own dependencies, as npm would install them; offline, from this checkout. @azure/cosmos is not among them.
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    for (const dependency of [...Object.keys(manifest.dependencies), "@types/node"]) {
      mkdirSync(dirname(join(modules, dependency)), { recursive: true });
      symlinkSync(join(root, "node_modules", dependency), join(modules, dependency), "dir");
    }
    assert.ok(!existsSync(join(modules, "@azure", "cosmos")));
    const sourceFiles = new Map<string, ts.SourceFile | undefined>();
    for (const project of projects) compiles.set(project.name, compile(project, sourceFiles));
  });

  /**
   * Writes the app, type-checks it and emits it; returns the errors, empty
   * when there are none. Every file of the app and of this package is checked
   * in full, as with `skipLibCheck: false`; the libraries below (Node's types,
   * core-rest-pipeline's) only as far as this package's types use them.
   * The programs share parsed files, so the three apps cost little more than one.
   */
  function compile(project: Project, sourceFiles: Map<string, ts.SourceFile | undefined>): string {
    const appDir = join(work, project.name);
    mkdirSync(appDir);
    writeFileSync(join(appDir, "package.json"), JSON.stringify({ name: project.name, private: true, type: project.packageType }));
    writeFileSync(join(appDir, "index.ts"), project.source);
    const { options, errors } = ts.convertCompilerOptionsFromJson(project.compilerOptions, appDir);
    assert.deepEqual(errors, []);
    const host = ts.createCompilerHost(options);
    const parse = host.getSourceFile.bind(host);
    host.getSourceFile = (fileName, languageVersionOrOptions, ...rest) => {
      const key = `${fileName}\u0000${JSON.stringify(languageVersionOrOptions)}`;
      if (!sourceFiles.has(key)) sourceFiles.set(key, parse(fileName, languageVersionOrOptions, ...rest));
      return sourceFiles.get(key);
    };
    const program = ts.createProgram({ rootNames: [join(appDir, "index.ts")], options, host });
    const ours = program.getSourceFiles().filter((file) => file.fileName.startsWith(appDir) || file.fileName.startsWith(packageDir));
    assert.ok(ours.some((file) => file.fileName.startsWith(packageDir)), "the app uses the packed package's types");
    const diagnostics = [
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...ours.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
      ...(project.runs ? program.emit().diagnostics : []),
    ];
    return ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: () => appDir, getNewLine: () => "\n" });
  }

  after(function () {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("has a README and docs whose links resolve: relative ones inside the tarball, anchors included, and links into the repository to files it holds", function () {
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { repository?: { url?: string }; homepage?: string; bugs?: { url?: string } };
    const repository = manifest.repository?.url?.replace(/^git\+/, "").replace(/\.git$/, "");
    assert.ok(repository !== undefined && repository.startsWith("https://github.com/"), `repository.url ${manifest.repository?.url}`);
    assert.equal(manifest.homepage, `${repository}#readme`);
    assert.equal(manifest.bugs?.url, `${repository}/issues`);
    const documents = filesUnder(packageDir).filter((file) => file.endsWith(".md"));
    assert.ok(documents.includes("README.md") && documents.includes("docs/README.md"), `Markdown in the package: ${documents.join(", ")}`);
    assert.ok(linksOf(readFileSync(join(packageDir, "README.md"), "utf8")).length > 20, "the README's links are found");
    assert.deepEqual(deadLinks(packageDir, documents, repository, root), []);
  });

  it("tells a dead link from a live one", function () {
    const dir = mkdtempSync(join(tmpdir(), "cosmos-hedging-links-"));
    try {
      mkdirSync(join(dir, "docs"));
      writeFileSync(join(dir, "docs", "page.md"), "# A page: the `one`\n\n## Hedging's budget\n");
      writeFileSync(
        join(dir, "README.md"),
        "[ok](docs/page.md#hedgings-budget) [ok](#readme) [ok](https://example.com/x.md) [ok](https://github.com/o/r/blob/main/package.json)\n" +
          "# README\n[gone](samples/quickstart.ts) [anchor](docs/page.md#budget) [repo](https://github.com/o/r/blob/main/samples/none.ts)\n```ts\n[x](not-a-link.md)\n```\n",
      );
      assert.deepEqual(deadLinks(dir, ["README.md", "docs/page.md"], "https://github.com/o/r", root), [
        "README.md: samples/quickstart.ts (no samples/quickstart.ts in the package)",
        "README.md: docs/page.md#budget (no heading #budget in docs/page.md)",
        "README.md: https://github.com/o/r/blob/main/samples/none.ts (not in the repository)",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ships no type declaration that imports @azure/cosmos", function () {
    const declarations = filesUnder(packageDir).filter((file) => file.endsWith(".d.ts"));
    assert.ok(declarations.length > 20);
    for (const file of declarations) {
      assert.doesNotMatch(readFileSync(join(packageDir, file), "utf8"), /["']@azure\/cosmos["']/, `${file} imports @azure/cosmos`);
    }
  });

  it("ships source maps that resolve: every map it points to is in the package and carries the sources", function () {
    const files = new Set(filesUnder(packageDir));
    const scripts = [...files].filter((file) => file.endsWith(".js") || file.endsWith(".d.ts"));
    let maps = 0;
    for (const file of scripts) {
      const reference = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(packageDir, file), "utf8"))?.[1];
      if (reference === undefined) continue;
      const mapFile = join(dirname(file), reference);
      assert.ok(files.has(mapFile), `${file} points to ${mapFile}, which is not in the package`);
      const map = JSON.parse(readFileSync(join(packageDir, mapFile), "utf8")) as { sources: string[]; sourcesContent?: (string | null)[] };
      assert.equal(map.sourcesContent?.length, map.sources.length, `${mapFile} lacks sourcesContent`);
      assert.ok(map.sourcesContent.every((content) => typeof content === "string" && content.length > 0), `${mapFile} has an empty source`);
      maps += 1;
    }
    assert.ok(maps > 20, `${maps} source maps`);
  });

  for (const project of projects) {
    it(`type-checks a strict ${project.name} app that imports only the policies and cosmos-hedging/testing${project.runs ? ", and runs it" : ""}`, async function () {
      const appDir = join(work, project.name);
      const compiled = compiles.get(project.name);
      assert.equal(compiled, "", `tsc found errors in the ${project.name} app:\n${compiled}`);
      if (!project.runs) return;
      const { stdout } = await run(process.execPath, [join(appDir, "out", "index.js")], { cwd: appDir });
      assert.deepEqual(JSON.parse(stdout), { status: 200, terminalState: "primaryWon", collected: 1, faultHits: 1, mainExportsFaultInjection: false });
    });
  }

  // The apps above load the package through TypeScript's emit; these load it as plain Node would, each entry point
  // from each module system, and check that the two systems get the build meant for them.
  for (const system of ["ESM import", "CJS require"] as const) {
    it(`resolves cosmos-hedging/testing through ${system} to its own build, and the main entry point no longer exports faultInjectionPolicy`, async function () {
      const esm = system === "ESM import";
      const script = esm
        ? `const testing = await import("cosmos-hedging/testing"); const main = await import("cosmos-hedging");
           const resolved = import.meta.resolve("cosmos-hedging/testing");`
        : `const testing = require("cosmos-hedging/testing"); const main = require("cosmos-hedging"); const resolved = require.resolve("cosmos-hedging/testing");`;
      const report = `console.log(JSON.stringify({ resolved: String(resolved), testing: Object.keys(testing).filter((name) => name !== "__esModule").sort(),
        policy: typeof testing.faultInjectionPolicy, mainHas: ["faultInjectionPolicy", "faultInjectionPolicyName"].filter((name) => name in main) }));`;
      const file = join(work, esm ? "entry-check.mjs" : "entry-check.cjs");
      writeFileSync(file, `${script}\n${report}\n`);
      const { stdout } = await run(process.execPath, [file], { cwd: work });
      const seen = JSON.parse(stdout) as { resolved: string; testing: string[]; policy: string; mainHas: string[] };
      assert.match(seen.resolved, esm ? /cosmos-hedging\/dist\/esm\/testing\.js$/ : /cosmos-hedging\/dist\/cjs\/testing\.js$/);
      assert.deepEqual(seen.testing, ["faultInjectionPolicy", "faultInjectionPolicyName"]);
      assert.equal(seen.policy, "function");
      assert.deepEqual(seen.mainHas, []);
    });
  }
});
