export { Emulator, EmulatorRegion, startEmulator } from "./emulator.js";
export type { EmulatorAccountSettings, EmulatorOptions, EmulatorRegionSpec } from "./emulator.js";
export type { FaultHandle, FaultRule } from "./faults.js";
export { predictionHeader } from "./proxy.js";
export type { RecordedRequest } from "./proxy.js";
export { Wan, WanRegion, connectionRequestHeader, startWan } from "./wan.js";
export type { WanCounters, WanOptions } from "./wan.js";
export { allowedClockSkewMs, signedHeaders } from "./authorization.js";
export type { AuthorizationVerdict } from "./authorization.js";
