// npm run bench:sdk-overhead — the client's CPU per point read through the
// real @azure/cosmos client, plain and with each way of adding hedging.
import { defaultSdkOverheadSettings, runSdkOverheadSuite, sdkOverheadTable } from "./suites/sdkOverhead.js";

console.log(sdkOverheadTable(await runSdkOverheadSuite(defaultSdkOverheadSettings)));
