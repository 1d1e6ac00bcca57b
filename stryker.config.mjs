// Mutation testing (`npm run mutation`): StrykerJS mutates the library's
// decision code, runs the unit suite against each mutant in-process (only
// the tests that cover it), and discards mutants that do not type-check.
// The integration and reliability suites are left out: they run real time
// and a real emulator, minutes per mutant. Incremental: results of unchanged
// code and tests are reused from temp/mutation/incremental.json, a local cache
// kept out of git (every run rewrites its 8 MB; a fresh clone starts from
// scratch, about 45 minutes on two cores).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "mocha",
  mochaOptions: { config: "test/mutation/.mocharc.json" },
  testRunnerNodeArgs: ["--import", "tsx"],
  checkers: ["typescript"],
  tsconfigFile: "test/mutation/tsconfig.json",
  coverageAnalysis: "perTest",
  mutate: ["src/**/*.ts", "!src/index.ts", "!src/testing.ts", "!src/client/**/*.ts"],
  incremental: true,
  incrementalFile: "temp/mutation/incremental.json",
  // The machine is shared and has two cores.
  concurrency: 1,
  timeoutMS: 10000,
  reporters: ["clear-text", "progress-append-only", "json", "html"],
  jsonReporter: { fileName: "temp/mutation/report.json" },
  htmlReporter: { fileName: "temp/mutation/report.html" },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
  tempDirName: "temp/stryker-tmp",
  cleanTempDir: "always",
  ignorePatterns: ["dist", "temp", "coverage", "demo-output", "bench/results"],
};
