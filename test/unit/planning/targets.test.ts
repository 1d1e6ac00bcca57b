import assert from "node:assert/strict";
import { sameScheme } from "../../../src/planning/targets.js";
import { eastUs } from "../../support/hedgingFixtures.js";

describe("sameScheme at its edges", () => {
  it("a request URL without a scheme matches no region's scheme", () => {
    assert.equal(sameScheme("dbs/db/colls/c/docs/1", eastUs), false);
    assert.equal(sameScheme("https://acct-eastus.documents.azure.com/dbs/db", eastUs), true);
  });
});

describe("sameScheme", () => {
  it("matches a scheme spelt in any case, on the request's side and on the endpoint's", () => {
    const shouting = { name: "East US", endpoint: "HTTPS://ACCT-EASTUS.DOCUMENTS.AZURE.COM:443/" };
    assert.equal(sameScheme("https://acct-eastus.documents.azure.com/dbs/db", shouting), true);
    assert.equal(sameScheme("HTTPS://acct-eastus.documents.azure.com/dbs/db", eastUs), true);
    assert.equal(sameScheme("http://acct-eastus.documents.azure.com/dbs/db", shouting), false);
    assert.equal(sameScheme("http://localhost:8081/dbs/db", eastUs), false, "never from https to http or back");
  });
});
