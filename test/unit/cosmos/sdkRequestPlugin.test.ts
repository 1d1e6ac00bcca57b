import assert from "node:assert/strict";
import { sdkRequestPlugin } from "../../../src/cosmos/sdkRequestPlugin.js";
import { requestControlHeaders } from "../../../src/cosmos/headers.js";
import { requestControlsOf } from "../../../src/request/requestControls.js";
import { pointRead, westUs } from "../../support/hedgingFixtures.js";
import { captureAzureLogs } from "../../support/logCapture.js";

describe("trustworthiness: what users hit", function () {
  describe("the @azure/cosmos request plugin", function () {
    it("copies the SDK's excludedLocations into the control header, an empty list when there are none", async function () {
      const client = {};
      const plugin = sdkRequestPlugin(client);
      const headers: Record<string, unknown> = {};
      let passed: unknown;
      await plugin.plugin({ headers, options: { excludedLocations: ["East US", "Zürich"] }, httpClient: client }, undefined, async (context) => {
        passed = context;
        return "response";
      });
      assert.equal(headers[requestControlHeaders.sdkExcludedRegions], '["East US","Z\\u00fcrich"]');
      const request = pointRead(westUs);
      request.headers.set(requestControlHeaders.sdkExcludedRegions, String(headers[requestControlHeaders.sdkExcludedRegions]));
      const controls = requestControlsOf(request);
      assert.deepEqual(controls.excludedRegions, ["East US", "Zürich"]);
      assert.equal(controls.sdkOptionsKnown, true);
      assert.equal(request.headers.has(requestControlHeaders.sdkExcludedRegions), false, "never reaches the wire");
      assert.ok(passed !== undefined);

      assert.equal(headers[requestControlHeaders.sdkRetry], undefined, "a first attempt carries no retry marker");
      const retried: Record<string, unknown> = {};
      await plugin.plugin({ headers: retried, retryCount: 2, httpClient: client }, undefined, async () => undefined);
      assert.equal(retried[requestControlHeaders.sdkRetry], "2");
      // What @azure/cosmos 4.10.1 holds on a retry: a field it never set, incremented.
      const sdkRetried: Record<string, unknown> = {};
      await plugin.plugin({ headers: sdkRetried, retryCount: Number.NaN, httpClient: client }, undefined, async () => undefined);
      assert.equal(sdkRetried[requestControlHeaders.sdkRetry], "retry");
      const marked = pointRead(westUs);
      marked.headers.set(requestControlHeaders.sdkExcludedRegions, "[]");
      marked.headers.set(requestControlHeaders.sdkRetry, "2");
      assert.equal(requestControlsOf(marked).sdkRetry, true);
      assert.equal(marked.headers.has(requestControlHeaders.sdkRetry), false);

      const bare: Record<string, unknown> = {};
      await plugin.plugin({ headers: bare, httpClient: client }, undefined, async () => undefined);
      assert.equal(bare[requestControlHeaders.sdkExcludedRegions], "[]");
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
          const headers: Record<string, unknown> = {};
          await sdkRequestPlugin(client).plugin({ headers, options: { excludedLocations }, httpClient: client }, undefined, async () => undefined);
          const written = String(headers[requestControlHeaders.sdkExcludedRegions]);
          assert.ok(written.length < 64, `a short marker, not the list serialized (${written.length} characters)`);
          const request = pointRead(westUs);
          request.headers.set(requestControlHeaders.sdkExcludedRegions, written);
          assert.equal(requestControlsOf(request).sdkOptionsKnown, false, "unreadable: the request goes where the SDK sent it, unhedged");
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
        for (let i = 0; i < 3; i++) await plugin.plugin({ headers: {} }, undefined, async () => undefined);
        const warnings = logs.packageLines().filter((line) => line.includes("does not send its requests through the hedging httpClient"));
        assert.equal(warnings.length, 1);
      } finally {
        logs.restore();
      }
    });
  });
});
