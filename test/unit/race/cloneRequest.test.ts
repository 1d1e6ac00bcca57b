import assert from "node:assert/strict";
import { Agent } from "node:https";
import { Readable } from "node:stream";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import fc from "fast-check";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";
import { cloneRequestFor, isResendableBody, retarget, retargetByParsing } from "../../../src/race/cloneRequest.js";
import { eastUs, query, westUs } from "../../support/hedgingFixtures.js";

const originalRequestSymbol = Symbol.for("@azure/core-client original request");

function withBody(body: PipelineRequest["body"]): PipelineRequest {
  const request = createPipelineRequest({ url: "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs", method: "POST" });
  if (body !== undefined) request.body = body;
  return request;
}

describe("cloneRequest", () => {
  describe("isResendableBody", () => {
    const resendable: ReadonlyArray<readonly [string, PipelineRequest["body"]]> = [
      ["no body", undefined],
      ["a null body", null],
      ["a string", '{"id":"1"}'],
      ["an empty string", ""],
      ["a Buffer", Buffer.from("abc")],
      ["a Uint8Array", new Uint8Array([1, 2, 3])],
      ["an ArrayBuffer", new ArrayBuffer(8)],
      ["a DataView", new DataView(new ArrayBuffer(8))],
      ["a Blob", new Blob(["abc"])],
      ["a body factory", () => Readable.from(["abc"])],
    ];
    for (const [label, body] of resendable) {
      it(`${label} can be sent again`, () => {
        assert.equal(isResendableBody(withBody(body)), true);
      });
    }

    const oneShot: ReadonlyArray<readonly [string, PipelineRequest["body"]]> = [
      ["a Node Readable", Readable.from(["abc"])],
      ["a web ReadableStream", new ReadableStream({ start: (controller) => controller.close() })],
    ];
    for (const [label, body] of oneShot) {
      it(`${label} cannot`, () => {
        assert.equal(isResendableBody(withBody(body)), false);
      });
    }

    it("a multipart body cannot, whatever its parts", () => {
      const request = withBody(undefined);
      request.multipartBody = { parts: [{ headers: request.headers, body: new Uint8Array([1]) }] };
      assert.equal(isResendableBody(request), false);
    });
  });

  describe("retarget", () => {
    const cases: ReadonlyArray<readonly [string, string, RegionEndpoint, string]> = [
      [
        "keeps the path (encoded as it was) and the query",
        "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/a%20b%2Fc?x=1&y=%2F",
        westUs,
        "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs/a%20b%2Fc?x=1&y=%2F",
      ],
      [
        "drops a port the target region does not use",
        "https://localhost:8081/dbs/db/colls/c/docs/1",
        westUs,
        "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs/1",
      ],
      [
        "takes the target region's port",
        "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1",
        { name: "Local", endpoint: "https://127.0.0.1:9443/" },
        "https://127.0.0.1:9443/dbs/db/colls/c/docs/1",
      ],
      [
        "swaps one port for another",
        "http://127.0.0.1:9001/dbs/db/colls/c/docs/1?q",
        { name: "Local 2", endpoint: "http://127.0.0.1:9002" },
        "http://127.0.0.1:9002/dbs/db/colls/c/docs/1?q",
      ],
      [
        "swaps the scheme",
        "http://127.0.0.1:9001/dbs/db",
        { name: "Secure", endpoint: "https://acct-westus.documents.azure.com:443/" },
        "https://acct-westus.documents.azure.com/dbs/db",
      ],
      [
        "ignores the path of the region's endpoint",
        "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1",
        { name: "Pathy", endpoint: "https://acct-westus.documents.azure.com/some/prefix/" },
        "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs/1",
      ],
    ];
    for (const [label, url, region, expected] of cases) {
      it(label, () => {
        assert.equal(retarget(url, region), expected);
      });
    }

    it("returns a URL already on the region's origin as it is", () => {
      const local: RegionEndpoint = { name: "Local", endpoint: "https://127.0.0.1:9443/" };
      for (const url of ["https://127.0.0.1:9443/dbs/db?x=1", "https://127.0.0.1:9443", "https://127.0.0.1:9443?q", "https://127.0.0.1:9443#f"]) {
        assert.equal(retarget(url, local), url);
      }
    });

    it("does not take a longer port or host that starts like the region's origin for it", () => {
      const local: RegionEndpoint = { name: "Local", endpoint: "https://127.0.0.1:944/" };
      assert.equal(retarget("https://127.0.0.1:9443/dbs/db", local), "https://127.0.0.1:944/dbs/db");
      const short: RegionEndpoint = { name: "Short", endpoint: "https://acct.documents.azure.com/" };
      assert.equal(retarget("https://acct.documents.azure.com.evil.example/dbs/db", short), "https://acct.documents.azure.com/dbs/db");
    });

    it("returns a URL on the region's origin as it is whether the default port is written out or not", () => {
      // The account lists its endpoints as "https://acct-westus.documents.azure.com:443/", and the SDK builds its URLs from them.
      const listed: RegionEndpoint = { name: "West US", endpoint: "https://acct-westus.documents.azure.com:443/" };
      const bare: RegionEndpoint = { name: "West US", endpoint: "https://acct-westus.documents.azure.com/" };
      for (const region of [listed, bare]) {
        for (const url of ["https://acct-westus.documents.azure.com:443/dbs/db/colls/c/docs/1", "https://acct-westus.documents.azure.com/dbs/db?x=1"]) {
          assert.equal(retarget(url, region), url);
        }
      }
      assert.equal(retarget("http://127.0.0.1:80/dbs/db", { name: "Plain", endpoint: "http://127.0.0.1/" }), "http://127.0.0.1:80/dbs/db");
    });

    it("moves a URL with its default port written out to another region, path as written", () => {
      const listed: RegionEndpoint = { name: "East US", endpoint: "https://acct-eastus.documents.azure.com:443/" };
      assert.equal(
        retarget("https://acct-westus.documents.azure.com:443/dbs/db/colls/c/docs/a%20b?x=1", listed),
        "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/a%20b?x=1",
      );
      assert.equal(retarget("https://acct-westus.documents.azure.com:4430/dbs/db", listed), "https://acct-eastus.documents.azure.com/dbs/db");
    });

    it("keeps the path and query as written, where the URL parser would escape them, on http and https alike", () => {
      // The parser writes a space as %20; the string path, taken for every plain http(s) URL, leaves the path alone.
      assert.equal(retarget("https://acct-westus.documents.azure.com/dbs/my db/colls/c?q=a b", eastUs), "https://acct-eastus.documents.azure.com/dbs/my db/colls/c?q=a b");
      const plainHttp: RegionEndpoint = { name: "Plain", endpoint: "http://127.0.0.1:8081/" };
      assert.equal(retarget("http://localhost:8081/dbs/my db", plainHttp), "http://127.0.0.1:8081/dbs/my db");
      assert.equal(retarget("http://[::1]:8081/dbs/my db", plainHttp), "http://127.0.0.1:8081/dbs/my db");
    });

    it("leaves a URL of another scheme, or no URL at all, to the URL parser", () => {
      const url = "foo://acct-eastus.documents.azure.com/dbs/db";
      assert.equal(retarget(url, westUs), retargetByParsing(url, westUs));
      assert.equal(retarget(url, westUs), "foo://acct-westus.documents.azure.com/dbs/db", "the parser cannot make a foo: URL https:");
      assert.throws(() => retarget("dbs/db/colls/c", westUs), TypeError);
    });

    it("leaves a URL with user info or an escaped host to the URL parser", () => {
      assert.equal(retarget("https://user:pass@acct-westus.documents.azure.com/dbs/db", westUs), "https://user:pass@acct-westus.documents.azure.com/dbs/db");
      assert.equal(retarget("https://acct%2Deastus.documents.azure.com/dbs/db", westUs), "https://acct-westus.documents.azure.com/dbs/db");
    });

    it("gives what the URL parser gives for any URL of the SDK's shape (property)", () => {
      const host = fc.constantFrom("acct-eastus.documents.azure.com", "acct-westus.documents.azure.com", "127.0.0.1", "localhost", "[::1]");
      const port = fc.constantFrom("", ":443", ":80", ":8081", ":9443");
      const scheme = fc.constantFrom("https", "http");
      // Not a percent-encoded dot segment ("%2E", "%2E%2E"): the parser removes it, the retarget keeps it as written, and the transport parses the URL anyway.
      const segment = fc
        .stringMatching(/^[A-Za-z0-9_~%-]{1,8}$/)
        .filter((text) => !/%(?![0-9A-F]{2})/.test(text) && !/^(%2E){1,2}$/.test(text));
      const path = fc.array(segment, { minLength: 0, maxLength: 6 }).map((segments) => `/${segments.join("/")}`);
      const query = fc.option(fc.stringMatching(/^[A-Za-z0-9=&]{0,10}$/), { nil: undefined }).map((text) => (text === undefined ? "" : `?${text}`));
      fc.assert(
        fc.property(scheme, host, port, path, query, scheme, host, port, (s1, h1, p1, rest, q, s2, h2, p2) => {
          const url = `${s1}://${h1}${p1}${rest}${q}`;
          const region: RegionEndpoint = { name: "Target", endpoint: `${s2}://${h2}${p2}/` };
          const got = retarget(url, region);
          const expected = retargetByParsing(url, region);
          // Already on the region's origin, the URL is kept as written; the parser would only have dropped a default port.
          assert.equal(new URL(got).href, new URL(expected).href);
          if (got !== url) assert.equal(got, expected);
        }),
        { numRuns: 2000 },
      );
    });
  });

  describe("cloneRequestFor", () => {
    function original(): PipelineRequest {
      const request = query(eastUs, new AbortController().signal);
      request.headers.set("x-ms-date", "Tue, 01 Jul 2025 00:00:00 GMT");
      request.headers.set("X-Custom-Case", "kept");
      request.agent = new Agent({ keepAlive: true });
      request.timeout = 4321;
      request.streamResponseStatusCodes = new Set([200]);
      request.tlsSettings = { ca: "ca" };
      request.proxySettings = { host: "http://proxy", port: 8080 };
      request.disableKeepAlive = true;
      request.allowInsecureConnection = true;
      request.enableBrowserStreams = true;
      request.withCredentials = true;
      return request;
    }

    it("re-points the copy at the region and keeps method, path and query", () => {
      const request = original();
      const clone = cloneRequestFor(request, westUs, new AbortController().signal);
      assert.equal(clone.url, "https://acct-westus.documents.azure.com/dbs/db/colls/c/docs?x=1");
      assert.equal(clone.method, "POST");
      assert.equal(request.url, "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs?x=1", "the original is untouched");
    });

    it("shares the body and the transport settings", () => {
      const request = original();
      request.body = Buffer.from("shared");
      const clone = cloneRequestFor(request, westUs, new AbortController().signal);
      assert.equal(clone.body, request.body);
      assert.equal(clone.agent, request.agent);
      assert.equal(clone.timeout, 4321);
      assert.equal(clone.streamResponseStatusCodes, request.streamResponseStatusCodes);
      assert.equal(clone.tlsSettings, request.tlsSettings);
      assert.equal(clone.proxySettings, request.proxySettings);
      assert.equal(clone.disableKeepAlive, true);
      assert.equal(clone.allowInsecureConnection, true);
      assert.equal(clone.enableBrowserStreams, true);
      assert.equal(clone.withCredentials, true);
    });

    it("copies the headers into a new object, names' case included", () => {
      const request = original();
      const clone = cloneRequestFor(request, westUs, new AbortController().signal);
      assert.notEqual(clone.headers, request.headers);
      assert.deepEqual(clone.headers.toJSON({ preserveCase: true }), request.headers.toJSON({ preserveCase: true }));
      clone.headers.set("x-ms-date", "changed on the clone");
      clone.headers.delete("x-custom-case");
      assert.equal(clone.headers.has("x-custom-case"), false, "a header the arm deletes is gone from the arm");
      assert.equal(request.headers.get("x-ms-date"), "Tue, 01 Jul 2025 00:00:00 GMT");
      assert.equal(request.headers.get("x-custom-case"), "kept");
      request.headers.set("x-added-later", "1");
      assert.equal(clone.headers.has("x-added-later"), false);
    });

    it("gives each arm headers of its own: one arm's change reaches neither the original nor another arm", () => {
      const request = original();
      const primary = cloneRequestFor(request, eastUs, new AbortController().signal);
      const hedge = cloneRequestFor(request, westUs, new AbortController().signal);
      hedge.headers.set("x-ms-date", "signed for the hedge");
      hedge.headers.delete("x-ms-session-token");
      assert.equal(request.headers.get("x-ms-date"), "Tue, 01 Jul 2025 00:00:00 GMT");
      assert.equal(primary.headers.get("x-ms-date"), "Tue, 01 Jul 2025 00:00:00 GMT");
      assert.equal(hedge.headers.get("x-ms-date"), "signed for the hedge");
      assert.deepEqual([...primary.headers], [...request.headers]);
      assert.equal(String(primary.headers), JSON.stringify(request.headers.toJSON({ preserveCase: true })));
      assert.deepEqual(primary.headers.toJSON(), request.headers.toJSON());
      assert.deepEqual(
        Object.keys(hedge.headers.toJSON({ preserveCase: true })).sort(),
        Object.keys(request.headers.toJSON({ preserveCase: true })).filter((name) => name !== "x-ms-session-token").sort(),
      );
    });

    it("reads the original's headers, later changes included, until the arm changes one, and only its own copy from then on", () => {
      const request = original();
      const arm = cloneRequestFor(request, westUs, new AbortController().signal);
      arm.headers.delete("x-not-there");
      request.headers.set("x-set-on-the-original", "seen");
      assert.equal(arm.headers.get("X-Set-On-The-Original"), "seen");
      assert.equal(arm.headers.has("x-custom-case"), true);
      arm.headers.set("x-own", "1");
      request.headers.set("x-set-after-the-arm-changed", "not seen");
      assert.equal(arm.headers.has("x-set-after-the-arm-changed"), false);
      assert.equal(arm.headers.get("x-set-on-the-original"), "seen");
      assert.equal(request.headers.has("x-own"), false);
      arm.headers.delete("x-own");
      assert.equal(arm.headers.has("x-own"), false, "a header only the arm's own copy has can be deleted again");
    });

    it("gives the copy its own abort signal and its own request id", () => {
      const request = original();
      const signal = new AbortController().signal;
      const clone = cloneRequestFor(request, westUs, signal);
      assert.equal(clone.abortSignal, signal);
      assert.notEqual(clone.requestId, request.requestId);
      assert.match(clone.requestId, /^[0-9a-f-]{36}$/);
    });

    it("points core-client back at the original request, without an enumerable property", () => {
      const request = original();
      const clone = cloneRequestFor(request, westUs, new AbortController().signal);
      assert.equal((clone as unknown as Record<symbol, unknown>)[originalRequestSymbol], request);
      assert.equal(Object.prototype.propertyIsEnumerable.call(clone, originalRequestSymbol), false);
    });

    it("leaves unset transport settings at the pipeline's defaults", () => {
      const request = createPipelineRequest({ url: "https://acct-eastus.documents.azure.com/dbs/db/colls/c/docs/1", method: "GET" });
      const clone = cloneRequestFor(request, westUs, new AbortController().signal);
      assert.equal(clone.body, undefined);
      assert.equal(clone.agent, undefined);
      assert.equal(clone.timeout, request.timeout);
      assert.equal(clone.withCredentials, request.withCredentials);
    });
  });
});
