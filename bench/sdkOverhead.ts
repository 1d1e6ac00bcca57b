// npm run bench:sdk-overhead — the client's CPU per point read through the
// real @azure/cosmos client, plain and with each way of adding hedging.
import { defaultSdkOverheadSettings, runSdkOverheadSuite, sdkOverheadTables } from "./suites/sdkOverhead.js";

console.log(sdkOverheadTables(await runSdkOverheadSuite(defaultSdkOverheadSettings)));
