import assert from "node:assert/strict";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import { CosmosClient, DiagnosticNodeInternal, DiagnosticNodeType } from "@azure/cosmos";
import { keepAttemptContext, SdkBookkeeping } from "../../../src/cosmos/sdkBookkeeping.js";
import type { SdkAttempt } from "../../../src/cosmos/attemptHandoff.js";
import { takeHandedOver } from "../../../src/cosmos/attemptHandoff.js";
import { sdkRequestPlugin } from "../../../src/cosmos/sdkRequestPlugin.js";
import { linkAttempt } from "../../../src/diagnostics/dispatchRecording.js";
import { captureAzureLogs } from "../../support/logCapture.js";

/** The shape of @azure/cosmos 4.10.1's DiagnosticNodeInternal constructor: level, node type, parent. */
class FakeNode {
  constructor(
    readonly diagnosticLevel: unknown,
    readonly nodeType: string,
    readonly parent: unknown,
  ) {}
}

/** The shape of @azure/cosmos 4.10.1's GlobalEndpointManager, as far as a mark goes. */
class FakeEndpointManager {
  readonly marked: Array<{ node: unknown; endpoint: string }> = [];
  failWith: Error | undefined;
  constructor(readonly locations: Array<{ name: string; databaseAccountEndpoint: string }>) {}
  async getReadLocations(): Promise<ReadonlyArray<{ name: string; databaseAccountEndpoint: string }>> {
    return this.locations;
  }
  async markCurrentLocationUnavailableForRead(node: unknown, endpoint: string): Promise<void> {
    if (this.failWith !== undefined) throw this.failWith;
    this.marked.push({ node, endpoint });
  }
}

const account = (): FakeEndpointManager =>
  new FakeEndpointManager([
    { name: "West US", databaseAccountEndpoint: "https://account-westus.documents.azure.com:443/" },
    { name: "East US", databaseAccountEndpoint: "https://account-eastus.documents.azure.com:443/" },
  ]);

