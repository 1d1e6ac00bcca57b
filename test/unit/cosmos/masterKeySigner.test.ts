import assert from "node:assert/strict";
import { HTTPMethod, ResourceType, setAuthorizationTokenHeaderUsingMasterKey } from "@azure/cosmos";
import type { CosmosHeaders } from "@azure/cosmos";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import type { HttpMethods } from "@azure/core-rest-pipeline";
import sinon from "sinon";
import { masterKeyAuthorization, masterKeySigner, signedResource } from "../../../src/cosmos/masterKeySigner.js";
import { makeRequest } from "../../support/requests.js";

const key = Buffer.from("a fixed test key of the account, 64 bytes long when decoded.....").toString("base64");
const origin = "https://acct-westus.documents.azure.com:443";
const fixedDate = Date.UTC(2024, 4, 1, 12, 30, 15);

/** The headers `@azure/cosmos` itself produces for a master-key request at the current (fake) time. */
async function cosmosHeaders(verb: HTTPMethod, resourceId: string, resourceType: ResourceType): Promise<CosmosHeaders> {
  const headers: CosmosHeaders = {};
  await setAuthorizationTokenHeaderUsingMasterKey(verb, resourceId, resourceType, headers, key);
  return headers;
}

interface SigningCase {
  name: string;
  method: HttpMethods;
  path: string;
  resourceId: string;
  resourceType: ResourceType;
}

const signingCases: SigningCase[] = [
  { name: "GET account root", method: "GET", path: "/", resourceId: "", resourceType: ResourceType.none },
  { name: "GET database", method: "GET", path: "/dbs/db", resourceId: "dbs/db", resourceType: ResourceType.database },
  { name: "GET colls feed", method: "GET", path: "/dbs/db/colls", resourceId: "dbs/db", resourceType: ResourceType.container },
  { name: "GET collection", method: "GET", path: "/dbs/db/colls/items", resourceId: "dbs/db/colls/items", resourceType: ResourceType.container },
  { name: "GET pkranges", method: "GET", path: "/dbs/db/colls/items/pkranges", resourceId: "dbs/db/colls/items", resourceType: ResourceType.pkranges },
  { name: "GET doc", method: "GET", path: "/dbs/db/colls/items/docs/1", resourceId: "dbs/db/colls/items/docs/1", resourceType: ResourceType.item },
  { name: "POST docs query", method: "POST", path: "/dbs/db/colls/items/docs", resourceId: "dbs/db/colls/items", resourceType: ResourceType.item },
  { name: "PUT doc", method: "PUT", path: "/dbs/db/colls/items/docs/1", resourceId: "dbs/db/colls/items/docs/1", resourceType: ResourceType.item },
  { name: "DELETE doc", method: "DELETE", path: "/dbs/db/colls/items/docs/1", resourceId: "dbs/db/colls/items/docs/1", resourceType: ResourceType.item },
  {
    // @azure/cosmos signs the unescaped link and sends encodeURI(link) on the wire.
    name: "GET doc with encoded ids",
    method: "GET",
    path: `/${encodeURI("dbs/my db/colls/café/docs/a b+c%d")}`,
    resourceId: "dbs/my db/colls/café/docs/a b+c%d",
    resourceType: ResourceType.item,
  },
  // Offer.read passes the offer's id alone, which setAuthorizationTokenHeaderUsingMasterKey lower-cases.
  { name: "GET offer", method: "GET", path: "/offers/AbCdEf", resourceId: "AbCdEf", resourceType: ResourceType.offer },
  { name: "GET offers feed", method: "GET", path: "/offers", resourceId: "", resourceType: ResourceType.offer },
];

