import assert from "node:assert/strict";
import { redactCredentials } from "../../../src/diagnostics/redact.js";

const signature = "Zm9vYmFyYmF6cXV4K0dtPT1zZWNyZXQ+/=";
const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXBhcnQ";

/** Every credential shape an arm's error message may echo, each replaced whole, and text around it kept. */
describe("redactCredentials", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["a master-key authorization", `failed: type=master&ver=1.0&sig=${signature} end`, "failed: [redacted] end"],
    ["a URL-encoded one", `failed: type%3Dmaster%26ver%3D1.0%26sig%3D${encodeURIComponent(signature)} end`, "failed: [redacted] end"],
    ["an AAD one, in capitals", `TYPE=AAD&VER=1.0&SIG=${jwt} end`, "[redacted] end"],
    ["a resource token", `token type=resource&ver=1.0&sig=${signature}`, "token [redacted]"],
    ["a signature alone", `sig=${signature}&x=1`, "[redacted]&x=1"],
    ["a URL-encoded signature alone", `sig%3D${signature} x`, "[redacted] x"],
    ["a signature up to a quote", `{"h":"sig=${signature}"}`, '{"h":"[redacted]"}'],
    ["a bearer token", `Bearer abc.def-ghi~jkl+/== end`, "[redacted] end"],
    ["an authorization header, with a colon or an equals sign", "authorization: secret-value next Authorization=other", "[redacted] next [redacted]"],
    ["a bare JSON Web Token", `token ${jwt} end`, "token [redacted] end"],
    ["every occurrence", `sig=a1 then sig=b2 then Bearer c3`, "[redacted] then [redacted] then [redacted]"],
  ];
  for (const [name, text, expected] of cases) {
    it(`replaces ${name}`, () => {
      assert.equal(redactCredentials(text), expected);
    });
  }

  it("leaves text without a credential as it is", () => {
    for (const text of ["connect ECONNREFUSED 10.0.0.1:443", "design=5 assign=6 type=other&x=1", "eyJ alone, and eyJhbG.only-two"]) {
      assert.equal(redactCredentials(text), text);
    }
  });
});

describe("trustworthiness: what users hit", function () {
  describe("redaction", function () {
    it("removes a signature URL-encoded once, twice or three times", function () {
      for (const text of [
        "failed: sig=abc123DEF%2B",
        "failed: type%3Dmaster%26ver%3D1.0%26sig%3Dabc123",
        "failed: type%253Dmaster%2526ver%253D1.0%2526sig%253Dabc123",
        "failed: auth sig%25253Dabc123",
        "failed: type%25253Dmaster%252526ver%25253D1.0",
      ]) {
        const redacted = redactCredentials(text);
        assert.ok(!redacted.includes("abc123"), `${text} -> ${redacted}`);
        assert.ok(redacted.includes("[redacted]"));
      }
    });
  });
});
