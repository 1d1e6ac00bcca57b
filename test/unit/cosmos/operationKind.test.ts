import assert from "node:assert/strict";
import type { HttpMethods } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import {
  classifyOperation,
  classifyShape,
  documentReadKinds,
  documentWriteKinds,
  isReadKind,
  pathSegments,
} from "../../../src/cosmos/operationKind.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import { makeRequest } from "../../support/requests.js";

const origin = "https://account-westus.documents.azure.com:443";
const coll = `${origin}/dbs/db/colls/items`;

interface Case {
  name: string;
  method: HttpMethods;
  url: string;
  headers?: Record<string, string>;
  kind: OperationKind;
}

const cases: Case[] = [
  { name: "GET / on the account", method: "GET", url: `${origin}/`, kind: "accountRead" },
  { name: "GET on the bare origin", method: "GET", url: origin, kind: "accountRead" },
  { name: "GET / with a query string", method: "GET", url: `${origin}/?x=1`, kind: "accountRead" },
  { name: "POST / on the account", method: "POST", url: `${origin}/`, kind: "other" },

  { name: "collection read", method: "GET", url: coll, kind: "collectionRead" },
  { name: "collection read with a trailing slash", method: "GET", url: `${coll}/`, kind: "collectionRead" },
  { name: "collection replace", method: "PUT", url: coll, kind: "other" },
  { name: "collection delete", method: "DELETE", url: coll, kind: "other" },

  { name: "pkranges first page", method: "GET", url: `${coll}/pkranges`, kind: "partitionKeyRangeReadFeed" },
  {
    name: "pkranges with an empty continuation header",
    method: "GET",
    url: `${coll}/pkranges`,
    headers: { "x-ms-continuation": "  " },
    kind: "partitionKeyRangeReadFeed",
  },
  {
    name: "pkranges with x-ms-continuation",
    method: "GET",
    url: `${coll}/pkranges`,
    headers: { "x-ms-continuation": "token" },
    kind: "partitionKeyRangeReadFeedContinuation",
  },
  {
    name: "pkranges with If-None-Match",
    method: "GET",
    url: `${coll}/pkranges`,
    headers: { "If-None-Match": '"42"' },
    kind: "partitionKeyRangeReadFeedContinuation",
  },
  { name: "POST on pkranges", method: "POST", url: `${coll}/pkranges`, kind: "other" },
  { name: "a single pkrange", method: "GET", url: `${coll}/pkranges/0`, kind: "other" },

  { name: "point read", method: "GET", url: `${coll}/docs/1`, kind: "pointRead" },
  { name: "point read with a trailing slash", method: "GET", url: `${coll}/docs/1/`, kind: "pointRead" },
  { name: "point read with double slashes", method: "GET", url: `${origin}//dbs//db/colls/items//docs/1`, kind: "pointRead" },
  { name: "point read with a query string", method: "GET", url: `${coll}/docs/1?foo=bar`, kind: "pointRead" },
  { name: "point read of an encoded id", method: "GET", url: `${coll}/docs/a%20b%2Fc`, kind: "pointRead" },
  { name: "point read of an encoded db and coll", method: "GET", url: `${origin}/dbs/my%20db/colls/c%C3%A9/docs/x`, kind: "pointRead" },
  { name: "point read in lower-case method", method: "get" as HttpMethods, url: `${coll}/docs/1`, kind: "pointRead" },

  {
    name: "query (isquery true)",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "x-ms-documentdb-isquery": "true" },
    kind: "query",
  },
  {
    name: "query (isquery True, header in mixed case)",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "X-MS-DocumentDB-IsQuery": " True " },
    kind: "query",
  },
  {
    name: "query (content-type only)",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "Content-Type": "Application/Query+JSON; charset=utf-8" },
    kind: "query",
  },
  {
    name: "query plan",
    method: "POST",
    url: `${coll}/docs`,
    headers: {
      "x-ms-cosmos-is-query-plan-request": "True",
      "x-ms-documentdb-isquery": "True",
      "content-type": "application/query+json",
    },
    kind: "queryPlan",
  },
  {
    name: "isquery false is a create",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "x-ms-documentdb-isquery": "false", "content-type": "application/json" },
    kind: "create",
  },

  { name: "read feed", method: "GET", url: `${coll}/docs`, kind: "readFeed" },
  {
    name: "read feed with a continuation",
    method: "GET",
    url: `${coll}/docs`,
    headers: { "x-ms-continuation": "abc" },
    kind: "readFeed",
  },
  {
    name: "change feed (A-IM: Incremental feed)",
    method: "GET",
    url: `${coll}/docs`,
    headers: { "A-IM": "Incremental feed" },
    kind: "changeFeed",
  },
  {
    name: "change feed (a-im: incremental FEED, spaces)",
    method: "GET",
    url: `${coll}/docs`,
    headers: { "a-im": "  incremental FEED ", "If-None-Match": '"7"' },
    kind: "changeFeed",
  },
  {
    name: "A-IM with another value is a read feed",
    method: "GET",
    url: `${coll}/docs`,
    headers: { "A-IM": "Full-Fidelity Feed" },
    kind: "readFeed",
  },

  {
    name: "batch",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "x-ms-cosmos-is-batch-request": "True" },
    kind: "batch",
  },
  { name: "create", method: "POST", url: `${coll}/docs`, headers: { "content-type": "application/json" }, kind: "create" },
  {
    name: "upsert",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "x-ms-documentdb-is-upsert": "true" },
    kind: "upsert",
  },
  {
    name: "upsert false is a create",
    method: "POST",
    url: `${coll}/docs`,
    headers: { "x-ms-documentdb-is-upsert": "false" },
    kind: "create",
  },
  { name: "replace", method: "PUT", url: `${coll}/docs/1`, kind: "replace" },
  { name: "patch", method: "PATCH", url: `${coll}/docs/1`, kind: "patch" },
  { name: "delete", method: "DELETE", url: `${coll}/docs/1`, kind: "delete" },
  { name: "POST on an item", method: "POST", url: `${coll}/docs/1`, kind: "other" },
  { name: "PUT on the docs feed", method: "PUT", url: `${coll}/docs`, kind: "other" },

  { name: "POST /dbs", method: "POST", url: `${origin}/dbs`, kind: "other" },
  { name: "GET /dbs", method: "GET", url: `${origin}/dbs`, kind: "other" },
  { name: "GET a database", method: "GET", url: `${origin}/dbs/db`, kind: "other" },
  { name: "GET colls feed", method: "GET", url: `${origin}/dbs/db/colls`, kind: "other" },
  { name: "execute a sproc", method: "POST", url: `${coll}/sprocs/run`, kind: "other" },
  { name: "read sprocs", method: "GET", url: `${coll}/sprocs`, kind: "other" },
  { name: "read offers", method: "GET", url: `${origin}/offers`, kind: "other" },
  { name: "query offers", method: "POST", url: `${origin}/offers`, headers: { "x-ms-documentdb-isquery": "true" }, kind: "other" },
  { name: "a path below an item", method: "GET", url: `${coll}/docs/1/attachments`, kind: "other" },
  { name: "docs outside a collection", method: "GET", url: `${origin}/dbs/db/users/u/docs/1`, kind: "other" },
];

