import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { ensureFreshBuild } from "../support/freshBuild.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

interface SampleRun {
  code: number | null;
  output: string;
}

/** What each sample must print: the line that shows it did what it demonstrates. */
const expectations: Record<string, RegExp[]> = {
  quickstart: [
    /^read item-1: 200 in \d+ ms; served by East US, hedgingStarted=true, requested West US \(initial\), East US \(hedging\); 1 RU so far, not final$/m,
    /^read item-1 in all: 2 RU \(replies from East US, West US\)$/m,
  ],
  coreClient: [/^GET item-4: 200 in \d+ ms \(value 4\); primary West US, served by East US, terminalState=hedgeWon$/m],
  perRequestOptions: [
    /^default: hedged after 100 ms +\d+ ms {2}pointRead → East US \(hedgeWon\)$/m,
    /^excludedRegions: \[East US\] +\d+ ms {2}pointRead → North Europe \(hedgeWon\)$/m,
    /^region: North Europe \(pinned, never hedged\) +\d+ ms {2}pointRead → North Europe \(not hedged: pinnedRegion/m,
    /^hedging: false \(waits for the slow region\) +\d+ ms {2}pointRead → West US \(not hedged: disabled\)$/m,
    /"initialHeaders":\{"x-app-correlation-id":"sample-42","x-cosmos-hedging-excluded-regions":"\[\\"West US\\"\]"\}/,
    /^withRequestHedgingOptions excluding West US .*pointRead → East US \(primaryWon, moved off West US\)/m,
  ],
  diagnostics: [
    /terminalState: 'hedgeWon'/,
    /^ {3}create of an existing item: status 409, skipped \(notEligible\)/m,
    /^ {3}by outcome: .*hedgeWon: \d+/m,
  ],
  outage: [
    /^2\. West US browns out[^\n]*\n[^\n]*\n {2}4 reads: [^;]*; served by East US ×4; requests sent to West US ×4, East US ×4$/m,
    /^3\. regions\.setPreferredRegions[^\n]*\n {2}hedge order: East US → West US → North Europe\n {2}4 reads: [^;]*; served by East US ×4; requests sent to East US ×4$/m,
    /^4\. regions\.setExcludedRegions[^\n]*\n {2}hedge order: East US → North Europe$/m,
    /^5\. West US has recovered[^\n]*\n[^\n]*\n {2}4 reads: [^;]*; served by West US ×4; requests sent to West US ×4$/m,
  ],
  queryDiagnostics: [
    /^fetchAll: 10 items; (\d+) requests:\n {2}queryPlan /m,
    /^ {2}query +hedgeWon +served by East US/m,
    /^ {2}query +hedgeWon +served by East US[^\n]*\n {2}query +hedgeWon +served by East US/m,
    /^hedges won: [1-9]\d* of \d+ requests/m,
    /^a malformed query failed with 400; requests before the failure: queryPlan/m,
  ],
  tracing: [
    /^load order \(sample-app, \d+ ms\)\n {2}hedge pointRead \(cosmos-hedging, \d+ ms\) policy=crossRegion operation=pointRead .*primary_region=West US winning_region=East US hedge_fired=true hedge_won=true terminal_state=hedgeWon arms=2 request_charge=\d/m,
    // The primary is the SDK's own request, sent before the race had a span: its arm span has no HTTP span of ours below it.
    /^ {4}hedge pointRead arm \(cosmos-hedging, \d+ ms\) arm\.index=0 arm\.region=West US arm\.reason=primary arm\.status_code=200[^\n]*\n {4}hedge pointRead arm /m,
    /^ {4}hedge pointRead arm \(cosmos-hedging, \d+ ms\) arm\.index=1 arm\.region=East US arm\.reason=threshold arm\.status_code=200.*\n {6}HTTP GET \(@azure\/core-rest-pipeline, \d+ ms\) status=200$/m,
  ],
  faultInjection: [/hedged read: \d+ ms, served by East US/, /rules off: served by West US, no hedge/, /503 in West US: retried by the SDK in East US/],
};

function runSample(name: string): Promise<SampleRun> {
  // Never a real account, whatever the environment says.
  const env = { ...process.env };
  delete env["COSMOS_ENDPOINT"];
  delete env["COSMOS_KEY"];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", `samples/${name}.ts`],
      // A bound that catches a sample that never exits, not a slow one: a sample takes 3 to 10 s alone, and a loaded
      // machine (two samples to a core beside other work) has taken one past 25 s.
      { cwd: root, env, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe("samples", function () {
  this.timeout(90_000);
  const runs = new Map<string, Promise<SampleRun>>();

  before(function () {
    // The samples import the package by its name, which resolves to dist/: build it first when it is stale.
    this.timeout(120_000);
    ensureFreshBuild();
    // One per core at a time: each is mostly start-up work, and an idle core keeps a sample's timings honest.
    const lanes = Math.max(2, availableParallelism());
    const names = Object.keys(expectations);
    names.forEach((name, index) => {
      const previous = index >= lanes ? runs.get(names[index - lanes]!)! : Promise.resolve();
      runs.set(name, previous.then(() => runSample(name)));
    });
  });

  after(async function () {
    await Promise.all(runs.values());
  });

  for (const [name, patterns] of Object.entries(expectations)) {
    it(`${name} runs on the emulator, exits 0 and prints what it demonstrates`, async function () {
      const { code, output } = await runs.get(name)!;
      assert.equal(code, 0, `samples/${name}.ts exited with ${code}:\n${output}`);
      assert.match(output, /^Running on the multi-region emulator on loopback/m);
      for (const pattern of patterns) assert.match(output, pattern, `samples/${name}.ts output:\n${output}`);
    });
  }
});
