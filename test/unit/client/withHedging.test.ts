import assert from "node:assert/strict";
import { withHedging } from "../../../src/client/withHedging.js";

const endpoint = "https://acct.documents.azure.com:443/";

describe("withHedging", function () {
  it("takes the SDK's own preferredLocations without their holes, as plain routes by them, and refuses a hole in its own region lists", function () {
    const sparse = ["West US", "East US"];
    sparse.length = 3;
    const options = withHedging({ endpoint: "https://acct.documents.azure.com", connectionPolicy: { preferredLocations: sparse } });
    assert.deepEqual((options.httpClient as unknown as { regions: { preferredRegions: readonly string[] } }).regions.preferredRegions, ["West US", "East US"]);
    assert.throws(() => withHedging({ endpoint: "https://acct.documents.azure.com" }, { preferredRegions: sparse }), /preferredRegions\[2\]/);
  });

  describe("a fixed threshold checked against the SDK's per-attempt timeout", function () {
    for (const option of ["enablePartitionLevelCircuitBreaker", "enablePartitionLevelFailover"] as const) {
      it(`refuses a threshold at or above the 2000 ms the SDK gives a read's attempt with ${option}, naming both`, function () {
        assert.throws(
          () => withHedging({ endpoint, connectionPolicy: { [option]: true, requestTimeout: 5000 } }, { crossRegion: { threshold: 2500 } }),
          {
            name: "RangeError",
            message: `crossRegion.threshold must be below 2000 ms, the per-attempt timeout @azure/cosmos applies to reads with connectionPolicy.${option} on; got 2500.`,
          },
        );
        assert.throws(() => withHedging({ endpoint, connectionPolicy: { [option]: true } }, { crossRegion: { threshold: 2000 } }), /below 2000 ms/);
      });
    }

    it("takes a shorter requestTimeout as the bound, and accepts a threshold below it", function () {
      assert.throws(
        () => withHedging({ endpoint, connectionPolicy: { enablePartitionLevelCircuitBreaker: true, requestTimeout: 1200 } }, { crossRegion: { threshold: 1500 } }),
        /must be below 1200 ms/,
      );
      const options = withHedging({ endpoint, connectionPolicy: { enablePartitionLevelCircuitBreaker: true, requestTimeout: 5000 } }, { crossRegion: { threshold: 1500 } });
      assert.equal(typeof options.httpClient.sendRequest, "function");
    });

    // Found by a hostile review (helper-36): an adaptive floor the SDK always cuts short was accepted, and never hedged.
    it("refuses an adaptive threshold's floor at or above that timeout, naming it, and accepts a ceiling above it (the learned thresholds may still be below)", function () {
      assert.throws(
        () =>
          withHedging(
            { endpoint, connectionPolicy: { enablePartitionLevelCircuitBreaker: true } },
            { crossRegion: { threshold: { mode: "adaptive", floor: 2500, ceiling: 3000 } } },
          ),
        {
          name: "RangeError",
          message:
            "crossRegion.threshold.floor must be below 2000 ms, the per-attempt timeout @azure/cosmos applies to reads with connectionPolicy.enablePartitionLevelCircuitBreaker on; got 2500.",
        },
      );
      const options = withHedging(
        { endpoint, connectionPolicy: { enablePartitionLevelCircuitBreaker: true } },
        { crossRegion: { threshold: { mode: "adaptive", floor: 5, ceiling: 3000 } } },
      );
      assert.equal(typeof options.httpClient.sendRequest, "function");
    });

    it("leaves a threshold above 2000 ms alone when neither partition-level mode is on", function () {
      const options = withHedging({ endpoint, connectionPolicy: { requestTimeout: 5000 } }, { crossRegion: { threshold: 2500 } });
      assert.equal(typeof options.httpClient.sendRequest, "function");
    });

    it("reads a getter threshold once: the value checked is the value in force", function () {
      let reads = 0;
      const crossRegion = {
        get threshold(): number {
          reads += 1;
          return reads === 1 ? 1500 : 2500;
        },
      };
      withHedging({ endpoint, connectionPolicy: { enablePartitionLevelCircuitBreaker: true } }, { crossRegion });
      assert.equal(reads, 1);
    });
  });
});

describe("trustworthiness: what users hit", function () {
  describe("withHedging's connectionPolicy", function () {
    it("names the SDK option the caller wrote when its requestTimeout is bad, not the policy option it feeds", function () {
      assert.throws(
        () => withHedging({ endpoint: "https://acct.documents.azure.com/", connectionPolicy: { requestTimeout: -1 } }),
        /^RangeError: connectionPolicy\.requestTimeout must be a finite number of milliseconds above 0 and below 2147483647; got -1\.$/,
      );
    });
  });
});
