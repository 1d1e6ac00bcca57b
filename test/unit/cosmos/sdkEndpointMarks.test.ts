import assert from "node:assert/strict";
import { SdkEndpointMarks } from "../../../src/cosmos/sdkEndpointMarks.js";
import { sdkRequestPlugin } from "../../../src/cosmos/sdkRequestPlugin.js";
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

describe("SdkEndpointMarks", () => {
  it("marks a region by its name in the SDK's own read locations, with a fresh root node of the SDK's node class", async () => {
    const marks = new SdkEndpointMarks();
    const manager = account();
    const operationNode = new FakeNode("info", "CLIENT_REQUEST_NODE", null);
    marks.seen(manager, operationNode);
    let unmarked = 0;
    assert.equal(
      marks.markForReads("westus", () => unmarked++),
      true,
    );
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
    const marks = new SdkEndpointMarks();
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
    const marks = new SdkEndpointMarks();
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

  it("is handed the SDK's manager and node by the request plugin on each attempt", async () => {
    const client = {};
    const marks = new SdkEndpointMarks();
    const plugin = sdkRequestPlugin(client, () => true, undefined, marks);
    const manager = account();
    await plugin.plugin({ httpClient: client, headers: {}, globalEndpointManager: manager }, new FakeNode("info", "x", null), async () => "response");
    marks.markForReads("East US", () => assert.fail("marked"));
    await settle();
    assert.deepEqual(
      manager.marked.map(({ endpoint }) => endpoint),
      ["https://account-eastus.documents.azure.com:443/"],
    );
    const other = new SdkEndpointMarks();
    await sdkRequestPlugin({}, () => true, undefined, other).plugin({ httpClient: client, headers: {}, globalEndpointManager: manager }, new FakeNode("info", "x", null), async () => "response");
    assert.equal(
      other.markForReads("East US", () => undefined),
      false,
      "the context of a client that does not send through the hedging client is not learned from",
    );
  });
});
