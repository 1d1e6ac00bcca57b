import assert from "node:assert/strict";
import { operationPlugin } from "../../../src/cosmos/operationPlugin.js";
import { sdkRequestPlugin } from "../../../src/cosmos/sdkRequestPlugin.js";
import { takeHandedOver } from "../../../src/cosmos/attemptHandoff.js";
import { getHedgingDetection, OperationDetection } from "../../../src/diagnostics/detection.js";
import { linkAttempt, nameOperation, operationHeaderName, operationNamedIn, registerOperation } from "../../../src/diagnostics/dispatchRecording.js";
import { pointRead, westUs } from "../../support/hedgingFixtures.js";
import { getHedgeDiagnostics, SkippedHeaders } from "../../../src/diagnostics/diagnostics.js";
import { DeferredSkippedRecord, skippedRecord } from "../../../src/diagnostics/diagnosticsRecord.js";
import { hedgeDiagnosticsHeaderName } from "../../../src/cosmos/headers.js";

describe("operationPlugin", () => {
  it("names the operation on its context's headers while the SDK runs it, and unnames it after", async () => {
    const headers: Record<string, unknown> = {};
    let seen: unknown;
    const response = { headers: {} };
    const returned = await operationPlugin().plugin({ headers }, undefined, async () => {
      seen = operationNamedIn(headers);
      return response;
    });
    assert.equal(returned, response);
    assert.ok(seen instanceof OperationDetection);
    assert.equal(operationNamedIn(headers), undefined);
    assert.deepEqual(Object.keys(headers), [], "nothing the SDK would copy into a request");
    const detection = getHedgingDetection(response);
    assert.equal(detection, seen, "the record is on the response");
    assert.equal(detection.final, true);
    assert.equal(detection.hedgingStarted(), false);
  });

  it("writes the header of a deferred last record on the headers the SDK returns, and leaves headers that refuse it as they are, the outcome and the operation's end untouched", async () => {
    const deferred = () => new DeferredSkippedRecord(new SkippedHeaders(skippedRecord({ policy: "crossRegion", operation: "pointRead", primaryRegion: "West US" }, "disabled", 0)), 2);
    const run = async (headers: object): Promise<{ returned: unknown; detection: ReturnType<typeof getHedgingDetection> }> => {
      const context = { headers: {} };
      const outcome = { headers };
      const returned = await operationPlugin().plugin(context, undefined, async () => {
        const operation = operationNamedIn(context.headers);
        if (operation !== undefined) operation.lastRecord = deferred();
        return outcome;
      });
      return { returned, detection: getHedgingDetection(returned) };
    };
    const open: Record<string, unknown> = {};
    const written = await run(open);
    assert.equal(JSON.parse(String(open[hedgeDiagnosticsHeaderName])).totalRequestCharge, 2);
    assert.equal(getHedgeDiagnostics(written.returned)?.terminalState, "skipped");
    const frozen = Object.freeze({ "x-ms-request-charge": "2" });
    const fromFrozen = await run(frozen);
    assert.deepEqual(Object.keys(frozen), ["x-ms-request-charge"]);
    assert.equal(getHedgeDiagnostics(fromFrozen.returned)?.totalRequestCharge, 2, "the record is attached all the same");
    assert.equal(fromFrozen.detection?.final, true);
    const refusing = new Proxy<Record<string, unknown>>({}, {
      set: () => {
        throw new TypeError("read-only headers");
      },
    });
    const fromProxy = await run(refusing);
    assert.equal((fromProxy.returned as { headers: unknown }).headers, refusing);
    assert.equal(fromProxy.detection?.final, true, "the operation ended");
  });

  it("each operation gets a record of its own", async () => {
    const named: unknown[] = [];
    const plugin = operationPlugin();
    for (let i = 0; i < 2; i++) {
      const headers: Record<string, unknown> = {};
      await plugin.plugin({ headers }, undefined, async () => named.push(operationNamedIn(headers)));
    }
    assert.ok(named[0] instanceof OperationDetection);
    assert.notEqual(named[0], named[1]);
  });

  it("puts the record on the error the SDK throws, and rethrows it", async () => {
    const headers: Record<string, unknown> = {};
    const failure = Object.assign(new Error("Not Found"), { code: 404, headers: {} });
    await assert.rejects(
      operationPlugin().plugin({ headers }, undefined, async () => Promise.reject(failure)),
      (error: unknown) => error === failure,
    );
    assert.ok(getHedgingDetection(failure) !== undefined);
    assert.equal(operationNamedIn(headers), undefined);
  });

  it("ends the operation when a plugin after it throws instead of rejecting", async () => {
    const headers: Record<string, unknown> = {};
    const failure = new Error("a plugin's bug");
    await assert.rejects(
      operationPlugin().plugin({ headers }, undefined, () => {
        throw failure;
      }),
      (error: unknown) => error === failure,
    );
    assert.equal(getHedgingDetection(failure)?.final, true);
    assert.equal(operationNamedIn(headers), undefined);
  });

  it("removes the operation's id the request plugin wrote for an attempt it could not hand over, and forgets it", async () => {
    const headers: Record<string, unknown> = {};
    let id: unknown;
    await operationPlugin().plugin({ headers }, undefined, async () => {
      id = headers[operationHeaderName] = registerOperation(operationNamedIn(headers)!);
      return { headers: {} };
    });
    assert.equal(typeof id, "string");
    assert.equal(operationHeaderName in headers, false);
    const request = pointRead(westUs);
    request.headers.set(operationHeaderName, String(id));
    assert.equal(linkAttempt(request), undefined, "an ended operation links no request");
  });

  it("passes a context without headers on untouched", async () => {
    const context = {};
    const result = { headers: {} };
    assert.equal(await operationPlugin().plugin(context, undefined, async (passed) => (assert.equal(passed, context), result)), result);
    assert.equal(getHedgingDetection(result), undefined);
  });
});

