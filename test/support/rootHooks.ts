import { resetEnvironmentWarnings } from "../../src/cosmos/environment.js";
import { resetControlHeaderWarnings } from "../../src/request/requestControls.js";

/**
 * Mocha root hooks, loaded by every suite's `.mocharc` (`require`). The
 * library warns once per process about a bad environment value or control
 * header; each test starts with that memory empty, so that whether it sees
 * a warning never depends on which tests ran before it.
 */
export const mochaHooks = {
  beforeEach(): void {
    resetEnvironmentWarnings();
    resetControlHeaderWarnings();
  },
};
