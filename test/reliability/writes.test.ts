import assert from "node:assert/strict";
import type { Container, CosmosClient } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest } from "@azure/core-rest-pipeline";
import type { HedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { classifyOperation } from "../../src/cosmos/operationKind.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { faultInjectionPolicy } from "../../src/testing/faultInjectionPolicy.js";
import type { FaultInjectionPolicy, FaultRule as PolicyFaultRule } from "../../src/testing/faultInjectionPolicy.js";
import type { Emulator, FaultRule as EmulatorFaultRule } from "../emulator/index.js";
import { createTestClient } from "../support/cosmos.js";
import { useEmulator } from "../support/emulatorFixture.js";

const writeKinds: readonly OperationKind[] = ["create", "upsert", "replace", "patch", "delete", "batch"];
const writeRegion = "East US";
const preferredLocations = ["West US", "East US", "North Europe"];
/**
 * Short, so that a hanging or delayed attempt times out within the test, yet
 * far above what a write takes on a loaded machine: an attempt times out
 * only where a fault makes it, never because the machine was busy. The
 * metadata threshold must sit below it.
 */
const requestTimeout = 3000;
/** Tags every attempt `@azure/cosmos` makes, so that its arrivals at the service can be counted one by one. */
const attemptHeader = "x-reliability-attempt";
const database = "writes";
const containerId = "items";

/** A fault mix on the write region: rules for the emulator's proxy (they reach the service) and for faultInjectionPolicy (most never do). */
interface FaultMix {
  readonly name: string;
  readonly emulator?: readonly EmulatorFaultRule[];
  readonly policy?: readonly PolicyFaultRule[];
}

const onWrites = { operations: [...writeKinds] };
const policyOnWrites = { region: writeRegion, operations: [...writeKinds] };

const faultMixes: readonly FaultMix[] = [
  { name: "no fault" },
  { name: "a slow write region", emulator: [{ ...onWrites, delayMs: { min: 20, max: 150 } }] },
  { name: "503 from the service", emulator: [{ ...onWrites, status: 503 }] },
  { name: "408 from the service", emulator: [{ ...onWrites, status: 408 }] },
  { name: "429 with retry-after from the service", emulator: [{ ...onWrites, status: 429, headers: { "x-ms-retry-after-ms": "5" }, count: 12 }] },
  { name: "connection resets", emulator: [{ ...onWrites, connectionReset: true, count: 6 }] },
  { name: "the service answering after the SDK's timeout", emulator: [{ ...onWrites, delayMs: requestTimeout + 1000, count: 6 }] },
  { name: "injected 503", policy: [{ ...policyOnWrites, result: { status: 503 } }] },
  { name: "injected 429 with retry-after", policy: [{ ...policyOnWrites, result: { status: 429, headers: { "x-ms-retry-after-ms": "5" } }, count: 12 }] },
  { name: "injected connection resets", policy: [{ ...policyOnWrites, connectionReset: true, count: 6 }] },
  { name: "injected timeouts", policy: [{ ...policyOnWrites, timeout: true, count: 6 }] },
  { name: "injected send and response delays", policy: [{ ...policyOnWrites, delayMs: 50, probability: 0.5 }, { ...policyOnWrites, responseDelayMs: 80 }] },
  {
    name: "a random mix",
    emulator: [
      { ...onWrites, status: 503, probability: 0.2 },
      { ...onWrites, delayMs: { min: 0, max: 60 }, probability: 0.5 },
    ],
    policy: [
      { ...policyOnWrites, result: { status: 429, headers: { "x-ms-retry-after-ms": "5" } }, probability: 0.3 },
      { ...policyOnWrites, connectionReset: true, probability: 0.1 },
    ],
  },
];

/** One request `@azure/cosmos` handed to the hedging client: one attempt. */
interface Attempt {
  readonly id: string;
  readonly kind: OperationKind;
}

/**
 * Failures that `@azure/cosmos` builds itself, without the hedging client's
 * error: its own request timeout, and a batch whose operations failed.
 */
function sdkOwnFailure(error: Error): boolean {
  return error.name === "TimeoutError" || error.message.startsWith("Batch request error: ");
}

/** Wraps an `HttpClient`, calling `see` with each request before passing it on. */
function watching(inner: HttpClient, see: (request: PipelineRequest) => void): HttpClient {
  return {
    sendRequest(request) {
      see(request);
      return inner.sendRequest(request);
    },
  };
}

describe("writes on a single-write account under faults", function () {
  this.timeout(60_000);
  const fixture = useEmulator({ database, container: containerId, emulator: { regions: [{ name: "East US" }, { name: "West US" }, { name: "North Europe" }] } });
  let emulator: Emulator;
  let client: CosmosClient;
  let container: Container;
  let faults: FaultInjectionPolicy;
  const attempts: Attempt[] = [];
  /** Requests of write kinds that left the hedging pipeline for the transport. */
  const wireSends: string[] = [];
  /** What the data-plane policy reported for each write attempt it considered, whatever @azure/cosmos then made of the outcome. */
  const writeRecords: HedgeDiagnostics[] = [];
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];
  let round = 0;

  before(async function () {
    delete process.env[metadataHedgingEnvironmentVariable];
    emulator = fixture.emulator;
    const transport = watching(createDefaultHttpClient(), (request) => {
      if (writeKinds.includes(classifyOperation(request))) wireSends.push(request.headers.get(attemptHeader) ?? "untagged");
    });
    const options = withHedging(
      {
        endpoint: emulator.endpoint,
        key: emulator.key,
        httpClient: transport,
        connectionPolicy: { preferredLocations, requestTimeout, enableBackgroundEndpointRefreshing: false },
      },
      // Hedging as eager as it gets, writes included where the account allows: a single-write account must still see each attempt once.
      {
        crossRegion: { threshold: 1, thresholdStep: 1, enableMultiWriteRegionHedge: true, budget: false },
        metadata: { threshold: 1 },
        onDiagnostics: (record) => {
          if (record.policy === "crossRegion" && writeKinds.includes(record.operation)) writeRecords.push(record);
        },
      },
    );
    const hedging = options.httpClient as HedgingHttpClient;
    faults = faultInjectionPolicy({ regions: hedging.regions, rules: [], seed: 8 });
    hedging.pipeline.addPolicy(faults, { afterPhase: "Sign" });
    let nextAttempt = 0;
    const sdkSide = watching(hedging, (request) => {
      const kind = classifyOperation(request);
      if (!writeKinds.includes(kind)) return;
      const id = `attempt-${++nextAttempt}`;
      request.headers.set(attemptHeader, id);
      attempts.push({ id, kind });
    });
    client = createTestClient(emulator, { ...options, httpClient: sdkSide });
    container = client.database(database).container(containerId);
    // Warm the SDK's caches (account, collection, partition key ranges).
    await container.items.upsert({ id: "warm", pk: "warm" });
  });

  after(function () {
    client?.dispose();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  /** Every write kind once, concurrently, on items of this round; each settles with a response or an error. */
  async function writeEverything(): Promise<{ operation: string; outcome: unknown }[]> {
    round += 1;
    const pk = `round-${round}`;
    const id = (name: string) => `${name}-${round}`;
    const operations: Record<string, () => Promise<unknown>> = {
      create: () => container.items.create({ id: id("created"), pk }),
      upsert: () => container.items.upsert({ id: id("upserted"), pk }),
      replace: () => container.item(id("replaced"), pk).replace({ id: id("replaced"), pk, version: 2 }),
      patch: () => container.item(id("patched"), pk).patch([{ op: "add", path: "/patched", value: true }]),
      delete: () => container.item(id("deleted"), pk).delete(),
      batch: () =>
        container.items.batch(
          [
            { operationType: "Create", resourceBody: { id: id("batched-1"), pk } },
            { operationType: "Create", resourceBody: { id: id("batched-2"), pk } },
          ],
          pk,
        ),
    };
    return Promise.all(
      Object.entries(operations).map(([operation, run]) =>
        run().then(
          (outcome) => ({ operation, outcome }),
          (error: unknown) => ({ operation, outcome: error }),
        ),
      ),
    );
  }

  for (const mix of faultMixes) {
    it(`${mix.name}: each write attempt reaches the service at most once, and only the write region`, async function () {
      emulator.clearFaults();
      faults.clearRules();
      // The items that replace, patch and delete need, written without faults.
      const pk = `round-${round + 1}`;
      for (const name of ["replaced", "patched", "deleted"]) await container.items.upsert({ id: `${name}-${round + 1}`, pk });
      emulator.resetCounters();
      attempts.length = 0;
      wireSends.length = 0;
      writeRecords.length = 0;
      for (const rule of mix.emulator ?? []) emulator.region(writeRegion).addFault(rule);
      const handles = (mix.policy ?? []).map((rule) => faults.addRule(rule));

      const results = await writeEverything();

      const arrivals = new Map<string, number>();
      for (const region of emulator.regions) {
        const writes = region.requests.filter((request) => writeKinds.includes(request.kind));
        if (region.name !== writeRegion) assert.deepEqual(writes.map((request) => request.kind), [], `writes that reached ${region.name}`);
        for (const request of writes) {
          const id = request.headers[attemptHeader] ?? "untagged";
          arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
        }
      }
      const known = new Set(attempts.map((attempt) => attempt.id));
      for (const [id, count] of arrivals) {
        assert.ok(known.has(id), `a write reached the service that @azure/cosmos never sent (${id})`);
        assert.equal(count, 1, `attempt ${id} reached the service ${count} times`);
      }
      const sentTwice = wireSends.filter((id, index) => wireSends.indexOf(id) !== index);
      assert.deepEqual(sentTwice, [], "attempts the hedging pipeline sent to the transport more than once");
      assert.ok(wireSends.every((id) => known.has(id)), "every write the pipeline sent is an attempt of the SDK");

      const injected = handles.reduce((total, handle) => total + (handle.rule.result || handle.rule.connectionReset || handle.rule.timeout ? handle.hits : 0), 0);
      // An attempt answered by an injected fault never reaches the transport; every other one does, exactly once.
      assert.equal(wireSends.length + injected, attempts.length, "attempts of the SDK = sends to the transport + injected answers");
      assert.ok(attempts.length >= writeKinds.length, "every write kind was attempted");
      for (const kind of writeKinds) assert.ok(attempts.some((attempt) => attempt.kind === kind), `a ${kind} was attempted`);

      // Every attempt, whatever the SDK made of its outcome (a timeout, a batch error), was considered and not hedged.
      await emulator.idle();
      assert.equal(writeRecords.length, attempts.length, "the data-plane policy reported on every write attempt");
      for (const record of writeRecords) {
        assert.equal(record.hedgeFired, false, `a ${record.operation} attempt fired a hedge`);
        assert.ok(record.arms.length <= 1, `a ${record.operation} attempt had ${record.arms.length} arms`);
        assert.ok(record.arms.every((arm) => arm.region === writeRegion), `a ${record.operation} attempt went to ${record.arms.map((arm) => arm.region).join(", ")}`);
      }
      // And every outcome: a response or an error carrying unhedged diagnostics, or an error of the SDK's own making.
      for (const { operation, outcome } of results) {
        const diagnostics = getHedgeDiagnostics(outcome);
        if (diagnostics !== undefined) {
          assert.equal(diagnostics.hedgeFired, false, `${operation} fired a hedge`);
          continue;
        }
        assert.ok(outcome instanceof Error, `${operation} returned a response without diagnostics`);
        assert.ok(sdkOwnFailure(outcome), `${operation} failed without diagnostics, not as a timeout or a batch error: ${String(outcome)}`);
      }
      if (mix.emulator === undefined && mix.policy === undefined) {
        assert.equal(arrivals.size, attempts.length, "without faults every attempt arrives");
        for (const { operation, outcome } of results) assert.ok(!(outcome instanceof Error), `${operation} failed without a fault: ${String(outcome)}`);
      }
    });
  }
});
