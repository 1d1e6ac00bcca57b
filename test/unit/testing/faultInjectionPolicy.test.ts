import assert from "node:assert/strict";
import { format } from "node:util";
import { AbortError } from "@azure/abort-controller";
import { createEmptyPipeline, createHttpHeaders, isRestError } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import { AzureLogger, getLogLevel, setLogLevel } from "@azure/logger";
import sinon from "sinon";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { getHedgeDiagnostics } from "../../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../../src/policies/crossRegionHedgingPolicy.js";
import { faultInjectionPolicy, faultInjectionPolicyName } from "../../../src/testing/faultInjectionPolicy.js";
import type { FaultInjectionPolicyOptions, FaultRule } from "../../../src/testing/faultInjectionPolicy.js";
import { FakeTransport } from "../../support/fakeTransport.js";
import { eastUs, observe, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";
import { LeakCheck, checkEachTest } from "../../support/leakCheck.js";
import { databaseAccountBody } from "../../support/requests.js";

/** A `next` that answers every request at once with 200 and counts what reached it. */
function wire(): { next: SendRequest; sent: PipelineRequest[] } {
  const sent: PipelineRequest[] = [];
  const next: SendRequest = async (request) => {
    sent.push(request);
    return { status: 200, headers: createHttpHeaders({ "x-ms-activity-id": "wire" }), request, bodyAsText: "{}" };
  };
  return { next, sent };
}

function twoRegions(): RegionCache {
  return new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
}

function withRegions(rules: FaultRule[], extra: Omit<FaultInjectionPolicyOptions, "rules" | "regions"> = {}) {
  return faultInjectionPolicy({ regions: twoRegions(), rules, ...extra });
}

describe("faultInjectionPolicy", function () {
  let clock: sinon.SinonFakeTimers;
  let leaks: LeakCheck;

  beforeEach(function () {
    // Not nextTick or queueMicrotask: the reporter's stdout writes schedule ticks that a fake clock would swallow and count as leaks.
    clock = sinon.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "setImmediate", "clearImmediate", "Date", "performance"],
    });
    leaks = new LeakCheck(clock);
  });

  checkEachTest(() => leaks.verify());

  afterEach(function () {
    leaks.dispose();
    clock.restore();
  });

  it("is a named pipeline policy", function () {
    const policy = withRegions([]);
    assert.equal(policy.name, faultInjectionPolicyName);
    assert.equal(faultInjectionPolicyName, "faultInjectionPolicy");
  });

  describe("rule kinds", function () {
    it("delays and then forwards", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ delayMs: 300 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs), next));
      await clock.tickAsync(299);
      assert.equal(sent.length, 0);
      assert.equal(pending.state().done, false);
      await clock.tickAsync(1);
      const response = await pending.result();
      assert.equal(sent.length, 1);
      assert.equal(response.headers.get("x-ms-activity-id"), "wire");
    });

    it("sends at once and holds the response", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ responseDelayMs: 300 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs), next));
      await clock.tickAsync(0);
      assert.equal(sent.length, 1, "the request reaches the service before the delay");
      await clock.tickAsync(299);
      assert.equal(pending.state().done, false);
      await clock.tickAsync(1);
      assert.equal((await pending.result()).headers.get("x-ms-activity-id"), "wire");
    });

    it("delays the send and the response of one request", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ delayMs: 100, responseDelayMs: 200 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs), next));
      await clock.tickAsync(99);
      assert.equal(sent.length, 0);
      await clock.tickAsync(1);
      assert.equal(sent.length, 1);
      await clock.tickAsync(199);
      assert.equal(pending.state().done, false);
      await clock.tickAsync(1);
      assert.equal((await pending.result()).status, 200);
    });

    it("does not hold a transport error", async function () {
      const failure = new Error("socket hang up");
      const policy = withRegions([{ responseDelayMs: 300 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs), async () => Promise.reject(failure)));
      await clock.tickAsync(0);
      assert.deepEqual(pending.state(), { done: true, error: failure });
    });

    it("answers with a synthetic Cosmos DB error that never reaches the wire", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ id: "unavailable", result: { status: 503, subStatus: 21008 } }]);
      const request = pointRead(eastUs);
      const response = await policy.sendRequest(request, next);
      assert.equal(sent.length, 0);
      assert.equal(response.status, 503);
      assert.equal(response.request, request);
      assert.equal(response.headers.get("x-ms-substatus"), "21008");
      assert.equal(response.headers.get("x-ms-request-charge"), "0");
      assert.equal(response.headers.get("content-type"), "application/json");
      assert.match(response.headers.get("x-ms-activity-id") ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const body = JSON.parse(response.bodyAsText ?? "") as { code: string; message: string };
      assert.equal(body.code, "ServiceUnavailable");
      assert.match(body.message, /rule unavailable.*503.*21008/);
    });

    it("gives every synthetic response its own activity id and substatus 0 by default", async function () {
      const { next } = wire();
      const policy = withRegions([{ result: { status: 410 } }]);
      const first = await policy.sendRequest(pointRead(eastUs), next);
      const second = await policy.sendRequest(pointRead(eastUs), next);
      assert.equal(first.headers.get("x-ms-substatus"), "0");
      assert.notEqual(first.headers.get("x-ms-activity-id"), second.headers.get("x-ms-activity-id"));
    });

    it("uses the given body and lets the given headers override its own", async function () {
      const { next } = wire();
      const policy = withRegions([
        {
          operations: ["pointRead"],
          result: {
            status: 429,
            subStatus: 3200,
            body: { code: "TooManyRequests", message: "slow down" },
            headers: { "x-ms-retry-after-ms": "25", "x-ms-request-charge": "1.5" },
          },
        },
        { operations: ["query"], result: { status: 200, body: { Documents: [], _count: 0 } } },
        { operations: ["create"], result: { status: 204 } },
      ]);
      const throttled = await policy.sendRequest(pointRead(eastUs), next);
      assert.equal(throttled.status, 429);
      assert.deepEqual(JSON.parse(throttled.bodyAsText ?? ""), { code: "TooManyRequests", message: "slow down" });
      assert.equal(throttled.headers.get("x-ms-retry-after-ms"), "25");
      assert.equal(throttled.headers.get("x-ms-request-charge"), "1.5");
      assert.equal(throttled.headers.get("x-ms-substatus"), "3200");

      const canned = await policy.sendRequest(query(eastUs), next);
      assert.equal(canned.status, 200);
      assert.deepEqual(JSON.parse(canned.bodyAsText ?? ""), { Documents: [], _count: 0 });

      const empty = await policy.sendRequest(requestTo(eastUs, "POST", "dbs/db/colls/c/docs", { body: "{}" }), next);
      assert.equal(empty.status, 204);
      assert.equal(empty.bodyAsText, "");
      assert.equal(empty.headers.get("content-type"), undefined);
    });

    it("delays and then fails", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ delayMs: 100, result: { status: 500 } }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs), next));
      await clock.tickAsync(99);
      assert.equal(pending.state().done, false);
      await clock.tickAsync(1);
      assert.equal((await pending.result()).status, 500);
      assert.equal(sent.length, 0);
    });

    it("resets the connection as the Node transport reports it", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ connectionReset: true }]);
      const request = pointRead(eastUs);
      await assert.rejects(policy.sendRequest(request, next), (error: unknown) => {
        assert.ok(isRestError(error));
        assert.equal(error.code, "ECONNRESET");
        assert.equal(error.request, request);
        assert.match(error.message, /ECONNRESET/);
        return true;
      });
      assert.equal(sent.length, 0);
    });

    it("never answers a timeout rule until the request is aborted", async function () {
      const { next, sent } = wire();
      const controller = leaks.controller();
      const policy = withRegions([{ timeout: true }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs, controller.signal), next));
      await clock.tickAsync(3_600_000);
      assert.equal(pending.state().done, false);
      assert.equal(leaks.listenerCount(controller.signal), 1);
      controller.abort();
      await assert.rejects(pending.result(), AbortError);
      assert.equal(sent.length, 0);
      assert.equal(leaks.listenerCount(controller.signal), 0);
    });

    it("ends a timeout rule when the request's own timeout elapses", async function () {
      const { next } = wire();
      const controller = leaks.controller();
      const policy = withRegions([{ timeout: true }]);
      const request = pointRead(eastUs, controller.signal);
      request.timeout = 2000;
      const pending = observe(policy.sendRequest(request, next));
      await clock.tickAsync(1999);
      assert.equal(pending.state().done, false);
      await clock.tickAsync(1);
      await assert.rejects(pending.result(), AbortError);
      assert.equal(leaks.listenerCount(controller.signal), 0);
    });

    it("counts a delay-only rule of 0 ms as a hit without touching the clock", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ id: "counter", delayMs: 0 }]);
      await policy.sendRequest(pointRead(eastUs), next);
      assert.equal(sent.length, 1);
      assert.equal(policy.hits("counter"), 1);
    });
  });

  describe("matching", function () {
    it("matches region names without regard to case and spaces", async function () {
      const { next, sent } = wire();
      const policy = withRegions([{ region: "westus", result: { status: 503 } }]);
      assert.equal((await policy.sendRequest(pointRead(westUs), next)).status, 503);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 200);
      assert.equal(sent.length, 1);
      assert.equal(new URL(sent[0]!.url).host, new URL(eastUs.endpoint).host);
    });

    it("matches any of several regions, and never a host the account does not list", async function () {
      const { next } = wire();
      const policy = withRegions([{ region: ["East US", "WEST us"], result: { status: 503 } }]);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 503);
      assert.equal((await policy.sendRequest(pointRead(westUs), next)).status, 503);
      const stranger = { name: "Elsewhere", endpoint: "https://elsewhere.example.com/" };
      assert.equal((await policy.sendRequest(pointRead(stranger), next)).status, 200);
    });

    it("applies a rule without a region to every region, unknown hosts included", async function () {
      const { next } = wire();
      const policy = withRegions([{ result: { status: 503 } }]);
      const stranger = { name: "Elsewhere", endpoint: "https://elsewhere.example.com/" };
      assert.equal((await policy.sendRequest(pointRead(stranger), next)).status, 503);
    });

    it("matches operation kinds", async function () {
      const { next } = wire();
      const policy = withRegions([{ operations: ["query", "queryPlan"], result: { status: 408 } }]);
      assert.equal((await policy.sendRequest(query(eastUs), next)).status, 408);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 200);
    });

    it("applies the first matching rule only, in order", async function () {
      const { next } = wire();
      const policy = withRegions([
        { id: "west", region: "West US", result: { status: 503 } },
        { id: "all", result: { status: 500 } },
      ]);
      assert.equal((await policy.sendRequest(pointRead(westUs), next)).status, 503);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 500);
      assert.equal(policy.hits("west"), 1);
      assert.equal(policy.hits("all"), 1);
    });

    it("learns the regions from account reads when it has no shared cache", async function () {
      const { next } = wire();
      const policy = faultInjectionPolicy({ rules: [{ region: "West US", operations: ["pointRead"], result: { status: 503 } }] });
      assert.equal((await policy.sendRequest(pointRead(westUs), next)).status, 200, "the region is unknown before the account read");
      const accountBody = JSON.stringify(
        databaseAccountBody({ read: [["East US", eastUs.endpoint], ["West US", westUs.endpoint]] }),
      );
      const account: SendRequest = async (request) => ({ status: 200, headers: createHttpHeaders(), request, bodyAsText: accountBody });
      await policy.sendRequest(requestTo(eastUs, "GET", ""), account);
      assert.equal((await policy.sendRequest(pointRead(westUs), next)).status, 503);
    });
  });

  describe("probability and count", function () {
    async function pattern(seed: number): Promise<string> {
      const { next } = wire();
      const policy = withRegions([{ probability: 0.5, result: { status: 503 } }], { seed });
      let outcomes = "";
      for (let i = 0; i < 64; i++) outcomes += (await policy.sendRequest(pointRead(eastUs), next)).status === 503 ? "F" : ".";
      return outcomes;
    }

    it("repeats the same draws for the same seed and differs for another", async function () {
      const first = await pattern(42);
      assert.equal(await pattern(42), first);
      assert.notEqual(await pattern(43), first);
      const faulted = [...first].filter((c) => c === "F").length;
      assert.ok(faulted > 16 && faulted < 48, `about half faulted, got ${first}`);
    });

    it("reports its seed, chosen at random when none is given", function () {
      assert.equal(withRegions([], { seed: 7 }).seed, 7);
      const seed = withRegions([]).seed;
      assert.ok(Number.isSafeInteger(seed) && seed >= 0, `seed ${seed}`);
    });

    it("never draws for a certain rule, so it does not shift the others' draws", async function () {
      const { next } = wire();
      const policy = withRegions(
        [
          { region: "West US", result: { status: 500 } },
          { probability: 0.5, result: { status: 503 } },
        ],
        { seed: 42 },
      );
      let outcomes = "";
      for (let i = 0; i < 64; i++) {
        await policy.sendRequest(pointRead(westUs), next);
        outcomes += (await policy.sendRequest(pointRead(eastUs), next)).status === 503 ? "F" : ".";
      }
      assert.equal(outcomes, await pattern(42));
    });

    it("never applies a rule of probability 0", async function () {
      const { next } = wire();
      const policy = withRegions([{ id: "never", probability: 0, result: { status: 503 } }], { seed: 1 });
      for (let i = 0; i < 20; i++) assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 200);
      assert.equal(policy.hits("never"), 0);
    });

    it("applies a rule at most count times, then lets the next rule match", async function () {
      const { next, sent } = wire();
      const policy = withRegions([
        { id: "twice", count: 2, result: { status: 503 } },
        { id: "then", count: 1, result: { status: 500 } },
      ]);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await policy.sendRequest(pointRead(eastUs), next)).status);
      assert.deepEqual(statuses, [503, 503, 500, 200, 200]);
      assert.equal(policy.hits("twice"), 2);
      assert.equal(policy.hits("then"), 1);
      assert.equal(sent.length, 2);
    });
  });

  describe("runtime controls", function () {
    it("switches on and off", async function () {
      const { next } = wire();
      const policy = withRegions([{ id: "r", result: { status: 503 } }], { enabled: false });
      assert.equal(policy.enabled, false);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 200);
      policy.enabled = true;
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 503);
      policy.enabled = false;
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 200);
      assert.equal(policy.hits("r"), 1);
      assert.throws(() => {
        (policy as { enabled: unknown }).enabled = "yes";
      }, /enabled must be true or false; got "yes"/);
      assert.equal(policy.enabled, false);
    });

    it("adds, lists, counts and removes rules", async function () {
      const { next } = wire();
      const policy = withRegions([{ result: { status: 500 }, operations: ["query"] }]);
      const added = policy.addRule({ result: { status: 503 } });
      const named = policy.addRule({ id: "slow", delayMs: 10 });
      assert.deepEqual(
        policy.rules.map((rule) => rule.id),
        ["rule1", "rule2", "slow"],
      );
      assert.equal(added.id, "rule2");
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 503);
      assert.equal(added.hits, 1);
      assert.equal(policy.hits("rule2"), 1);
      assert.equal(policy.removeRule("rule2"), true);
      assert.equal(policy.removeRule("rule2"), false);
      const pending = observe(policy.sendRequest(pointRead(eastUs), next));
      await clock.tickAsync(10);
      assert.equal((await pending.result()).status, 200);
      assert.equal(named.hits, 1);
      assert.throws(() => policy.hits("rule2"), /No installed fault rule has the id "rule2"/);
      policy.clearRules();
      assert.deepEqual(policy.rules, []);
      assert.equal((await policy.sendRequest(query(eastUs), next)).status, 200);
    });

    it("assigns ids that do not clash with the ones given, and refuses a duplicate", function () {
      const policy = withRegions([{ delayMs: 1 }, { id: "rule1", delayMs: 1 }]);
      assert.deepEqual(
        policy.rules.map((rule) => rule.id),
        ["rule2", "rule1"],
      );
      assert.throws(() => policy.addRule({ id: "rule1", delayMs: 1 }), /rule\.id "rule1" is already used/);
      assert.throws(
        () => withRegions([{ id: "a", delayMs: 1 }, { id: "a", delayMs: 2 }]),
        (error: unknown) => error instanceof RangeError && /rules\[1\]\.id "a" is already used/.test(error.message),
      );
    });

    it("keeps its own copy of each rule", async function () {
      const { next } = wire();
      const operations: FaultRule["operations"] & string[] = ["pointRead"];
      const rule: FaultRule = { operations, result: { status: 503 } };
      const policy = withRegions([rule]);
      operations.push("query");
      (rule.result as { status: number }).status = 500;
      assert.equal((await policy.sendRequest(query(eastUs), next)).status, 200);
      assert.equal((await policy.sendRequest(pointRead(eastUs), next)).status, 503);
      assert.ok(Object.isFrozen(policy.rules[0]!.rule));
    });
  });

  describe("aborts", function () {
    it("cuts a delay short on abort, leaving no timer and no listener", async function () {
      const { next, sent } = wire();
      const controller = leaks.controller();
      const policy = withRegions([{ delayMs: 1000 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs, controller.signal), next));
      await clock.tickAsync(100);
      assert.equal(clock.countTimers(), 1);
      assert.equal(leaks.listenerCount(controller.signal), 1);
      controller.abort();
      await assert.rejects(pending.result(), AbortError);
      assert.equal(clock.countTimers(), 0);
      assert.equal(leaks.listenerCount(controller.signal), 0);
      await clock.tickAsync(5000);
      assert.equal(sent.length, 0);
    });

    it("drops a held response on abort, destroying its body stream", async function () {
      const controller = leaks.controller();
      const destroy = sinon.spy();
      const next: SendRequest = async (request) => ({
        status: 200,
        headers: createHttpHeaders(),
        request,
        readableStreamBody: { destroy } as unknown as NodeJS.ReadableStream,
      });
      const policy = withRegions([{ responseDelayMs: 1000 }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs, controller.signal), next));
      await clock.tickAsync(10);
      controller.abort();
      await assert.rejects(pending.result(), AbortError);
      assert.equal(destroy.callCount, 1);
      assert.equal(clock.countTimers(), 0);
      assert.equal(leaks.listenerCount(controller.signal), 0);
    });

    it("removes its listener when a delay ends normally", async function () {
      const { next } = wire();
      const controller = leaks.controller();
      const policy = withRegions([{ delayMs: 50, result: { status: 503 } }]);
      const pending = observe(policy.sendRequest(pointRead(eastUs, controller.signal), next));
      await clock.tickAsync(50);
      assert.equal((await pending.result()).status, 503);
      assert.equal(leaks.listenerCount(controller.signal), 0);
    });

    it("rejects at once when the request is already aborted", async function () {
      const { next, sent } = wire();
      const controller = leaks.controller();
      controller.abort();
      const policy = withRegions([{ delayMs: 1000 }, { timeout: true, operations: ["query"] }]);
      await assert.rejects(policy.sendRequest(pointRead(eastUs, controller.signal), next), AbortError);
      await assert.rejects(policy.sendRequest(query(eastUs, controller.signal), next), AbortError);
      assert.equal(sent.length, 0);
      assert.equal(clock.countTimers(), 0);
    });
  });

  describe("validation", function () {
    const cases: Array<[string, unknown[], ErrorConstructor, RegExp]> = [
      ["a negative delay", [{ delayMs: -5 }], RangeError, /rules\[0\]\.delayMs .*got -5\./],
      ["an infinite delay", [{ delayMs: Infinity }], RangeError, /rules\[0\]\.delayMs .*got Infinity\./],
      ["a delay past setTimeout's range", [{ delayMs: 2 ** 31 }], RangeError, /rules\[0\]\.delayMs .*got 2147483648\./],
      ["probability 2", [{ delayMs: 1 }, { delayMs: 1, probability: 2 }], RangeError, /rules\[1\]\.probability must be a number from 0 to 1; got 2\./],
      ["probability NaN", [{ delayMs: 1, probability: NaN }], RangeError, /rules\[0\]\.probability .*got NaN\./],
      ["probability as a string", [{ delayMs: 1, probability: "0.5" }], RangeError, /rules\[0\]\.probability .*got "0\.5"\./],
      ["status 99", [{ result: { status: 99 } }], RangeError, /rules\[0\]\.result\.status must be a whole number from 100 to 599; got 99\./],
      ["status 1000", [{ result: { status: 1000 } }], RangeError, /rules\[0\]\.result\.status .*got 1000\./],
      ["a fractional status", [{ result: { status: 503.5 } }], RangeError, /rules\[0\]\.result\.status .*got 503\.5\./],
      ["a negative substatus", [{ result: { status: 503, subStatus: -1 } }], RangeError, /rules\[0\]\.result\.subStatus .*got -1\./],
      ["an unknown operation kind", [{ delayMs: 1, operations: ["pointRead", "pointread"] }], RangeError, /rules\[0\]\.operations\[1\] must be an operation kind \(.*pointRead.*\); got "pointread"\./],
      ["an empty operation list", [{ delayMs: 1, operations: [] }], RangeError, /rules\[0\]\.operations must list at least one/],
      ["operations as a string", [{ delayMs: 1, operations: "query" }], TypeError, /rules\[0\]\.operations must be an array .*got "query"\./],
      ["an unknown rule field", [{ delay: 5 }], TypeError, /rules\[0\] has an unknown field "delay"; known fields: id, region/],
      ["an unknown result field", [{ delayMs: 1 }, { result: { status: 503, substatus: 3 } }], TypeError, /rules\[1\]\.result has an unknown field "substatus"/],
      ["a rule without an effect", [{ region: "East US" }], TypeError, /rules\[0\] has no effect/],
      ["two ways to fail", [{ result: { status: 503 }, connectionReset: true }], TypeError, /rules\[0\] sets result and connectionReset/],
      ["a delay before a timeout", [{ timeout: true, delayMs: 5 }], TypeError, /rules\[0\] sets timeout and delayMs/],
      ["a negative response delay", [{ responseDelayMs: -1 }], RangeError, /rules\[0\]\.responseDelayMs .*got -1\./],
      ["a response delay on a synthetic result", [{ result: { status: 503 }, responseDelayMs: 5 }], TypeError, /rules\[0\] sets result and responseDelayMs/],
      ["a response delay on a timeout", [{ timeout: true, responseDelayMs: 5 }], TypeError, /rules\[0\] sets timeout and responseDelayMs/],
      ["connectionReset false", [{ connectionReset: false }], TypeError, /rules\[0\]\.connectionReset must be true when set .*got false\./],
      ["count 0", [{ delayMs: 1, count: 0 }], RangeError, /rules\[0\]\.count must be a whole number from 1 .*got 0\./],
      ["count 1.5", [{ delayMs: 1, count: 1.5 }], RangeError, /rules\[0\]\.count .*got 1\.5\./],
      ["an empty region", [{ delayMs: 1, region: " " }], TypeError, /rules\[0\]\.region must be a non-empty region name; got " "\./],
      [
        "a region with a line break, as the region-name rule refuses everywhere",
        [{ delayMs: 1, region: "West\nUS" }],
        TypeError,
        /rules\[0\]\.region must not contain CR, LF or another control character; got "West\\nUS"\./,
      ],
      ["an empty region list", [{ delayMs: 1, region: [] }], RangeError, /rules\[0\]\.region must name at least one region/],
      ["a bad region in a list", [{ delayMs: 1, region: ["East US", 3] }], TypeError, /rules\[0\]\.region\[1\] must be a non-empty region name; got 3\./],
      ["an empty id", [{ delayMs: 1, id: "" }], TypeError, /rules\[0\]\.id must be a non-empty string; got ""\./],
      ["a header value with CR/LF", [{ result: { status: 503, headers: { "x-a": "1\r\nx-b: 2" } } }], TypeError, /rules\[0\]\.result\.headers\["x-a"\] must not contain CR, LF/],
      ["a bad header name", [{ result: { status: 503, headers: { "bad name": "1" } } }], TypeError, /rules\[0\]\.result\.headers has an invalid header name "bad name"\./],
      ["a header value that is not a string", [{ result: { status: 503, headers: { "x-a": 1 } } }], TypeError, /rules\[0\]\.result\.headers\["x-a"\] must be a string; got 1\./],
      ["a body that is not JSON", [{ result: { status: 200, body: 10n } }], TypeError, /rules\[0\]\.result\.body must be serializable as JSON/],
      ["a rule that is not an object", [null], TypeError, /rules\[0\] must be an object; got null\./],
    ];
    for (const [label, rules, ErrorClass, message] of cases) {
      it(`rejects ${label}`, function () {
        assert.throws(
          () => faultInjectionPolicy({ rules: rules as FaultRule[] }),
          (error: unknown) => {
            assert.ok(error instanceof ErrorClass, `expected a ${ErrorClass.name}, got ${String(error)}`);
            assert.match(error.message, message);
            return true;
          },
        );
      });
    }

    it("rejects bad options, naming the option and the value", function () {
      const bad: Array<[unknown, RegExp]> = [
        [undefined, /faultInjectionPolicy options must be an object; got undefined\./],
        [{}, /rules must be an array of fault rules; got undefined\./],
        [{ rules: [], seed: 1.5 }, /seed must be a whole number; got 1\.5\./],
        [{ rules: [], seed: NaN }, /seed must be a whole number; got NaN\./],
        [{ rules: [], enabled: "yes" }, /enabled must be true or false; got "yes"\./],
        [{ rules: [], regions: {} }, /regions must be a RegionCache; got an object\./],
        [{ rules: [], rule: [] }, /faultInjectionPolicy options has an unknown field "rule"/],
      ];
      for (const [options, message] of bad) {
        assert.throws(() => faultInjectionPolicy(options as FaultInjectionPolicyOptions), message);
      }
    });

    it("names the rule in addRule errors and installs nothing", function () {
      const policy = withRegions([]);
      assert.throws(() => policy.addRule({ delayMs: -1 }), /^RangeError: rule\.delayMs .*got -1\.$/);
      assert.throws(() => policy.addRule({ result: { status: 99 } }), /rule\.result\.status .*got 99\./);
      assert.deepEqual(policy.rules, []);
    });
  });

  describe("logging", function () {
    let lines: string[];
    let previousLog: typeof AzureLogger.log;
    let previousLevel: ReturnType<typeof getLogLevel>;

    beforeEach(function () {
      lines = [];
      previousLog = AzureLogger.log;
      previousLevel = getLogLevel();
      setLogLevel("info");
      AzureLogger.log = (...args: unknown[]) => {
        lines.push(format(...args));
      };
    });

    afterEach(function () {
      AzureLogger.log = previousLog;
      setLogLevel(previousLevel);
    });

    it("logs one line per injected fault, without headers", async function () {
      const { next } = wire();
      const policy = withRegions([{ id: "west-503", region: "West US", result: { status: 503, subStatus: 3 } }]);
      const secret = "type%3Dmaster%26ver%3D1.0%26sig%3Dc2VjcmV0";
      const faulted = pointRead(westUs);
      faulted.headers.set("authorization", secret);
      await policy.sendRequest(faulted, next);
      const forwarded = pointRead(eastUs);
      forwarded.headers.set("authorization", secret);
      await policy.sendRequest(forwarded, next);
      const ours = lines.filter((line) => line.includes(faultInjectionPolicyName));
      assert.equal(ours.length, 1, ours.join("\n"));
      assert.match(ours[0]!, /status 503\/3 into GET pointRead to West US \(rule west-503, hit 1\)/);
      for (const line of lines) {
        assert.ok(!line.includes("sig") && !line.toLowerCase().includes("authorization"), line);
      }
    });
  });

  describe("with crossRegionHedgingPolicy", function () {
    function hedgedPipeline(rules: FaultRule[]): { send: (request: PipelineRequest) => Promise<PipelineResponse>; transport: FakeTransport; faults: PipelinePolicy } {
      const regions = twoRegions();
      const pipeline = createEmptyPipeline();
      // The loser is aborted at once, so each test ends with its race; draining has its own tests (loserDrain.test.ts).
      pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 50, drainLosers: false }));
      const faults = faultInjectionPolicy({ regions, rules });
      pipeline.addPolicy(faults, { afterPhase: "Sign" });
      const transport = new FakeTransport();
      return { send: (request) => pipeline.sendRequest(transport, request), transport, faults };
    }

    it("lets a delay on the primary region make the hedge win", async function () {
      const { send, transport } = hedgedPipeline([{ region: "East US", delayMs: 5000 }]);
      transport.script(westUs.endpoint, { status: 200, activityId: "from-west" });
      const controller = leaks.controller();
      const pending = observe(send(pointRead(eastUs, controller.signal)));
      await clock.tickAsync(49);
      assert.equal(transport.received.length, 0);
      await clock.tickAsync(1);
      assert.equal(transport.receivedBy(westUs.endpoint).length, 1, "the hedge goes out at the threshold");
      // The fake transport answers on a 0 ms timer, which Node (and the fake clock) run 1 ms later.
      await clock.tickAsync(1);
      const response = await pending.result();
      assert.equal(response.headers.get("x-ms-activity-id"), "from-west");
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.hedgeWon, true);
      assert.equal(diagnostics?.winningRegion, "West US");
      assert.deepEqual(
        diagnostics?.arms.map((arm) => [arm.region, arm.outcome]),
        [
          ["East US", "aborted"],
          ["West US", "returned"],
        ],
      );
      assert.equal(transport.receivedBy(eastUs.endpoint).length, 0, "the primary was aborted during its fault delay");
      assert.equal(transport.received.length, 1);
      assert.equal(clock.countTimers(), 0);
    });

    it("lets a response delay on the primary region make the hedge win after both regions were reached", async function () {
      const { send, transport } = hedgedPipeline([{ region: "East US", responseDelayMs: 5000 }]);
      transport.script(eastUs.endpoint, { status: 200, activityId: "from-east" });
      transport.script(westUs.endpoint, { status: 200, activityId: "from-west" });
      const pending = observe(send(pointRead(eastUs)));
      await clock.tickAsync(52);
      const response = await pending.result();
      assert.equal(response.headers.get("x-ms-activity-id"), "from-west");
      assert.equal(getHedgeDiagnostics(response)?.winningRegion, "West US");
      assert.equal(transport.receivedBy(eastUs.endpoint).length, 1);
      assert.equal(transport.receivedBy(westUs.endpoint).length, 1);
      assert.equal(clock.countTimers(), 0);
    });

    it("lets a 503 on the primary region go back at once, unhedged, for the SDK's retry", async function () {
      const { send, transport } = hedgedPipeline([{ region: "East US", operations: ["pointRead"], result: { status: 503 } }]);
      transport.script(westUs.endpoint, { status: 200, activityId: "from-west" });
      const pending = observe(send(pointRead(eastUs)));
      const response = await pending.result();
      assert.equal(response.status, 503);
      const diagnostics = getHedgeDiagnostics(response);
      assert.equal(diagnostics?.hedgeFired, false);
      assert.equal(diagnostics?.terminalState, "primaryOutcome");
      assert.deepEqual(
        diagnostics?.arms.map((arm) => [arm.region, arm.status, arm.outcome]),
        [["East US", 503, "returned"]],
      );
      assert.equal(transport.received.length, 0, "the 503 was injected and no hedge was sent");
      assert.equal(clock.countTimers(), 0, "no hedge is left to come");
    });

    it("lets a 503 on the primary region past the threshold go back with the hedge in flight, which is aborted", async function () {
      const { send, transport } = hedgedPipeline([{ region: "East US", operations: ["pointRead"], delayMs: 60, result: { status: 503 } }]);
      transport.script(westUs.endpoint, { status: 200, delayMs: 100, activityId: "from-west" });
      const pending = observe(send(pointRead(eastUs)));
      await clock.tickAsync(60);
      const response = await pending.result();
      assert.equal(response.status, 503);
      assert.deepEqual(
        getHedgeDiagnostics(response)?.arms.map((arm) => [arm.region, arm.status, arm.outcome]),
        [
          ["East US", 503, "returned"],
          ["West US", undefined, "aborted"],
        ],
      );
      assert.equal(transport.receivedBy(westUs.endpoint)[0]?.signalAborted, true);
      assert.equal(transport.receivedBy(eastUs.endpoint).length, 0);
      assert.equal(clock.countTimers(), 0);
    });
  });
});
