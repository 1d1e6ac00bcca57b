import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const mochaBin = createRequire(import.meta.url).resolve("mocha/bin/mocha.js");

interface MochaJsonReport {
  stats: { tests: number; passes: number; failures: number };
  passes: Array<{ title: string }>;
  failures: Array<{ title: string; err: { message: string } }>;
}

/** Runs the fixture describe in a mocha of its own, and returns mocha's JSON report. */
function runFixture(): Promise<MochaJsonReport> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [mochaBin, "--node-option", "import=tsx", "--require", "test/support/rootHooks.ts", "--reporter", "json", "test/unit/fixtures/leakingDescribe.ts"],
      { cwd: root, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout) => {
        try {
          resolve(JSON.parse(stdout) as MochaJsonReport);
        } catch {
          reject(error ?? new Error(`mocha printed no JSON report: ${stdout.slice(0, 500)}`));
        }
      },
    );
  });
}

describe("a leak fails its own test, and the rest of its describe still runs", function () {
  this.timeout(60_000);

  it("reports each leak on the test that leaked, the test's own failure first, and runs every test", async function () {
    const report = await runFixture();
    assert.equal(report.stats.tests, 6, "every test of the describe ran");
    assert.deepEqual(report.passes.map((test) => test.title).sort(), ["passes after the timer leak", "passes last"]);
    assert.deepEqual(
      report.failures.map((test) => [test.title, test.err.message.split("\n")[0]]),
      [
        ["leaks a fake timer", "fake timers still pending after the test"],
        ["leaks an abort listener", "abort listeners left on the caller's signal"],
        ["fails on its own and leaks too", "the test's own failure"],
        ["takes a done callback and leaks", "fake timers still pending after the test"],
      ],
    );
  });
});