describe("masterKeySigner", function () {
  let clock: sinon.SinonFakeTimers;

  beforeEach(function () {
    clock = sinon.useFakeTimers({ now: fixedDate });
  });

  afterEach(function () {
    clock.restore();
  });

  describe("signedResource", function () {
    const table: Array<[string, string, string]> = [
      [`${origin}/`, "", ""],
      [origin, "", ""],
      [`${origin}/dbs`, "dbs", ""],
      [`${origin}/dbs/db`, "dbs", "dbs/db"],
      [`${origin}/dbs/db/colls`, "colls", "dbs/db"],
      [`${origin}/dbs/db/colls/items`, "colls", "dbs/db/colls/items"],
      [`${origin}/dbs/db/colls/items/docs`, "docs", "dbs/db/colls/items"],
      [`${origin}/dbs/db/colls/items/docs/1`, "docs", "dbs/db/colls/items/docs/1"],
      [`${origin}/dbs/db/colls/items/docs/1/`, "docs", "dbs/db/colls/items/docs/1"],
      [`${origin}/dbs/db/colls/items/pkranges`, "pkranges", "dbs/db/colls/items"],
      [`${origin}/dbs/db/colls/items/docs/1?x=y`, "docs", "dbs/db/colls/items/docs/1"],
      [`${origin}/dbs/my%20db/colls/c%C3%A9/docs/a%2Fb`, "docs", "dbs/my db/colls/cé/docs/a/b"],
      [`${origin}/offers`, "offers", ""],
      [`${origin}/offers/AbCd`, "offers", "abcd"],
    ];
    for (const [url, resourceType, resourceLink] of table) {
      it(`${url.slice(origin.length) || "(bare origin)"} → ${resourceType || "(none)"} ${resourceLink || "(empty)"}`, function () {
        assert.deepEqual(signedResource(url), { resourceType, resourceLink });
      });
    }
  });

  describe("matches @azure/cosmos", function () {
    for (const c of signingCases) {
      it(`signs ${c.name} exactly as setAuthorizationTokenHeaderUsingMasterKey does`, async function () {
        // A stale master-key signature, as the SDK left it before the hedge was re-pointed.
        const stale = await cosmosHeaders(c.method as HTTPMethod, c.resourceId, c.resourceType);
        await clock.tickAsync(60_000);
        const expected = await cosmosHeaders(c.method as HTTPMethod, c.resourceId, c.resourceType);
        assert.notEqual(expected["authorization"], stale["authorization"]);

        const request = makeRequest(`${origin}${c.path}`, {
          method: c.method,
          headers: { authorization: String(stale["authorization"]), "x-ms-date": String(stale["x-ms-date"]) },
        });
        await masterKeySigner(key)(request);

        assert.equal(request.headers.get("x-ms-date"), expected["x-ms-date"]);
        assert.equal(request.headers.get("authorization"), expected["authorization"]);
      });
    }

    it("masterKeyAuthorization agrees with @azure/cosmos for an explicit date", async function () {
      const expected = await cosmosHeaders(HTTPMethod.get, "dbs/db/colls/items/docs/1", ResourceType.item);
      const actual = masterKeyAuthorization(
        Buffer.from(key, "base64"),
        "GET",
        `${origin}/dbs/db/colls/items/docs/1`,
        new Date(fixedDate).toUTCString(),
      );
      assert.equal(actual, expected["authorization"]);
    });
  });

  describe("signing", function () {
    async function staleMasterRequest(url = `${origin}/dbs/db/colls/items/docs/1`) {
      const stale = await cosmosHeaders(HTTPMethod.get, "dbs/db/colls/items/docs/1", ResourceType.item);
      return makeRequest(url, {
        headers: { authorization: String(stale["authorization"]), "x-ms-date": String(stale["x-ms-date"]) },
      });
    }

    it("sets a fresh x-ms-date on every call", async function () {
      const signer = masterKeySigner(key);
      const request = await staleMasterRequest();
      await signer(request);
      const firstDate = request.headers.get("x-ms-date");
      const firstAuth = request.headers.get("authorization");
      assert.equal(firstDate, new Date(fixedDate).toUTCString());

      await clock.tickAsync(5_000);
      await signer(request);
      assert.equal(request.headers.get("x-ms-date"), new Date(fixedDate + 5_000).toUTCString());
      assert.notEqual(request.headers.get("authorization"), firstAuth);
      const expected = await cosmosHeaders(HTTPMethod.get, "dbs/db/colls/items/docs/1", ResourceType.item);
      assert.equal(request.headers.get("authorization"), expected["authorization"]);
    });

    it("does not sign the host, so every region gets the same signature at the same instant", async function () {
      const signer = masterKeySigner(key);
      const west = await staleMasterRequest(`${origin}/dbs/db/colls/items/docs/1`);
      const east = await staleMasterRequest("https://acct-eastus.documents.azure.com/dbs/db/colls/items/docs/1");
      await signer(west);
      await signer(east);
      assert.equal(west.headers.get("authorization"), east.headers.get("authorization"));
    });

    it("signs with the key it was given", async function () {
      const other = Buffer.from("another account key").toString("base64");
      const a = createPipelineRequest({ url: `${origin}/dbs/db/colls/items/docs/1`, method: "GET" });
      const b = createPipelineRequest({ url: `${origin}/dbs/db/colls/items/docs/1`, method: "GET" });
      await masterKeySigner(key)(a);
      await masterKeySigner(other)(b);
      assert.notEqual(a.headers.get("authorization"), b.headers.get("authorization"));
    });

    it("leaves alone an arm signed with another account's key: re-signed with its own key it would fail", async function () {
      const other = Buffer.from("another account key").toString("base64");
      const arm = await staleMasterRequest();
      const before = { authorization: arm.headers.get("authorization"), date: arm.headers.get("x-ms-date") };
      await masterKeySigner(other)(arm);
      assert.deepEqual({ authorization: arm.headers.get("authorization"), date: arm.headers.get("x-ms-date") }, before);
    });

    it("accepts a key with surrounding whitespace", async function () {
      const a = await staleMasterRequest();
      const b = await staleMasterRequest();
      await masterKeySigner(key)(a);
      await masterKeySigner(` ${key}\n`)(b);
      assert.equal(a.headers.get("authorization"), b.headers.get("authorization"));
    });

    const untouched: Array<[string, string]> = [
      ["an AAD token", encodeURIComponent("type=aad&ver=1.0&sig=eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb3Ntb3MifQ.c2ln")],
      ["a resource token", encodeURIComponent("type=resource&ver=1.0&sig=abc123==")],
      ["a SAS token", encodeURIComponent("type=sas&ver=1.0&sig=abc123==")],
      ["a raw (not URL-encoded) AAD token", "type=aad&ver=1.0&sig=abc"],
      ["a header that is not valid percent-encoding", "type%3Dmaster%E0"],
    ];
    for (const [name, authorization] of untouched) {
      it(`leaves ${name} untouched`, async function () {
        const date = new Date(fixedDate - 3_600_000).toUTCString();
        const request = makeRequest(`${origin}/dbs/db/colls/items/docs/1`, {
          headers: { authorization, "x-ms-date": date },
        });
        await masterKeySigner(key)(request);
        assert.equal(request.headers.get("authorization"), authorization);
        assert.equal(request.headers.get("x-ms-date"), date);
      });
    }

    it("signs a request that has no authorization header yet", async function () {
      const request = makeRequest(`${origin}/dbs/db/colls/items/docs/1`);
      await masterKeySigner(key)(request);
      const date = request.headers.get("x-ms-date");
      assert.ok(date !== undefined);
      assert.equal(
        request.headers.get("authorization"),
        masterKeyAuthorization(Buffer.from(key, "base64"), "GET", request.url, date),
      );
    });
  });

  describe("bad keys", function () {
    const secretLooking = "c2VjcmV0IGtleQ== but not base64";
    const bad: Array<[string, unknown]> = [
      ["an empty string", ""],
      ["whitespace", "   "],
      ["a key that is not base64", secretLooking],
      ["a key with an inner space", "dGVz dA=="],
      ["a number", 42],
      ["undefined", undefined],
      ["null", null],
      ["an object", { key }],
    ];
    for (const [name, value] of bad) {
      it(`rejects ${name} with a TypeError that does not contain the key`, function () {
        assert.throws(
          () => masterKeySigner(value as string),
          (error: unknown) => {
            assert.ok(error instanceof TypeError);
            assert.match(error.message, /masterKeySigner key/);
            if (typeof value === "string" && value.trim() !== "") assert.ok(!error.message.includes(value.trim()));
            assert.ok(!error.message.includes(key));
            assert.ok(!error.message.includes("c2VjcmV0"));
            return true;
          },
        );
      });
    }
  });
});
