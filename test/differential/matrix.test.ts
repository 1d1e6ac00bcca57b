import assert from "node:assert/strict";
import { caseName, emulatorKindOf, explain, judge, latencyOnly, pooled, runCase, startAccount } from "./harness.js";
import type { AccountEnv, AccountKind, CaseResult, Verdict } from "./harness.js";
import { matrixCases } from "./matrix.js";

/** Cases in flight at once: most of a case is waiting out a fault, so many fit on two cores. */
const concurrency = Number(process.env["DIFFERENTIAL_CONCURRENCY"] ?? 24);

/**
 * The differential matrix: every case runs its operation through a plain
 * `CosmosClient` and a `withHedging` one against the same fault, and the
 * hedged run must end as the plain one did (or better: a success where
 * plain failed, with the fault-free answer), leave the same documents, send
 * no more writes to the service, stay within the request bound and be no
 * slower beyond the machine's noise. Cases run concurrently in the
 * background from the first hook; each test waits for its own.
 */
describe("differential: hedged vs plain @azure/cosmos, same emulator, same fault", function () {
  this.timeout(150_000);
  const cases = matrixCases();
  const envs = new Map<AccountKind, AccountEnv>();
  const results = new Map<string, Promise<CaseResult>>();
  const verdicts: Array<{ name: string; verdict: Verdict }> = [];
  let started = 0;

  before(async function () {
    started = performance.now();
    const kinds = [...new Set(cases.map((testCase) => emulatorKindOf(testCase.account)))];
    const started_ = await Promise.all(kinds.map((kind) => startAccount(kind)));
    kinds.forEach((kind, i) => envs.set(kind, started_[i]!));
    const promises = pooled(
      cases.map((testCase) => () => runCase(envs.get(emulatorKindOf(testCase.account))!, testCase)),
      concurrency,
    );
    cases.forEach((testCase, i) => results.set(caseName(testCase), promises[i]!));
    console.log(`      differential matrix: ${cases.length} cases over ${kinds.length} emulators, ${concurrency} at once`);
  });

  after(async function () {
    // Whatever is still running (a test filtered out, or one that failed early) ends before the emulators close.
    await Promise.allSettled(results.values());
    await Promise.all([...envs.values()].map((env) => env.close()));
    const better = verdicts.filter((entry) => entry.verdict.relation === "better");
    const worse = verdicts.filter((entry) => entry.verdict.relation === "worse");
    console.log(
      `      differential matrix: ${verdicts.length} cases judged in ${Math.round((performance.now() - started) / 1000)} s: ` +
        `${verdicts.length - better.length - worse.length} the same, ${better.length} better (plain failed, hedged served the fault-free answer), ${worse.length} worse`,
    );
    for (const entry of better) console.log(`        better: ${entry.name}`);
  });

  const byAccount = new Map<AccountKind, typeof cases>();
  for (const testCase of cases) byAccount.set(testCase.account, [...(byAccount.get(testCase.account) ?? []), testCase]);
  for (const [account, accountCases] of byAccount) {
    describe(`${account} account`, function () {
      for (const testCase of accountCases) {
        const name = caseName(testCase);
        it(name, async function () {
          let result = await results.get(name)!;
          let verdict = judge(result);
          if (latencyOnly(verdict)) {
            // A stall of the machine can make one run look slow; a real slowdown shows again in fresh runs.
            result = await runCase(envs.get(emulatorKindOf(testCase.account))!, testCase);
            verdict = judge(result);
          }
          verdicts.push({ name, verdict });
          if (verdict.problems.length > 0) assert.fail(explain(result, verdict));
        });
      }
    });
  }
});