/** Lets the mark's promise chain run (it awaits the SDK twice). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("SdkBookkeeping", () => {
  it("marks a region by its name in the SDK's own read locations, with a fresh root node of the SDK's node class", async () => {
    const marks = new SdkBookkeeping();
    const manager = account();
    const operationNode = new FakeNode("info", "CLIENT_REQUEST_NODE", null);
    marks.seen(manager, operationNode);
    let unmarked = 0;
    assert.equal(marks.markForReads("westus", () => unmarked++), true, "a region named as the SDK lists it, spaced or not");
    await settle();
    assert.deepEqual(
      manager.marked.map(({ endpoint }) => endpoint),
      ["https://account-westus.documents.azure.com:443/"],
    );
    const node = manager.marked[0]!.node;
    assert.ok(node instanceof FakeNode && node !== operationNode, "not the finished operation's node");
    assert.deepEqual([node.diagnosticLevel, node.nodeType, node.parent], ["info", "CLIENT_REQUEST_NODE", null]);
    assert.equal(unmarked, 0);
  });

  it("marks nothing, and says so at once, before it knows the SDK's manager, or once two clients' managers share it", async () => {
    const marks = new SdkBookkeeping();
    assert.equal(
      marks.markForReads("West US", () => assert.fail("nothing was tried")),
      false,
    );
    marks.seen({ notAManager: true }, new FakeNode("info", "x", null));
    marks.seen(account(), { plainObject: true });
    assert.equal(
      marks.markForReads("West US", () => undefined),
      false,
      "neither a context without a manager nor a node without a class of its own is enough",
    );
    const first = account();
    marks.seen(first, new FakeNode("info", "x", null));
    marks.seen(undefined, new FakeNode("info", "x", null));
    assert.equal(
      marks.markForReads("West US", () => undefined),
      true,
      "a context without a manager says nothing of another client",
    );
    marks.seen(account(), new FakeNode("info", "x", null));
    assert.equal(
      marks.markForReads("West US", () => undefined),
      false,
      "which client's attempt was hidden is not known",
    );
    await settle();
    assert.equal(first.marked.length, 1, "only the mark made while one manager was known");
  });

  it("calls back once when the SDK cannot be told: no such region among its locations, or its mark fails; the warning names neither error text nor key", async () => {
    const marks = new SdkBookkeeping();
    const manager = account();
    marks.seen(manager, new FakeNode("info", "x", null));
    let unmarked = 0;
    assert.equal(
      marks.markForReads("North Europe", () => unmarked++),
      true,
    );
    await settle();
    assert.equal(unmarked, 1);
    manager.failWith = new Error("refresh failed for key=secret-key-text");
    const logs = captureAzureLogs("warning");
    try {
      marks.markForReads("West US", () => unmarked++);
      await settle();
    } finally {
      logs.restore();
    }
    assert.equal(unmarked, 2);
    const lines = logs.packageLines();
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0]!, /West US/);
    assert.doesNotMatch(lines[0]!, /secret-key-text/);
  });

  it("takes only what has the SDK's shape: a manager with both functions, a node of a class of its own; the same manager seen again is no second client", async () => {
    const node = new FakeNode("info", "x", null);
    const halfManager = { getReadLocations: async () => [] };
    const marks = new SdkBookkeeping();
    for (const [manager, diagnosticNode] of [
      [null, node],
      ["manager", node],
      [halfManager, node],
      [{ markCurrentLocationUnavailableForRead: async () => undefined }, node],
      [account(), null],
      [account(), "node"],
      [account(), {}],
      [account(), Object.create(null) as object],
    ] as const) {
      marks.seen(manager, diagnosticNode);
      assert.equal(
        marks.markForReads("West US", () => undefined),
        false,
        `${JSON.stringify(manager)} with ${JSON.stringify(diagnosticNode)}`,
      );
    }
    const manager = account();
    marks.seen(manager, node);
    marks.seen(manager, node);
    assert.equal(
      marks.markForReads("West US", () => undefined),
      true,
      "one client seen on every attempt makes no second client",
    );
    marks.seen(halfManager, node);
    assert.equal(
      marks.markForReads("West US", () => undefined),
      true,
      "nor does a value that is no manager",
    );
    await settle();
    assert.equal(manager.marked.length, 2);
  });

  it("marks through an SDK before 4.5.0, which lists its read locations as a field and has no getReadLocations", async () => {
    // @azure/cosmos 4.1 to 4.4's GlobalEndpointManager (hostile probe of 4.2.0 and 4.4.1: the region was never marked).
    const marked: string[] = [];
    const older = {
      readableLocations: [
        { name: "West US", databaseAccountEndpoint: "https://account-westus.documents.azure.com:443/" },
        { name: "East US", databaseAccountEndpoint: "https://account-eastus.documents.azure.com:443/" },
      ] as unknown,
      async markCurrentLocationUnavailableForRead(_node: unknown, endpoint: string): Promise<void> {
        marked.push(endpoint);
      },
    };
    const marks = new SdkBookkeeping();
    marks.seen(older, new FakeNode("info", "x", null));
    let unmarked = 0;
    assert.equal(
      marks.markForReads("westus", () => unmarked++),
      true,
    );
    await settle();
    assert.deepEqual(marked, ["https://account-westus.documents.azure.com:443/"]);
    older.readableLocations = "not a list any more";
    marks.markForReads("East US", () => unmarked++);
    await settle();
    assert.deepEqual([marked.length, unmarked], [1, 1], "a field that is no list marks nothing, and says so");
  });

  it("says at info what it told the SDK: each mark, and a partition the breaker moved, not a failure only counted", async () => {
    const marks = new SdkBookkeeping();
    marks.seen(account(), new FakeNode("info", "x", null));
    const moved = { tryPartitionLevelFailover: async () => true };
    const counted = { tryPartitionLevelFailover: async () => false };
    const context = { operationType: "read", resourceType: "docs", partitionKeyRangeId: "0", endpoint: "https://account-westus.documents.azure.com:443/" };
    const logs = captureAzureLogs("info");
    try {
      marks.markForReads("West US", () => undefined);
      marks.countFailure({ manager: counted, context }, () => undefined);
      await settle();
      assert.equal(logs.packageLines().length, 1, logs.packageLines().join("\n"));
      marks.countFailure({ manager: moved, context }, () => undefined);
      await settle();
    } finally {
      logs.restore();
    }
    const [marked, partition] = logs.packageLines();
    assert.match(marked ?? "", /endpoint discovery that West US is unavailable for reads/);
    assert.match(partition ?? "", /circuit breaker.*moved a partition off https:\/\/account-westus/);
  });

  it("is handed the SDK's manager and node by the request plugin on each attempt", async () => {
    const client = {};
    const marks = new SdkBookkeeping();
    const plugin = sdkRequestPlugin(client, () => true, undefined, marks);
    const manager = account();
    await plugin.plugin({ httpClient: client, headers: {}, globalEndpointManager: manager }, new FakeNode("info", "x", null), async () => "response");
    marks.markForReads("East US", () => assert.fail("marked"));
    await settle();
    assert.deepEqual(
      manager.marked.map(({ endpoint }) => endpoint),
      ["https://account-eastus.documents.azure.com:443/"],
    );
    const other = new SdkBookkeeping();
    await sdkRequestPlugin({}, () => true, undefined, other).plugin({ httpClient: client, headers: {}, globalEndpointManager: manager }, new FakeNode("info", "x", null), async () => "response");
    assert.equal(
      other.markForReads("East US", () => undefined),
      false,
      "the context of a client that does not send through the hedging client is not learned from",
    );
  });

  describe("the SDK's partition-level circuit breaker", () => {
    /** The shape of @azure/cosmos 4.10.1's GlobalPartitionEndpointManager, as far as counting a failure goes. */
    class FakePartitionManager {
      readonly told: Array<{ context: unknown; node: unknown }> = [];
      outcome: boolean | Error = false;
      async tryPartitionLevelFailover(context: unknown, node: unknown): Promise<boolean> {
        this.told.push({ context, node });
        if (this.outcome instanceof Error) throw this.outcome;
        return this.outcome;
      }
    }

    const contextOf = (manager: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      globalPartitionEndpointManager: manager,
      operationType: "read",
      resourceType: "docs",
      partitionKeyRangeId: "3",
      endpoint: "https://account-westus.documents.azure.com:443/",
      body: { large: "not copied" },
      ...extra,
    });

    it("copies what the SDK's bookkeeping reads from the context kept for the request, at the time it is asked: the client's managers, and the breaker's fields where all are there", () => {
      const bookkeeping = new SdkBookkeeping();
      const manager = new FakePartitionManager();
      const endpoints = account();
      const request = createPipelineRequest({ url: "https://account-westus.documents.azure.com/dbs/db/colls/c/docs/1" });
      assert.equal(bookkeeping.attemptOf(request), undefined);
      const context = contextOf(manager, { globalEndpointManager: endpoints });
      keepAttemptContext(request, context);
      const attempt = bookkeeping.attemptOf(request);
      assert.equal(attempt?.endpointManager, endpoints);
      assert.equal(attempt?.partition?.manager, manager);
      assert.deepEqual(attempt?.partition?.context, { operationType: "read", resourceType: "docs", partitionKeyRangeId: "3", endpoint: "https://account-westus.documents.azure.com:443/" });
      context.endpoint = "https://account-eastus.documents.azure.com:443/";
      assert.equal(attempt?.partition?.context.endpoint, "https://account-westus.documents.azure.com:443/", "a copy: the SDK may reuse its context");
      for (const broken of [
        contextOf({}),
        contextOf(null),
        contextOf("manager"),
        contextOf(manager, { partitionKeyRangeId: undefined }),
        contextOf(manager, { endpoint: 7 }),
        contextOf(manager, { operationType: undefined }),
        contextOf(manager, { resourceType: 3 }),
      ]) {
        const other = createPipelineRequest({ url: "https://account-westus.documents.azure.com/" });
        keepAttemptContext(other, broken);
        assert.deepEqual(bookkeeping.attemptOf(other), { endpointManager: undefined, partition: undefined }, JSON.stringify(broken));
      }
    });

    it("names the endpoints the breaker moved the request's partition off, whichever region the attempt went to", () => {
      const bookkeeping = new SdkBookkeeping();
      const westUs = "https://account-westus.documents.azure.com:443/";
      const eastUs = "https://account-eastus.documents.azure.com:443/";
      const northEurope = "https://account-northeurope.documents.azure.com:443/";
      // @azure/cosmos 4.10.1's PartitionKeyRangeFailoverInfo, by the partition key range id.
      const moves = new Map<string, { currentEndPoint: unknown; failedEndPoints: unknown }>();
      const manager = Object.assign(new FakePartitionManager(), { partitionKeyRangeToLocationForReadAndWrite: moves });
      const movedOff = (context: Record<string, unknown> | undefined): readonly string[] => {
        const request = createPipelineRequest({ url: `${eastUs}dbs/db/colls/c/docs/1` });
        if (context !== undefined) keepAttemptContext(request, context);
        return bookkeeping.partitionMovedOff(request);
      };
      const followed = contextOf(manager, { endpoint: eastUs });
      assert.deepEqual(movedOff(undefined), [], "no context kept");
      assert.deepEqual(movedOff(followed), [], "nothing counted for the partition");
      moves.set("3", { currentEndPoint: westUs, failedEndPoints: [] });
      assert.deepEqual(movedOff(contextOf(manager, { endpoint: westUs })), [], "failures counted, nothing moved");
      moves.set("3", { currentEndPoint: eastUs, failedEndPoints: [westUs] });
      assert.deepEqual(movedOff(followed), [westUs]);
      assert.deepEqual(movedOff(contextOf(manager, { endpoint: westUs })), [westUs], "the SDK's counts reset, its reads back on the region it moved off: the primary, which no race leaves out");
      // hostile review of 67689f7 (W2): a read sent to East US whose hedge came due after the breaker moved the partition on.
      moves.set("3", { currentEndPoint: northEurope, failedEndPoints: [westUs, eastUs] });
      assert.deepEqual(movedOff(followed), [westUs, eastUs], "moved on since the attempt went out");
      moves.set("3", { currentEndPoint: eastUs, failedEndPoints: [westUs] });
      assert.deepEqual(movedOff(contextOf(manager, { endpoint: eastUs, partitionKeyRangeId: "4" })), [], "another partition");
      moves.set("3", { currentEndPoint: northEurope, failedEndPoints: [westUs, eastUs, 7] });
      assert.deepEqual(movedOff(contextOf(manager, { endpoint: northEurope })), [westUs, eastUs], "every region it moved off, in order; what is no endpoint left out");
      for (const broken of [
        contextOf(new FakePartitionManager(), { endpoint: eastUs }),
        contextOf(Object.assign(new FakePartitionManager(), { partitionKeyRangeToLocationForReadAndWrite: {} }), { endpoint: eastUs }),
        contextOf(null, { endpoint: eastUs }),
        contextOf(manager, { endpoint: northEurope, partitionKeyRangeId: 3 }),
      ]) {
        assert.deepEqual(movedOff(broken), [], JSON.stringify(broken));
      }
      moves.set("3", { currentEndPoint: eastUs, failedEndPoints: "westus" });
      assert.deepEqual(movedOff(followed), [], "a list that is not one");
    });

    it("marks the region in the hidden attempt's own client, even with two clients on one hedging client", async () => {
      const bookkeeping = new SdkBookkeeping();
      const first = account();
      const second = account();
      bookkeeping.seen(first, new FakeNode("info", "x", null));
      bookkeeping.seen(second, new FakeNode("info", "x", null));
      assert.equal(
        bookkeeping.markForReads("West US", () => undefined),
        false,
        "two clients, no attempt to say which",
      );
      const request = createPipelineRequest({ url: "https://account-westus.documents.azure.com/" });
      keepAttemptContext(request, contextOf(new FakePartitionManager(), { globalEndpointManager: second }));
      assert.equal(
        bookkeeping.markForReads("West US", () => assert.fail("unmarked"), bookkeeping.attemptOf(request)),
        true,
      );
      await settle();
      assert.deepEqual([first.marked.length, second.marked.length], [0, 1]);
    });

    it("counts a failure with the SDK's own call and a fresh node, and says what the breaker did; a failing call is warned about without its text", async () => {
      const bookkeeping = new SdkBookkeeping();
      const manager = new FakePartitionManager();
      const request = createPipelineRequest({ url: "https://account-westus.documents.azure.com/" });
      keepAttemptContext(request, contextOf(manager));
      const attempt = bookkeeping.attemptOf(request)!.partition!;
      assert.equal(
        bookkeeping.countFailure(attempt, () => assert.fail("nothing to count with")),
        false,
        "no node class known yet",
      );
      bookkeeping.seen(account(), new FakeNode("info", "x", null));
      const outcomes: string[] = [];
      assert.equal(
        bookkeeping.countFailure(attempt, (outcome) => outcomes.push(outcome)),
        true,
      );
      await settle();
      manager.outcome = true;
      bookkeeping.countFailure(attempt, (outcome) => outcomes.push(outcome));
      await settle();
      manager.outcome = new Error("failover failed with key=secret-key-text");
      const logs = captureAzureLogs("warning");
      try {
        bookkeeping.countFailure(attempt, (outcome) => outcomes.push(outcome));
        await settle();
      } finally {
        logs.restore();
      }
      assert.deepEqual(outcomes, ["counted", "moved", "failed"]);
      assert.equal(manager.told.length, 3);
      assert.deepEqual(manager.told[0]!.context, attempt.context);
      assert.ok(manager.told[0]!.node instanceof FakeNode && manager.told[0]!.node !== manager.told[1]!.node, "a fresh node each time");
      assert.equal(logs.packageLines().length, 1);
      assert.match(logs.packageLines()[0]!, /partition-level circuit breaker/);
      assert.doesNotMatch(logs.packageLines()[0]!, /secret-key-text/);
    });

    it("is handed the SDK's request context with each attempt by the request plugin, only when the client is wired to the SDK's bookkeeping", async () => {
      const client = {};
      const context = { httpClient: client, headers: {}, plugins: [] as unknown[], ...contextOf(new FakePartitionManager()) };
      const handedBy = async (bookkeeping: SdkBookkeeping | undefined): Promise<SdkAttempt | undefined> => {
        let handed: SdkAttempt | undefined;
        await sdkRequestPlugin(client, () => true, undefined, bookkeeping).plugin(context, new FakeNode("info", "x", null), async () => {
          handed = takeHandedOver(client);
          return "response";
        });
        return handed;
      };
      assert.equal((await handedBy(new SdkBookkeeping()))?.context, context);
      assert.equal((await handedBy(undefined))?.context, undefined);
    });

    it("finds the context of an attempt sent through a pipeline of the SDK's own (Entra ID) by its operation, which the request plugin links it to", async () => {
      const bookkeeping = new SdkBookkeeping();
      const client = {};
      const westUs = "https://account-westus.documents.azure.com:443/";
      const manager = Object.assign(new FakePartitionManager(), { partitionKeyRangeToLocationForReadAndWrite: new Map([["3", { currentEndPoint: "https://account-eastus.documents.azure.com:443/", failedEndPoints: [westUs] }]]) });
      const context = { httpClient: client, headers: {} as Record<string, unknown>, plugins: [] as unknown[], pipeline: {}, ...contextOf(manager, { endpoint: "https://account-eastus.documents.azure.com:443/" }) };
      const request = createPipelineRequest({ url: "https://account-eastus.documents.azure.com/dbs/db/colls/c/docs/1" });
      await sdkRequestPlugin(client, () => true, undefined, bookkeeping).plugin(context, new FakeNode("info", "x", null), async () => {
        // What the SDK does after an await in its own pipeline: builds the request from the context's headers, and the
        // hedging client links it to its operation while it runs.
        for (const [name, value] of Object.entries(context.headers)) request.headers.set(name, String(value));
        assert.equal(bookkeeping.attemptOf(request), undefined, "not linked to its operation yet");
        assert.notEqual(linkAttempt(request), undefined);
        assert.equal(bookkeeping.attemptOf(request)?.partition?.manager, manager);
        assert.deepEqual(bookkeeping.partitionMovedOff(request), [westUs]);
        return "response";
      });
      // hostile review of fa91e7d: a response the caller keeps holds its operation's record, which held the context too.
      assert.equal(bookkeeping.attemptOf(request), undefined, "forgotten when its operation ended");
      const unwired = createPipelineRequest({ url: "https://account-eastus.documents.azure.com/dbs/db/colls/c/docs/1" });
      const other = { ...context, headers: {} as Record<string, unknown> };
      await sdkRequestPlugin(client, () => true, undefined, undefined).plugin(other, new FakeNode("info", "x", null), async () => {
        for (const [name, value] of Object.entries(other.headers)) unwired.headers.set(name, String(value));
        assert.notEqual(linkAttempt(unwired), undefined);
        return "response";
      });
      assert.equal(bookkeeping.attemptOf(unwired), undefined, "a client not wired to the SDK's bookkeeping keeps no context");
    });
  });

  // The SDK members it calls are @hidden in @azure/cosmos 4.10.1: a later SDK may drop or rename them. Each use falls
  // back to deferring hedging when they are missing; this says when the installed SDK no longer has them.
  it("finds what it calls in the installed @azure/cosmos: the managers' members, the breaker's moves and the diagnostics node's constructor", async () => {
    const client = new CosmosClient({
      endpoint: "https://account.documents.azure.com:443/",
      key: Buffer.alloc(64, 7).toString("base64"),
      connectionPolicy: { enablePartitionLevelCircuitBreaker: true, enableBackgroundEndpointRefreshing: false },
    });
    try {
      const { globalEndpointManager, globalPartitionEndpointManager } = (client as unknown as { clientContext: Record<string, unknown> }).clientContext;
      const marks = new SdkBookkeeping();
      const node = new DiagnosticNodeInternal(...([undefined, DiagnosticNodeType.CLIENT_REQUEST_NODE, null] as unknown as ConstructorParameters<typeof DiagnosticNodeInternal>));
      marks.seen(globalEndpointManager, node);
      const request = createPipelineRequest({ url: "https://account-westus.documents.azure.com/" });
      keepAttemptContext(request, { globalEndpointManager, globalPartitionEndpointManager, operationType: "read", resourceType: "docs", partitionKeyRangeId: "0", endpoint: "https://account-westus.documents.azure.com:443/" });
      const facts = marks.attemptOf(request);
      assert.equal(facts?.endpointManager, globalEndpointManager, "GlobalEndpointManager.getReadLocations and markCurrentLocationUnavailableForRead");
      assert.equal(facts?.partition?.manager, globalPartitionEndpointManager, "GlobalPartitionEndpointManager.tryPartitionLevelFailover");
      assert.equal(
        marks.markForReads("West US", () => undefined, { endpointManager: undefined, partition: undefined }),
        true,
        "a node of DiagnosticNodeInternal's class can be made",
      );
      // The breaker's own move, as its retry policies make it after enough counted failures.
      const moves = (globalPartitionEndpointManager as { partitionKeyRangeToLocationForReadAndWrite: Map<string, unknown> }).partitionKeyRangeToLocationForReadAndWrite;
      assert.ok(moves instanceof Map, "GlobalPartitionEndpointManager.partitionKeyRangeToLocationForReadAndWrite");
      const moved = await (globalPartitionEndpointManager as { tryAddOrUpdatePartitionFailoverInfoAndMoveToNextLocation(...args: unknown[]): Promise<boolean> }).tryAddOrUpdatePartitionFailoverInfoAndMoveToNextLocation(
        "0",
        "https://account-westus.documents.azure.com:443/",
        ["https://account-westus.documents.azure.com:443/", "https://account-eastus.documents.azure.com:443/"],
        moves,
        node,
      );
      assert.equal(moved, true);
      const followed = createPipelineRequest({ url: "https://account-eastus.documents.azure.com/" });
      keepAttemptContext(followed, { globalEndpointManager, globalPartitionEndpointManager, operationType: "read", resourceType: "docs", partitionKeyRangeId: "0", endpoint: "https://account-eastus.documents.azure.com:443/" });
      assert.deepEqual(marks.partitionMovedOff(followed), ["https://account-westus.documents.azure.com:443/"], "PartitionKeyRangeFailoverInfo.currentEndPoint and failedEndPoints");
    } finally {
      client.dispose();
    }
  });
});
