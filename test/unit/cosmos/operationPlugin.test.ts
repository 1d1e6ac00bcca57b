import assert from "node:assert/strict";
import { feedAttemptPlugin, operationPlugin } from "../../../src/cosmos/operationPlugin.js";
import { getHedgingDetection } from "../../../src/diagnostics/detection.js";
import { operationHeaderName } from "../../../src/diagnostics/dispatchRecording.js";

describe("operationPlugin", () => {
  it("names the operation in its context's headers while the SDK runs it, and removes the name after", async () => {
    const headers: Record<string, unknown> = {};
    let seen: unknown;
    const response = { headers: {} };
    const returned = await operationPlugin().plugin({ headers }, undefined, async () => {
      seen = headers[operationHeaderName];
      return response;
    });
    assert.equal(returned, response);
    assert.equal(typeof seen, "string");
    assert.equal(operationHeaderName in headers, false);
    const detection = getHedgingDetection(response);
    assert.ok(detection !== undefined, "the record is on the response");
    assert.equal(detection.final, true);
    assert.equal(detection.hedgingStarted(), false);
  });

  it("each operation gets a name of its own", async () => {
    const names: unknown[] = [];
    const plugin = operationPlugin();
    for (let i = 0; i < 2; i++) {
      const headers: Record<string, unknown> = {};
      await plugin.plugin({ headers }, undefined, async () => names.push(headers[operationHeaderName]));
    }
    assert.notEqual(names[0], names[1]);
  });

  it("puts the record on the error the SDK throws, and rethrows it", async () => {
    const headers: Record<string, unknown> = {};
    const failure = Object.assign(new Error("Not Found"), { code: 404, headers: {} });
    await assert.rejects(
      operationPlugin().plugin({ headers }, undefined, async () => Promise.reject(failure)),
      (error: unknown) => error === failure,
    );
    assert.ok(getHedgingDetection(failure) !== undefined);
    assert.equal(operationHeaderName in headers, false);
  });

  it("passes a context without headers on untouched", async () => {
    const context = {};
    const result = { headers: {} };
    assert.equal(await operationPlugin().plugin(context, undefined, async (passed) => (assert.equal(passed, context), result)), result);
    assert.equal(getHedgingDetection(result), undefined);
  });
});

describe("feedAttemptPlugin", () => {
  const send = feedAttemptPlugin().plugin;

  it("gives the attempts of one request context one record, named while each runs", async () => {
    const context: { headers?: Record<string, unknown> } = {};
    const names: unknown[] = [];
    const first = { headers: {} };
    const second = { headers: {} };
    for (const page of [first, second]) {
      const headers: Record<string, unknown> = {};
      context.headers = headers;
      await send(context, undefined, async () => {
        names.push(headers[operationHeaderName]);
        return page;
      });
      assert.equal(operationHeaderName in headers, false);
    }
    assert.equal(names.length, 2);
    assert.ok(names.every((name) => typeof name === "string"));
    assert.ok(getHedgingDetection(first) !== undefined);
    assert.equal(getHedgingDetection(first), getHedgingDetection(second), "the same operation's record");
    assert.notEqual(getHedgingDetection(await send({ headers: {} }, undefined, async () => ({ headers: {} }))), getHedgingDetection(first), "another context, another record");
  });

  it("passes through an attempt the operation plugin already names, and a context without headers", async () => {
    const headers: Record<string, unknown> = { [operationHeaderName]: "7" };
    const page = { headers: {} };
    assert.equal(await send({ headers }, undefined, async () => page), page);
    assert.equal(headers[operationHeaderName], "7");
    assert.equal(getHedgingDetection(page), undefined);
    const bare = { headers: {} };
    assert.equal(await send({}, undefined, async () => bare), bare);
    assert.equal(getHedgingDetection(bare), undefined);
  });
});