describe("the request plugin's record of an operation run without operation plugins (a page of a feed)", () => {
  const client = {};
  const send = sdkRequestPlugin(client).plugin;
  /** An attempt as @azure/cosmos makes it: the plugin, then the hedging client called in the same run. */
  const attempt = (context: { headers?: Record<string, unknown> }, answer: object) => {
    let handed: OperationDetection | undefined;
    const sent = send({ ...context, httpClient: client }, undefined, async () => {
      handed = takeHandedOver(client)?.operation;
      return answer;
    });
    return { sent, handed: () => handed };
  };

  it("gives the attempts of one request context one record, named while each runs", async () => {
    const context: { headers?: Record<string, unknown>; httpClient?: unknown } = { httpClient: client };
    const handed: unknown[] = [];
    const first = { headers: {} };
    const second = { headers: {} };
    for (const page of [first, second]) {
      const headers: Record<string, unknown> = {};
      context.headers = headers;
      await send(context, undefined, async () => {
        handed.push(takeHandedOver(client)?.operation);
        assert.equal(operationNamedIn(headers), handed.at(-1), "named while the attempt runs");
        return page;
      });
      assert.equal(operationNamedIn(headers), undefined);
    }
    assert.ok(handed.every((operation) => operation instanceof OperationDetection));
    assert.equal(getHedgingDetection(first), handed[0]);
    assert.equal(getHedgingDetection(first), getHedgingDetection(second), "the same operation's record");
    const other = attempt({ headers: {} }, { headers: {} });
    assert.notEqual(getHedgingDetection(await other.sent), getHedgingDetection(first), "another context, another record");
  });

  it("hands over the operation the operation plugin named, without a record of its own, and passes a context without headers through", async () => {
    const headers: Record<string, unknown> = {};
    const operation = new OperationDetection();
    nameOperation(headers, operation);
    const page = { headers: {} };
    const named = attempt({ headers }, page);
    assert.equal(await named.sent, page);
    assert.equal(named.handed(), operation);
    assert.equal(getHedgingDetection(page), undefined, "the operation plugin attaches its record itself");
    const bare = { headers: {} };
    assert.equal(await send({}, undefined, async () => bare), bare);
    assert.equal(getHedgingDetection(bare), undefined);
  });
});
