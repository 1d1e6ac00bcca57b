import assert from "node:assert/strict";
import diagnosticsChannel from "node:diagnostics_channel";
import type { ClientRequest } from "node:http";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import nock from "nock";
import { createHedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { masterKeyAuthorization, masterKeySigner } from "../../src/cosmos/masterKeySigner.js";

const eastUs = "https://acct-eastus.documents.azure.com";
const westUs = "https://acct-westus.documents.azure.com";
const key = Buffer.from("cosmos-hedging https test key").toString("base64");
const path = "/dbs/db/colls/items/docs/item-1";

// Importing nock intercepts every HTTP request of the process; only this file's tests may meet it.
nock.restore();

/** What left the process through Node's HTTP client: one row per request, filled in as it ends. */
interface WireRequest {
  readonly host: string;
  readonly path: string;
  responded: boolean;
  /** The request's socket was destroyed with no response read: the connection was cut from the client's side. */
  cut: boolean;
  closed: boolean;
}

/** Watches every request Node's HTTP client starts (the transport's own `ClientRequest`s, under nock too) until `stop()`. */
function watchTheWire(): { readonly requests: WireRequest[]; closed(): Promise<void>; stop(): void } {
  const requests: WireRequest[] = [];
  const waiters: Array<() => void> = [];
  const onStart = (message: unknown): void => {
    const request = (message as { request: ClientRequest }).request;
    const row: WireRequest = { host: request.host, path: request.path, responded: false, cut: false, closed: false };
    requests.push(row);
    request.on("response", () => {
      row.responded = true;
    });
    request.on("close", () => {
      row.cut = !row.responded && request.destroyed;
      row.closed = true;
      if (requests.every((each) => each.closed)) for (const resolve of waiters.splice(0)) resolve();
    });
  };
  diagnosticsChannel.subscribe("http.client.request.start", onStart);
  return {
    requests,
    closed: () => (requests.every((each) => each.closed) ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
    stop: () => diagnosticsChannel.unsubscribe("http.client.request.start", onStart),
  };
}

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

    const wire = watchTheWire();
    const client = createHedgingHttpClient({ crossRegion: { threshold: 50 }, metadata: false, signer: masterKeySigner(key) });
    client.regions.setTopology({
      readRegions: [
        { name: "East US", endpoint: `${eastUs}:443/` },
        { name: "West US", endpoint: `${westUs}:443/` },
      ],
    });
    const staleDate = new Date(Date.now() - 60_000).toUTCString();
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
    await wire.closed();
    wire.stop();
    assert.equal(response.status, 200);
    assert.equal(JSON.parse(response.bodyAsText ?? "{}").region, "West US");
    assert.deepEqual(
      wire.requests.map(({ host, responded, cut }) => ({ host, responded, cut })),
      [
        { host: "acct-eastus.documents.azure.com", responded: true, cut: false },
        { host: "acct-westus.documents.azure.com", responded: true, cut: false },
      ],
      "the slow primary was left to answer (its connection kept for the pool); the hedge's was answered",
    );
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
