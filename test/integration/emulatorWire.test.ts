import assert from "node:assert/strict";
import http from "node:http";
import { ChangeFeedStartFrom } from "@azure/cosmos";
import { allowedClockSkewMs, signedHeaders } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { arrivalOf } from "../support/wire.js";

const preferredLocations = ["West US", "East US"];
const otherKey = Buffer.from("not the emulator's key").toString("base64");

/** A raw request on a fresh connection; resolves with the status, or `undefined` when the connection is reset. */
function rawRequest(url: string, method: string, headers: http.OutgoingHttpHeaders): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, agent: false, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    request.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" ? resolve(undefined) : reject(error)));
    request.end();
  });
}

describe("the emulator as the service sees the wire", function () {
  const fixture = useEmulator({ items: [{ id: "1", pk: "a", value: 1 }], preferredLocations });

  describe("master-key signatures", function () {
    it("accepts every request @azure/cosmos signs: account, metadata, point reads, queries, change feed and writes", async function () {
      const { container } = await fixture.client({ hedging: false });
      const { emulator } = fixture;
      await container.read();
      await container.item("1", "a").read();
      await container.items.query("SELECT * FROM c").fetchAll();
      await container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }).readNext();
      await container.items.upsert({ id: "signed", pk: "b" });
      await container.item("signed", "b").delete();
      const kinds = new Set(emulator.requests.map((request) => request.kind));
      for (const kind of ["accountRead", "collectionRead", "pointRead", "upsert", "delete"] as const) assert.ok(kinds.has(kind), `a ${kind} was sent`);
      assert.deepEqual(
        emulator.requests.filter((request) => request.authorization !== "valid").map((request) => `${request.method} ${request.path}: ${request.authorization}`),
        [],
      );
    });

    it("refuses with 401 a request that is unsigned, signed with another key, for another resource or verb, or with a date outside the skew", async function () {
      const { emulator } = fixture;
      const url = `${emulator.region("West US").endpoint}dbs/db/colls/items/docs/1`;
      const path = "/dbs/db/colls/items/docs/1";
      const fault = emulator.region("West US").addFault({ status: 503 });
      const now = Date.now();
      const valid = signedHeaders(emulator.key, "GET", path);
      const cases: Array<[string, http.OutgoingHttpHeaders, string]> = [
        ["no authorization", { "x-ms-date": valid["x-ms-date"] }, "missing"],
        ["another account's key", signedHeaders(otherKey, "GET", path), "badSignature"],
        ["another document's signature", signedHeaders(emulator.key, "GET", "/dbs/db/colls/items/docs/2"), "badSignature"],
        ["the feed's signature", signedHeaders(emulator.key, "GET", "/dbs/db/colls/items/docs"), "badSignature"],
        ["a POST's signature", signedHeaders(emulator.key, "POST", path), "badSignature"],
        ["a date changed after signing", { ...valid, "x-ms-date": new Date(now + 1000).toUTCString() }, "badSignature"],
        ["a date past the skew", signedHeaders(emulator.key, "GET", path, new Date(now - allowedClockSkewMs - 60_000)), "staleDate"],
        ["a date ahead of the skew", signedHeaders(emulator.key, "GET", path, new Date(now + allowedClockSkewMs + 60_000)), "staleDate"],
        ["no date", { authorization: valid.authorization }, "missingDate"],
        ["an AAD token", { authorization: encodeURIComponent("type=aad&ver=1.0&sig=eyJ0eXAi"), "x-ms-date": valid["x-ms-date"] }, "notMasterKey"],
        ["a broken escape", { authorization: "%E0%A4%A", "x-ms-date": valid["x-ms-date"] }, "malformed"],
      ];
      for (const [label, headers, verdict] of cases) {
        emulator.resetCounters();
        assert.equal(await rawRequest(url, "GET", headers), 401, label);
        assert.deepEqual(
          emulator.requests.map((request) => [request.authorization, request.status]),
          [[verdict, 401]],
          label,
        );
      }
      assert.equal(fault.applied, 0, "a refused request never reaches the fault rules");
      fault.remove();
      const partitionKey = { "x-ms-documentdb-partitionkey": '["a"]' };
      const withinSkew = signedHeaders(emulator.key, "GET", path, new Date(now - allowedClockSkewMs + 60_000));
      assert.equal(await rawRequest(url, "GET", { ...withinSkew, ...partitionKey }), 200, "a date 14 minutes old is within the skew");
      assert.equal(await rawRequest(url, "GET", { ...signedHeaders(emulator.key, "GET", path), ...partitionKey }), 200);
    });

    it("fails a CosmosClient that signs with another key", async function () {
      const { client } = await fixture.client({ hedging: false, key: otherKey });
      await assert.rejects(client.getDatabaseAccount(), (error: { code?: unknown }) => error.code === 401);
      assert.ok(fixture.emulator.requests.length > 0);
      assert.ok(fixture.emulator.requests.every((request) => request.authorization === "badSignature" && request.status === 401));
    });
  });

  describe("the record of each request", function () {
    it("names the region, the arrival, the end and the status of an answered request", async function () {
      const { container } = await fixture.client({ hedging: false, warmUp: { id: "1", pk: "a" } });
      const before = performance.now();
      await container.item("1", "a").read();
      await fixture.emulator.idle();
      const [read] = fixture.emulator.requests;
      assert.equal(read?.region, "West US");
      assert.equal(read?.kind, "pointRead");
      assert.equal(read?.status, 200);
      assert.equal(read?.cutByClient, false);
      assert.ok(read.at >= before && read.endedAt !== undefined && read.endedAt >= read.at);
    });

    it("marks a request whose client went away before the answer as cut, and stops waiting for it", async function () {
      const { emulator } = fixture;
      const { container } = await fixture.client({ hedging: false, warmUp: { id: "1", pk: "a" } });
      const delayMs = 10_000;
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs });
      const controller = new AbortController();
      const reading = container.item("1", "a").read({ abortSignal: controller.signal });
      const arrived = await arrivalOf(emulator, (request) => request.kind === "pointRead");
      controller.abort();
      await assert.rejects(reading, { name: "AbortError" });
      await emulator.idle();
      assert.equal(arrived.cutByClient, true);
      assert.equal(arrived.status, undefined);
      assert.ok(arrived.endedAt !== undefined && arrived.endedAt - arrived.at < delayMs, "idle() did not wait out the delay");
      assert.equal(emulator.count("pointRead"), 1);
    });

    it("does not count a reset the emulator made as cut by the client", async function () {
      const { emulator } = fixture;
      const path = "/dbs/db/colls/items/docs/1";
      emulator.region("West US").addFault({ operations: ["pointRead"], connectionReset: true, count: 1 });
      const url = new URL(path, emulator.region("West US").endpoint).href;
      assert.equal(await rawRequest(url, "GET", signedHeaders(emulator.key, "GET", path)), undefined);
      await emulator.idle();
      const [reset] = emulator.requests;
      assert.equal(reset?.cutByClient, false);
      assert.equal(reset?.status, undefined);
    });

    it("idle() waits for a delayed request to be answered", async function () {
      const { emulator } = fixture;
      const { container } = await fixture.client({ hedging: false, warmUp: { id: "1", pk: "a" } });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 150, count: 1 });
      const reading = container.item("1", "a").read();
      const arrived = await arrivalOf(emulator, (request) => request.kind === "pointRead");
      assert.equal(arrived.endedAt, undefined, "in flight");
      await emulator.idle();
      assert.equal(arrived.status, 200);
      assert.equal((await reading).statusCode, 200);
    });
  });
});
