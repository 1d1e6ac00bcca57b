import assert from "node:assert/strict";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../../src/client/withHedging.js";

describe("trustworthiness: what users hit", function () {
  describe("a hedging client wrapped in another", function () {
    it("is refused: withHedging applied twice would race every arm again", function () {
      const once = withHedging({ endpoint: "https://acct.documents.azure.com/", key: Buffer.from("k").toString("base64") });
      assert.throws(() => withHedging(once), /^TypeError: httpClient is already a hedging client/);
      assert.throws(() => createHedgingHttpClient({ httpClient: once.httpClient }), /^TypeError: httpClient is already a hedging client/);
    });
  });
});