describe("classifyOperation", function () {
  for (const c of cases) {
    it(`${c.name} → ${c.kind}`, function () {
      const request = makeRequest(c.url, { method: c.method, ...(c.headers ? { headers: c.headers } : {}) });
      assert.equal(classifyOperation(request), c.kind);
    });
  }

  it("classifyShape agrees with classifyOperation and reads headers through the accessor", function () {
    for (const c of cases) {
      const lower = new Map(Object.entries(c.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
      const asked: string[] = [];
      const kind = classifyShape({
        method: c.method,
        url: c.url,
        header: (name) => {
          asked.push(name);
          return lower.get(name);
        },
      });
      assert.equal(kind, c.kind, c.name);
      for (const name of asked) assert.equal(name, name.toLowerCase(), `${c.name}: asked for ${name}`);
    }
  });

  it("classifies a copy made by spread afresh: a read copied into a write is a write", function () {
    const read = makeRequest(`${coll}/docs/1`, { method: "GET" });
    assert.equal(classifyOperation(read), "pointRead");
    const replace = { ...read, method: "PUT" as const, body: "{}" };
    assert.equal(classifyOperation(replace), "replace");
    const feed = Object.assign(Object.create(null) as object, read, { url: `${coll}/docs` }) as typeof read;
    assert.equal(classifyOperation(feed), "readFeed");
  });

  it("never throws on a URL that does not parse", function () {
    assert.equal(
      classifyShape({ method: "GET", url: "/dbs/db/colls/items/docs/1", header: () => undefined }),
      "pointRead",
    );
    assert.equal(classifyShape({ method: "GET", url: "not a url %zz", header: () => undefined }), "other");
  });
});

describe("pathSegments", function () {
  it("decodes segments and drops empty ones", function () {
    assert.deepEqual(pathSegments(`${origin}//dbs/my%20db/colls/c%2Fd/docs/%E2%82%AC/?q=1`), [
      "dbs",
      "my db",
      "colls",
      "c/d",
      "docs",
      "€",
    ]);
  });

  it("keeps a segment that is not valid percent-encoding as it is", function () {
    assert.deepEqual(pathSegments(`${origin}/dbs/100%25/colls/x%E0`), ["dbs", "100%", "colls", "x%E0"]);
  });
});

describe("operation kind sets", function () {
  const all: OperationKind[] = [
    "accountRead",
    "collectionRead",
    "partitionKeyRangeReadFeed",
    "partitionKeyRangeReadFeedContinuation",
    "pointRead",
    "query",
    "queryPlan",
    "readFeed",
    "changeFeed",
    "batch",
    "create",
    "upsert",
    "replace",
    "patch",
    "delete",
    "other",
  ];

  it("documentReadKinds are exactly the document reads", function () {
    assert.deepEqual([...documentReadKinds].sort(), ["changeFeed", "pointRead", "query", "queryPlan", "readFeed"]);
  });

  it("documentWriteKinds are exactly the document writes", function () {
    assert.deepEqual([...documentWriteKinds].sort(), ["batch", "create", "delete", "patch", "replace", "upsert"]);
  });

  it("the read and write sets do not overlap", function () {
    for (const kind of documentReadKinds) assert.ok(!documentWriteKinds.has(kind), kind);
  });

  const reads: OperationKind[] = [
    "accountRead",
    "collectionRead",
    "partitionKeyRangeReadFeed",
    "partitionKeyRangeReadFeedContinuation",
    "pointRead",
    "query",
    "queryPlan",
    "readFeed",
    "changeFeed",
  ];
  for (const kind of all) {
    const expected = reads.includes(kind);
    it(`isReadKind(${kind}) is ${expected}`, function () {
      assert.equal(isReadKind(kind), expected);
    });
  }
});

describe("classifyShape against pathSegments", function () {
  it("classifies any path as the decoded segments say (property)", function () {
    const names = ["dbs", "colls", "docs", "pkranges", "d%62s", "%63olls", "do%63s", "pk%72anges", "x", "%zz", "a%2Fb", ""];
    const segment = fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 4 }));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), fc.constantFrom("GET", "POST", "PUT", "get"), fc.constantFrom("", "?q=1", "#f", "/"), (segments, method, tail) => {
        const url = `https://acct.documents.azure.com/${segments.join("/")}${tail}`;
        const decoded = pathSegments(url);
        const kind = classifyShape({ method, url, header: () => undefined });
        const upper = method.toUpperCase();
        let expected: string;
        if (decoded.length === 0) expected = upper === "GET" ? "accountRead" : "other";
        else if (decoded[0] !== "dbs" || decoded[2] !== "colls") expected = "other";
        else if (decoded.length === 4) expected = upper === "GET" ? "collectionRead" : "other";
        else if (decoded[4] === "pkranges" && decoded.length === 5 && upper === "GET") expected = "partitionKeyRangeReadFeed";
        else if (decoded[4] === "docs" && decoded.length === 5) expected = upper === "POST" ? "create" : upper === "GET" ? "readFeed" : "other";
        else if (decoded[4] === "docs" && decoded.length === 6) expected = upper === "GET" ? "pointRead" : upper === "PUT" ? "replace" : "other";
        else expected = "other";
        assert.equal(kind, expected, url);
      }),
      { numRuns: 2000 },
    );
  });
});
