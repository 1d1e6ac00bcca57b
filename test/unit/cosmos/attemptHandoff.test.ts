import assert from "node:assert/strict";
import type { SdkAttempt } from "../../../src/cosmos/attemptHandoff.js";
import { handOver, takeHandedOver } from "../../../src/cosmos/attemptHandoff.js";

function attemptFor(client: object): SdkAttempt {
  return { client, sdkExcluded: [], sdkRetry: false, operation: undefined, plain: false };
}

describe("attemptHandoff", () => {
  it("holds an attempt for the client it names, once, for the length of the synchronous call, and returns what the call returned", () => {
    const client = {};
    const other = {};
    const attempt = attemptFor(client);
    const seen: Array<SdkAttempt | undefined> = [];
    const returned = handOver(attempt, (context: string) => {
      seen.push(takeHandedOver(other), takeHandedOver(client), takeHandedOver(client));
      return `sent ${context}`;
    }, "context");
    assert.equal(returned, "sent context");
    assert.deepEqual(seen, [undefined, attempt, undefined], "another client gets nothing, and the client takes it once");
    assert.equal(attempt.taken, true);
  });

  it("releases an attempt not taken when the call returns, or throws, and says it was not taken", async () => {
    const client = {};
    const untaken = attemptFor(client);
    const later = handOver(untaken, () => Promise.resolve().then(() => takeHandedOver(client)), undefined);
    assert.equal(takeHandedOver(client), undefined, "nothing is held once the call has returned");
    assert.equal(await later, undefined, "a client that awaits first finds nothing");
    assert.equal(untaken.taken, undefined);

    const thrown = attemptFor(client);
    assert.throws(() => handOver(thrown, () => {
      throw new TypeError("the SDK failed");
    }, undefined), /the SDK failed/);
    assert.equal(takeHandedOver(client), undefined, "released on a throw too");
  });

  it("never lets an attempt reach a request of another call", () => {
    const client = {};
    const first = attemptFor(client);
    const second = attemptFor(client);
    handOver(first, () => undefined, undefined);
    handOver(second, () => assert.equal(takeHandedOver(client), second), undefined);
    assert.equal(first.taken, undefined);
  });
});
