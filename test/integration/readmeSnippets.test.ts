import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** The README and every page of docs/, which the package ships beside it. */
const documents = ["README.md", ...readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md")).sort().map((file) => `docs/${file}`)];

/**
 * The only names a snippet may use without defining them: what a
 * reader has in hand before any of them (the account's endpoint and key, a
 * container of a `CosmosClient`). Everything else must compile as written.
 */
const prelude = `
declare const endpoint: string;
declare const key: string;
declare const container: import("@azure/cosmos").Container;
`;

/** Every TypeScript block of a Markdown document, with the line it starts on. */
function snippets(markdown: string): { line: number; code: string }[] {
  const found: { line: number; code: string }[] = [];
  const fence = /^( *)```ts\n([\s\S]*?)^\1```$/gm;
  for (let match = fence.exec(markdown); match !== null; match = fence.exec(markdown)) {
    const indent = match[1]!.length;
    const code = match[2]!
      .split("\n")
      .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
      .join("\n");
    found.push({ line: markdown.slice(0, match.index).split("\n").length, code });
  }
  return found;
}

describe("README and docs", function () {
  this.timeout(60_000);

  it("have TypeScript snippets that compile as written, in a strict app that installs the package", function () {
    if (!existsSync(join(root, "dist", "esm", "index.d.ts"))) throw new Error("The snippets import the package by its name, which resolves to dist/: run `npm run build` first.");
    const readmeBlocks = snippets(readFileSync(join(root, "README.md"), "utf8"));
    assert.ok(readmeBlocks.length >= 6, `${readmeBlocks.length} snippets found in the README`);
    // Inside the package, so that "cosmos-hedging" resolves to the build by self-reference, as an installed package would.
    const dir = join(root, "temp", "readme-snippets");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "prelude.d.ts"), prelude);
    const files = documents.flatMap((document) =>
      snippets(readFileSync(join(root, document), "utf8")).map(({ line, code }) => {
        const file = join(dir, `${document.replace(/[/.]/g, "-")}-line-${line}.ts`);
        writeFileSync(file, `${code}\nexport {};\n`);
        return file;
      }),
    );
    assert.ok(files.length > readmeBlocks.length, "the docs pages have snippets too");
    const options: ts.CompilerOptions = {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ["node"],
      skipLibCheck: true,
      noEmit: true,
    };
    const program = ts.createProgram({ rootNames: [join(dir, "prelude.d.ts"), ...files], options });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    const report = ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: () => dir, getNewLine: () => "\n" });
    assert.equal(report, "", `Snippets that do not compile (file names give the document and the line of the snippet):\n${report}`);
  });
});
