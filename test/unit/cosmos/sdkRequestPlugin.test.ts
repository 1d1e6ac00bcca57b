import assert from "node:assert/strict";
import { namesPackageHeader, sdkRequestPlugin } from "../../../src/cosmos/sdkRequestPlugin.js";
import { pluginHeaderValue, requestControlHeaders, sdkExclusionsRefused } from "../../../src/cosmos/headers.js";
import { adoptSdkOptions, requestControlsOf } from "../../../src/request/requestControls.js";
import type { SdkAttempt } from "../../../src/cosmos/attemptHandoff.js";
import { takeHandedOver } from "../../../src/cosmos/attemptHandoff.js";
import { OperationDetection } from "../../../src/diagnostics/detection.js";
import { linkAttempt, nameOperation, operationHeaderName } from "../../../src/diagnostics/dispatchRecording.js";
import { pointRead, westUs } from "../../support/hedgingFixtures.js";
import { captureAzureLogs } from "../../support/logCapture.js";

describe("trustworthiness: what users hit", function () {
  describe("the @azure/cosmos request plugin", function () {
    /** Runs the plugin as @azure/cosmos does without a pipeline of its own: the hedging client is called in the same run. */
    async function handedOver(plugin: ReturnType<typeof sdkRequestPlugin>, client: object, context: Record<string, unknown>): Promise<SdkAttempt | undefined> {
      let handed: SdkAttempt | undefined;
      // The plugin last of the client's, as withHedging leaves it, unless the context says otherwise.
      await plugin.plugin({ plugins: [plugin], ...context, httpClient: client }, undefined, async () => {
        handed = takeHandedOver(client);
        return "response";
      });
      return handed;
    }

    it("marks an attempt plain only while it asks nothing of the client, asking on every attempt (a header of this package's added to the client's defaultHeaders later counts)", async () => {
      const client = {};
      const defaultHeaders: Record<string, string> = { "x-custom": "1" };
      const plugin = sdkRequestPlugin(client, () => !namesPackageHeader(defaultHeaders));
      const headers = {};
      nameOperation(headers, new OperationDetection());
      const point = { headers, options: {}, resourceType: "docs", operationType: "read", method: "GET" };
      const first = await handedOver(plugin, client, point);
      assert.equal(first?.plain, true);
      assert.equal(first?.kind, "pointRead", "the SDK's context says what it is");
      defaultHeaders["X-Cosmos-Hedging"] = "off";
      assert.equal((await handedOver(plugin, client, point))?.plain, false, "a header of this package's, in any case");
      delete defaultHeaders["X-Cosmos-Hedging"];
      assert.equal((await handedOver(plugin, client, { ...point, options: { excludedLocations: ["West US"] } }))?.plain, false);
      assert.equal((await handedOver(plugin, client, { ...point, options: { initialHeaders: { "x-cosmos-hedging-region": '"West US"' } } }))?.plain, false);
      assert.equal((await handedOver(plugin, client, { ...point, retryCount: Number.NaN }))?.plain, false, "a retry of the SDK's");
      const query = await handedOver(plugin, client, { ...point, operationType: "query", method: "POST" });
      assert.equal(query?.plain, true);
      assert.equal(query?.kind, undefined, "anything but a point read is classified by its path");
      assert.equal((await handedOver(sdkRequestPlugin(client), client, point))?.plain, false, "a client with plugins of the user's");
    });

    it("hands over the endpoint the SDK builds a plain attempt's URL from, and none with an attempt that is not plain or an endpoint that is not a string", async () => {
      const client = {};
      const plugin = sdkRequestPlugin(client, () => true);
      const headers = {};
      nameOperation(headers, new OperationDetection());
      const endpoint = "https://acct-westus.documents.azure.com:443/";
      const point = { headers, options: {}, resourceType: "docs", operationType: "read", method: "GET", endpoint };
      assert.equal((await handedOver(plugin, client, point))?.endpoint, endpoint);
      assert.equal((await handedOver(plugin, client, { ...point, retryCount: Number.NaN }))?.endpoint, undefined, "a retry goes the full way, by its URL");
      assert.equal((await handedOver(plugin, client, { ...point, endpoint: new URL(endpoint) }))?.endpoint, undefined);
    });

    it("marks no attempt plain while a plugin of the user's runs after it (appended to the list withHedging returns), which may change the context the SDK builds the request from", async () => {
      const client = {};
      const plugin = sdkRequestPlugin(client, () => true);
      const headers = {};
      nameOperation(headers, new OperationDetection());
      const point = { headers, options: {}, resourceType: "docs", operationType: "read", method: "GET", endpoint: "https://acct-westus.documents.azure.com:443/" };
      const appended = { on: "request", plugin: (context: unknown, _node: unknown, next: (context: unknown) => Promise<unknown>) => next(context) };
      assert.equal((await handedOver(plugin, client, point))?.plain, true);
      const after = await handedOver(plugin, client, { ...point, plugins: [plugin, appended] });
      assert.equal(after?.plain, false);
      assert.equal(after?.endpoint, undefined);
      assert.equal((await handedOver(plugin, client, { ...point, plugins: [appended, plugin] }))?.plain, true, "one before it is withHedging's to know of");
      assert.equal((await handedOver(plugin, client, { ...point, plugins: undefined }))?.plain, false, "no list: nothing can be told");
    });

    it("hands the SDK's excludedLocations and retry marker to the hedging client it calls in the same run, and writes no header", async function () {
      const client = {};
      const plugin = sdkRequestPlugin(client);
      const headers: Record<string, unknown> = {};
      const excludedLocations = ["East US", "Zürich"];
      const handed = await handedOver(plugin, client, { headers, options: { excludedLocations } });
      assert.ok(handed !== undefined);
      assert.deepEqual(handed.sdkExcluded, ["East US", "Zürich"]);
      excludedLocations.push("West US");
      assert.deepEqual(handed.sdkExcluded, ["East US", "Zürich"], "a copy, not the caller's array");
      assert.equal(handed.sdkRetry, false, "a first attempt is no retry");
      assert.deepEqual(Object.keys(headers), [], "nothing for the SDK to copy into the request");
      assert.equal(takeHandedOver(client), undefined, "released once the SDK's call returned");

      const request = pointRead(westUs);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, '["North Europe"]');
      const controls = adoptSdkOptions(request, handed.sdkExcluded, handed.sdkRetry);
      assert.deepEqual(controls.excludedRegions, ["East US", "Zürich"], "the plugin's word, not a header pretending to be it");
      assert.equal(controls.sdkOptionsKnown, true);
      assert.equal(request.headers.has(requestControlHeaders.sdkExcludedRegions), false, "never reaches the wire");
      assert.equal(requestControlsOf(request), controls);

      // What @azure/cosmos 4.10.1 holds on a retry: a field it never set, incremented.
      for (const retryCount of [2, Number.NaN]) assert.equal((await handedOver(plugin, client, { headers: {}, retryCount }))?.sdkRetry, true);
      assert.deepEqual((await handedOver(plugin, client, { headers: {} }))?.sdkExcluded, []);
      assert.equal((await handedOver(plugin, {}, { headers: {} })), undefined, "another client takes nothing (it is not the one the plugin hedges for)");
    });

    it("leaves out the holes of a sparse excludedLocations, as the SDK's own reading of it does, rather than handing on undefined names", async function () {
      const client = {};
      const sparse: string[] = [];
      sparse[1] = "East US";
      const handed = await handedOver(sdkRequestPlugin(client), client, { headers: {}, options: { excludedLocations: sparse } });
      assert.deepEqual(handed?.sdkExcluded, ["East US"]);
    });

    it("reads a list with Array.prototype's own every and filter, as the SDK's map reads it, not the list's overrides", async function () {
      const client = {};
      // A list whose own every says yes and whose own filter keeps nothing.
      const loud = (names: unknown[]): unknown[] => Object.assign([...names], { every: () => true, filter: () => [] });
      const handed = await handedOver(sdkRequestPlugin(client), client, { headers: {}, options: { excludedLocations: loud(["East US", 5]) } });
      assert.equal(handed?.sdkExcluded, sdkExclusionsRefused.notRegionNames, "its every does not hide an entry that is not a name");
      const kept = await handedOver(sdkRequestPlugin(client), client, { headers: {}, options: { excludedLocations: loud(["East US"]) } });
      assert.deepEqual(kept?.sdkExcluded, ["East US"], "nor does its filter drop the names");
    });

    it("writes the SDK's options and the operation's id in headers when the SDK calls the client through a pipeline of its own (AAD)", async function () {
      const client = {};
      const plugin = sdkRequestPlugin(client);
      const headers: Record<string, unknown> = {};
      const operation = new OperationDetection();
      nameOperation(headers, operation);
      await plugin.plugin({ headers, options: { excludedLocations: ["East US", "Zürich"] }, httpClient: client, pipeline: {} }, undefined, async () => {
        assert.equal(takeHandedOver(client), undefined, "nothing handed over");
        return "response";
      });
      assert.equal(headers[requestControlHeaders.sdkExcludedRegions], pluginHeaderValue('["East US","Z\\u00fcrich"]'));
      assert.equal(headers[requestControlHeaders.sdkRetry], undefined, "a first attempt carries no retry marker");
      const request = pointRead(westUs);
      for (const name of [requestControlHeaders.sdkExcludedRegions, operationHeaderName]) request.headers.set(name, String(headers[name]));
      const controls = requestControlsOf(request);
      assert.deepEqual(controls.excludedRegions, ["East US", "Zürich"]);
      assert.equal(controls.sdkOptionsKnown, true);
      assert.equal(request.headers.has(requestControlHeaders.sdkExcludedRegions), false, "never reaches the wire");
      assert.equal(linkAttempt(request)?.operation, operation, "the attempt links to its operation by the id");
      assert.equal(request.headers.has(operationHeaderName), false);

      const retried: Record<string, unknown> = {};
      await plugin.plugin({ headers: retried, retryCount: Number.NaN, httpClient: client, pipeline: {} }, undefined, async () => undefined);
      assert.equal(retried[requestControlHeaders.sdkRetry], pluginHeaderValue("retry"));
      const marked = pointRead(westUs);
      marked.headers.set(requestControlHeaders.sdkExcludedRegions, pluginHeaderValue("[]"));
      marked.headers.set(requestControlHeaders.sdkRetry, pluginHeaderValue("retry"));
      assert.equal(requestControlsOf(marked).sdkRetry, true);
      assert.equal(marked.headers.has(requestControlHeaders.sdkRetry), false);
    });

    it("falls back to headers, with one warning, once the SDK did not call the client in the same run (a later SDK that awaits on the way)", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const client = {};
        const plugin = sdkRequestPlugin(client);
        const headers: Record<string, unknown> = {};
        for (let i = 0; i < 3; i++) await plugin.plugin({ headers, httpClient: client }, undefined, async () => "not sent yet");
        assert.equal(takeHandedOver(client), undefined, "nothing stays held for a later request");
        assert.equal(headers[requestControlHeaders.sdkExcludedRegions], pluginHeaderValue("[]"), "the attempts after the first carry the options in headers");
        const warnings = logs.packageLines().filter((line) => line.includes("did not hand its request to the hedging httpClient"));
        assert.equal(warnings.length, 1, logs.packageLines().join("\n"));
      } finally {
        logs.restore();
      }
    });

    for (const [what, excludedLocations, reason] of [
      ["thousands of long names", Array.from({ length: 5000 }, (_, i) => `${"region".repeat(4000)}-${i}`), "it lists more than 256 regions"],
      ["a name past 128 characters", ["East US", "x".repeat(25_000)], "an entry is not a region name"],
      ["an entry that is no string", ["East US", 7], "an entry is not a region name"],
    ] as const) {
      it(`refuses excludedLocations with ${what} before copying them: the request is sent unhedged, with one warning saying why`, async function () {
        const logs = captureAzureLogs("warning");
        try {
          const client = {};
          const handed = await handedOver(sdkRequestPlugin(client), client, { headers: {}, options: { excludedLocations } });
          assert.equal(typeof handed?.sdkExcluded, "string");
          assert.ok(String(handed?.sdkExcluded).length < 64, "a short marker, not the list copied");
          assert.equal(adoptSdkOptions(pointRead(westUs), handed!.sdkExcluded, false).sdkOptionsKnown, false, "unreadable: the request goes where the SDK sent it, unhedged");
          const headers: Record<string, unknown> = {};
          await sdkRequestPlugin(client).plugin({ headers, options: { excludedLocations }, httpClient: client, pipeline: {} }, undefined, async () => undefined);
          const written = String(headers[requestControlHeaders.sdkExcludedRegions]);
          assert.ok(written.length < 64, `a short marker in the header too, not the list serialized (${written.length} characters)`);
          const request = pointRead(westUs);
          request.headers.set(requestControlHeaders.sdkExcludedRegions, written);
          assert.equal(requestControlsOf(request).sdkOptionsKnown, false);
          assert.ok(logs.packageLines().some((line) => line.includes(`excludedLocations cannot be read (${reason})`)), logs.packageLines().join("\n"));
        } finally {
          logs.restore();
        }
      });
    }

    it("warns once when the SDK does not send through the hedging httpClient (an SDK before 4.1.0 ignores the option)", async function () {
      const logs = captureAzureLogs("warning");
      try {
        const plugin = sdkRequestPlugin({});
        const headers: Record<string, unknown> = {};
        for (let i = 0; i < 3; i++) await plugin.plugin({ headers, options: { excludedLocations: ["East US"] } }, undefined, async () => undefined);
        assert.deepEqual(Object.keys(headers), [], "nothing written: no hedging client would remove it before the wire");
        const warnings = logs.packageLines().filter((line) => line.includes("does not send its requests through the hedging httpClient"));
        assert.equal(warnings.length, 1);
      } finally {
        logs.restore();
      }
    });
  });
});
