import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import nock from "nock";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../src/hedging/diagnostics.js";
import { masterKeyAuthorization, masterKeySigner } from "../../src/cosmos/masterKeySigner.js";

const eastUs = "https://acct-eastus.documents.azure.com";
const westUs = "https://acct-westus.documents.azure.com";
const key = Buffer.from("cosmos-hedging https test key").toString("base64");
const path = "/dbs/db/colls/items/docs/item-1";

// Importing nock intercepts every HTTP request of the process; only this file's tests may meet it.
nock.restore();

/**
 * The hedging client over core-rest-pipeline's default HTTPS transport, with
 * the regional hosts intercepted by nock at the socket level: the same code
 * path as a production account (https URLs, TLS agent options, real sockets
 * for the transport), which the plain-HTTP emulator cannot show.
 */
describe("hedging client over the default HTTPS transport", function () {
  before(function () {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });

  afterEach(function () {
    nock.abortPendingRequests();
    nock.cleanAll();
  });

  after(function () {
    nock.enableNetConnect();
    nock.restore();
  });

  it("hedges an https read to the other region, re-signed with a fresh date, and leaves the slow primary to drain", async function () {
    let hedgeAuthorization: string | undefined;
    let hedgeDate: string | undefined;
    nock(eastUs)
      .get(path)
      .delay(2000)
      .reply(200, { id: "item-1", region: "East US" });
    nock(westUs)
      .get(path)
      .reply(function () {
        hedgeAuthorization = this.req.headers["authorization"] as string | undefined;
        hedgeDate = this.req.headers["x-ms-date"] as string | undefined;
        return [200, { id: "item-1", region: "West US" }, { "x-ms-request-charge": "1", "x-ms-activity-id": "hedge" }];
      });

    const client = createHedgingHttpClient({ crossRegion: { threshold: 50 }, metadata: false, signer: masterKeySigner(key) });
    client.regions.setTopology({
      readRegions: [
        { name: "East US", endpoint: `${eastUs}:443/` },
        { name: "West US", endpoint: `${westUs}:443/` },
      ],
    });
    const staleDate = new Date(Date.now() - 60_000).toUTCString();
    const start = performance.now();
    const response = await client.sendRequest(
      createPipelineRequest({
        url: `${eastUs}${path}`,
        method: "GET",
        headers: createHttpHeaders({
          "x-ms-date": staleDate,
          authorization: masterKeyAuthorization(Buffer.from(key, "base64"), "GET", `${eastUs}${path}`, staleDate),
        }),
      }),
    );
    const ms = performance.now() - start;
    assert.equal(response.status, 200);
    assert.equal(JSON.parse(response.bodyAsText ?? "{}").region, "West US");
    assert.ok(ms < 1000, `the hedged read took ${ms.toFixed(0)} ms`);
    assert.equal(getHedgeDiagnostics(response)?.winningRegion, "West US");
    assert.ok(hedgeDate !== undefined && hedgeDate !== staleDate, "the hedge was signed with a fresh date");
    assert.equal(hedgeAuthorization, masterKeyAuthorization(Buffer.from(key, "base64"), "GET", `${westUs}${path}`, hedgeDate));
    assert.deepEqual(
      getHedgeDiagnostics(response)?.arms.map((arm) => [arm.region, arm.outcome]),
      [
        ["East US", "drained"],
        ["West US", "returned"],
      ],
    );
  });
});
