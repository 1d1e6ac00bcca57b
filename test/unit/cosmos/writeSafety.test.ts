import assert from "node:assert/strict";
import { classifyOperation } from "../../../src/cosmos/operationKind.js";
import { carriesOperationErrors, isRepeatableWrite } from "../../../src/cosmos/writeSafety.js";
import { makeRequest, makeResponse } from "../../support/requests.js";

const item = "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs/item-1";
const docs = "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs";

function patch(operations: unknown, condition?: string): boolean {
  const request = makeRequest(item, { method: "PATCH", body: JSON.stringify({ ...(condition !== undefined ? { condition } : {}), operations }) });
  return isRepeatableWrite(request, classifyOperation(request));
}

function batch(operations: unknown): boolean {
  const request = makeRequest(docs, { method: "POST", headers: { "x-ms-cosmos-is-batch-request": "true" }, body: JSON.stringify(operations) });
  return isRepeatableWrite(request, classifyOperation(request));
}

describe("writeSafety", function () {
  describe("isRepeatableWrite", function () {
    it("create, replace, delete and a conditional upsert may go twice: a second application is answered 409, 404 or 412, or as the first", function () {
      const requests = [
        makeRequest(docs, { method: "POST", body: "{}" }),
        makeRequest(docs, { method: "POST", headers: { "x-ms-documentdb-is-upsert": "true", "If-Match": '"etag-1"' }, body: "{}" }),
        makeRequest(item, { method: "PUT", body: "{}" }),
        makeRequest(item, { method: "DELETE" }),
      ];
      assert.deepEqual(
        requests.map((request) => [classifyOperation(request), isRepeatableWrite(request, classifyOperation(request))]),
        [
          ["create", true],
          ["upsert", true],
          ["replace", true],
          ["delete", true],
        ],
      );
    });

    it("an unconditional upsert is never sent twice: the second would answer 200 for the document the first created (201)", function () {
      const request = makeRequest(docs, { method: "POST", headers: { "x-ms-documentdb-is-upsert": "true" }, body: "{}" });
      assert.equal(classifyOperation(request), "upsert");
      assert.equal(isRepeatableWrite(request, "upsert"), false);
    });

    it("a patch given as the bare list of operations, as @azure/cosmos sends an array it was given, is judged the same way", function () {
      const list = (operations: unknown): boolean => {
        const request = makeRequest(item, { method: "PATCH", body: JSON.stringify(operations) });
        return isRepeatableWrite(request, classifyOperation(request));
      };
      assert.equal(list([{ op: "set", path: "/patched", value: true }]), true);
      assert.equal(list([{ op: "incr", path: "/v", value: 1 }]), false);
      assert.equal(list([]), false);
    });

    it("a patch of set, replace, and add or remove of a named property may go twice, with or without a condition", function () {
      assert.equal(patch([{ op: "set", path: "/a", value: 1 }, { op: "replace", path: "/b/c", value: 2 }]), true);
      assert.equal(patch([{ op: "add", path: "/tags/name", value: "x" }, { op: "remove", path: "/old" }], "from c where c.v = 1"), true);
    });

    for (const [name, operation] of [
      ["incr", { op: "incr", path: "/v", value: 1 }],
      ["an add at an array's end", { op: "add", path: "/list/-", value: 1 }],
      ["an add at an array index", { op: "add", path: "/list/0", value: 1 }],
      ["a remove at an array index", { op: "remove", path: "/list/3" }],
      ["move", { op: "move", from: "/a", path: "/b" }],
      ["an operation of unknown kind", { op: "copy", from: "/a", path: "/b" }],
      ["an operation without a path", { op: "set", value: 1 }],
    ] as const) {
      it(`a patch with ${name} among its operations is never sent twice`, function () {
        assert.equal(patch([{ op: "set", path: "/a", value: 1 }, operation]), false);
      });
    }

    it("a patch body that cannot be read is not repeatable", function () {
      for (const body of ["not json", "{}", JSON.stringify({ operations: [] }), JSON.stringify({ operations: "incr" })]) {
        const request = makeRequest(item, { method: "PATCH", body });
        assert.equal(isRepeatableWrite(request, "patch"), false, body);
      }
      assert.equal(isRepeatableWrite(makeRequest(item, { method: "PATCH" }), "patch"), false, "no body");
    });

    it("a batch or bulk request is repeatable only when every operation in it is", function () {
      assert.equal(batch([{ operationType: "Create", resourceBody: { id: "a" } }, { operationType: "Read", id: "b" }, { operationType: "Delete", id: "c" }]), true);
      assert.equal(batch([{ operationType: "Patch", id: "a", resourceBody: { operations: [{ op: "set", path: "/x", value: 1 }] } }]), true);
      assert.equal(batch([{ operationType: "Create", resourceBody: { id: "a" } }, { operationType: "Patch", id: "a", resourceBody: { operations: [{ op: "incr", path: "/v", value: 1 }] } }]), false);
      assert.equal(batch([{ operationType: "Upsert", resourceBody: { id: "a" } }, { operationType: "Unknown" }]), false);
      assert.equal(batch([{ operationType: "Upsert", resourceBody: { id: "a" } }]), false, "an unconditional upsert");
      assert.equal(batch([{ operationType: "Upsert", resourceBody: { id: "a" }, ifMatch: '"etag-1"' }, { operationType: "Read", id: "b" }]), true, "an upsert with its ifMatch");
      assert.equal(batch([{ operationType: "Upsert", resourceBody: { id: "a" }, ifMatch: "" }]), false, "an empty ifMatch");
      assert.equal(batch([]), false);
      assert.equal(batch({ operationType: "Create" }), false);
    });

    it("reads and other kinds are not writes it may repeat (stored procedures are never document writes)", function () {
      const sproc = makeRequest("https://acct-westus.documents.azure.com/dbs/db/colls/c/sprocs/s", { method: "POST", body: "[]" });
      assert.equal(classifyOperation(sproc), "other");
      assert.equal(isRepeatableWrite(sproc, "other"), false);
      assert.equal(isRepeatableWrite(makeRequest(item), "pointRead"), false);
    });
  });

  describe("carriesOperationErrors", function () {
    const request = makeRequest(docs, { method: "POST" });

    it("a bulk answer of 200 with a failed operation, or a 207, carries errors", function () {
      assert.equal(carriesOperationErrors(makeResponse(request, 200, { body: [{ statusCode: 201 }, { statusCode: 409 }] })), true);
      assert.equal(carriesOperationErrors(makeResponse(request, 207, { body: [{ statusCode: 424 }] })), true);
    });

    it("a bulk answer whose every operation succeeded, or a body that is not a result list, carries none", function () {
      assert.equal(carriesOperationErrors(makeResponse(request, 200, { body: [{ statusCode: 201 }, { statusCode: 200 }] })), false);
      assert.equal(carriesOperationErrors(makeResponse(request, 200, { body: "statusCode: garbage" })), false);
      assert.equal(carriesOperationErrors(makeResponse(request, 200, { body: { statusCode: 409 } })), false);
      assert.equal(carriesOperationErrors(makeResponse(request, 200)), false);
    });
  });
});
