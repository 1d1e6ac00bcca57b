import assert from "node:assert/strict";
import { inspect } from "node:util";
import { CosmosClient } from "@azure/cosmos";
import type { Container, RequestOptions } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import type { AccountEnv } from "./harness.js";
import { clientOptionsOf, databaseId, defaultRequestTimeoutMs, errorClassOf, newTag, preferredRegion, scopedRule, slowFaultMs, startAccount, writesContainerId } from "./harness.js";

const unicodeKeys = ["日本語", "emoji 🎉🚀", "mixed ü ß ø", "zero\u200bwidth", "rtl \u202e text", "a/b?c#d", "lone \ud800 surrogate"];

/** What a call ended with, as the caller sees it: a status, or the class of its error and whether a secret is in it. */
interface Ending {
  readonly status: number | string;
  readonly secret: boolean;
}

async function endingOf(call: () => Promise<{ statusCode?: number }>, key: string): Promise<Ending> {
  try {
    return { status: (await call()).statusCode ?? "no status", secret: false };
  } catch (error) {
    const text = `${inspect(error, { depth: 12 })} ${String((error as Error)?.message)}`;
    return { status: errorClassOf(error), secret: [key, "type%3Dmaster", "type=master", "sig%3D", "sig="].some((secret) => text.includes(secret)) };
  }
}

/**
 * Huge and hostile values handed to the SDK's own options and to the data,
 * through the real CosmosClient, plain beside hedged on the same call: the
 * hedged client must end as plain does (the same status or the same class of
 * error), with no key or signature in its error.
 */
describe("huge and hostile values, plain beside hedged", function () {
  this.timeout(120_000);
  let env: AccountEnv;

  before(async function () {
    env = await startAccount("singleWrite");
    for (const [index, pk] of unicodeKeys.entries()) await env.setup.items.upsert({ id: `u${index}`, pk });
    await env.setup.items.upsert({ id: "i0", pk: "p0" });
  });

  after(async function () {
    await env.close();
  });

  /** Runs `call` on a plain client and a hedged one (fixed 100 ms threshold), each with `slowPreferred` meeting only its own requests. */
  async function both(call: (container: Container) => Promise<{ statusCode?: number }>, slowPreferred = false): Promise<[Ending, Ending]> {
    const endings: Ending[] = [];
    for (const hedging of [false, { crossRegion: { threshold: 100 } }] as const) {
      const tag = newTag(hedging === false ? "plain" : "hedged");
      const client = new CosmosClient(clientOptionsOf(env.emulator, tag, { requestTimeout: defaultRequestTimeoutMs, circuitBreaker: false, hedging }));
      try {
        const container = client.database(databaseId).container(writesContainerId);
        await container.item("i0", "p0").read();
        const fault = slowPreferred ? env.emulator.region(preferredRegion).addFault(scopedRule({ delayMs: slowFaultMs }, tag, ["pointRead"])) : undefined;
        try {
          endings.push(await endingOf(() => call(container), env.emulator.key));
        } finally {
          fault?.remove();
        }
      } finally {
        client.dispose();
      }
    }
    return [endings[0]!, endings[1]!];
  }

  function assertSameEnding([plain, hedged]: [Ending, Ending], label: string): void {
    assert.deepEqual(hedged, plain, `${label}: hedged ${JSON.stringify(hedged)}, plain ${JSON.stringify(plain)}`);
    assert.equal(hedged.secret, false, `${label}: a secret in the hedged error`);
  }

  const read = (options: RequestOptions) => (container: Container) => container.item("i0", "p0").read(options);

  for (const [label, excludedLocations] of [
    ["one region name of 100 KB", ["z".repeat(100_000)]],
    ["5000 names of 1 KB", Array.from({ length: 5000 }, (_, i) => `${"n".repeat(1000)}${i}`)],
    ["2000 names of 25 KB (50 MB)", Array.from({ length: 2000 }, (_, i) => `${"m".repeat(25_000)}${i}`)],
    ["names with CR LF, a lone surrogate and NUL", ["West US\r\nX-Injected: 1", "\ud800", "\u0000"]],
  ] as const) {
    it(`excludedLocations with ${label}`, async function () {
      assertSameEnding(await both(read({ excludedLocations: [...excludedLocations] })), label);
    });
  }

  it("excludedLocations of 5001 names, West US among them, with the preferred region slow", async function () {
    const names = ["West US", ...Array.from({ length: 5000 }, (_, i) => `Nowhere ${i}`)];
    assertSameEnding(await both(read({ excludedLocations: names }), true), "5001 names");
  });

  for (const [label, sessionToken] of [
    ["of 100 KB", `0:${"1#".repeat(50_000)}`],
    ["with CR LF", "0:1#1\r\nx-injected: yes"],
  ] as const) {
    it(`a session token ${label}`, async function () {
      assertSameEnding(await both(read({ sessionToken })), `session token ${label}`);
    });
  }

  for (const [index, pk] of unicodeKeys.entries()) {
    it(`a partition key ${JSON.stringify(pk)}: read, query and upsert`, async function () {
      const ending = await both(async (container) => {
        const { statusCode: readStatus = 0 } = await container.item(`u${index}`, pk).read();
        const { resources } = await container.items
          .query({ query: "SELECT * FROM c WHERE c.pk = @pk AND c.id = @id", parameters: [{ name: "@pk", value: pk }, { name: "@id", value: `u${index}` }] }, { partitionKey: pk })
          .fetchAll();
        const { statusCode: upsertStatus = 0 } = await container.items.upsert({ id: `u${index}`, pk });
        return { statusCode: readStatus * 10_000 + resources.length * 1000 + upsertStatus };
      });
      assertSameEnding(ending, `partition key ${JSON.stringify(pk)}`);
    });
  }

  it("a hedged read of a document with a unicode partition key, its preferred region slow, reads the same document", async function () {
    const pk = unicodeKeys[1]!;
    const ending = await both(async (container) => {
      const { statusCode = 0, resource } = await container.item("u1", pk).read<{ pk: string }>();
      return { statusCode: statusCode * 10 + (resource?.pk === pk ? 1 : 0) };
    }, true);
    assertSameEnding(ending, "unicode partition key, slow preferred region");
  });

  it("hedgingRequestOptions refuses a 100 KB excluded region and 10 000 of them, with a short error that names the option", function () {
    for (const excludedRegions of [["y".repeat(100_000)], Array.from({ length: 10_000 }, (_, i) => `R${i}`)]) {
      assert.throws(
        () => hedgingRequestOptions({ excludedRegions }),
        (error: unknown) => error instanceof TypeError && error.message.includes("excludedRegions") && error.message.length < 2_000,
      );
    }
  });
});
