/**
 * Test tools for code that uses cosmos-hedging: `faultInjectionPolicy` slows
 * or fails Cosmos DB requests by region and operation, so that a test can
 * prove what the hedging policies and your own code do about a degraded
 * region. Import it from `cosmos-hedging/testing`; it is not part of the
 * production entry point.
 *
 * @packageDocumentation
 */

export { faultInjectionPolicy, faultInjectionPolicyName } from "./testing/faultInjectionPolicy.js";
export type {
  FaultInjectionPolicy,
  FaultInjectionPolicyOptions,
  FaultResult,
  FaultRule,
  FaultRuleHandle,
} from "./testing/faultInjectionPolicy.js";
