// One run of one mode of the overhead suite through the real @azure/cosmos
// client, in a process of its own (bench/suites/sdkOverhead.ts starts it).
// Reads its job from SDK_OVERHEAD_JOB and prints what it measured as JSON.
import { measureSdkOverheadRun, sdkOverheadBaseOptions, sdkOverheadModes } from "../suites/sdkOverhead.js";
import type { SdkOverheadJob } from "../suites/sdkOverhead.js";

const job = JSON.parse(process.env.SDK_OVERHEAD_JOB ?? "{}") as SdkOverheadJob;
const mode = sdkOverheadModes[job.modeIndex];
if (mode === undefined) throw new Error(`no overhead mode ${job.modeIndex}`);
const run = await measureSdkOverheadRun(mode, sdkOverheadBaseOptions(job.account), job.settings);
process.stdout.write(JSON.stringify(run));
process.exit(0);
