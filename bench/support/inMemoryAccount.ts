// A Cosmos DB account in memory, for the overhead suite: an https.Agent whose
// connections are in-memory streams that answer every request at once, as a
// three-region gateway would (the account read and a point read). The real
// @azure/cosmos client and Node's HTTP client run in full; no socket, TLS or
// server shares the CPU, so what the client's own code costs stands out from
// the noise of a busy machine.
import { Agent } from "node:https";
import { Duplex } from "node:stream";

/** The regions of the account, as its database-account response lists them (default port written out, as the service does). */
export const inMemoryRegions = [
  { name: "East US", endpoint: "https://acct-eastus.documents.azure.com:443/" },
  { name: "West US", endpoint: "https://acct-westus.documents.azure.com:443/" },
  { name: "North Europe", endpoint: "https://acct-northeurope.documents.azure.com:443/" },
] as const;

const accountBody = JSON.stringify({
  id: "acct",
  _self: "",
  _rid: "acct.documents.azure.com",
  media: "//media/",
  addresses: "//addresses/",
  _dbs: "//dbs/",
  writableLocations: [{ name: inMemoryRegions[0].name, databaseAccountEndpoint: inMemoryRegions[0].endpoint }],
  readableLocations: inMemoryRegions.map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint })),
  enableMultipleWriteLocations: false,
  userConsistencyPolicy: { defaultConsistencyLevel: "Session" },
  systemReplicationPolicy: { minReplicaSetSize: 3, maxReplicasetSize: 4 },
  readPolicy: { primaryReadCoefficient: 1, secondaryReadCoefficient: 1 },
  queryEngineConfiguration: "{}",
});

const itemBody = JSON.stringify({ id: "item", pk: "pk", value: 1, _rid: "AAAAAAAAAAABAAAAAAAAAA==", _self: "dbs/AAAAAA==/colls/AAAAAAAAAAA=/docs/AAAAAAAAAAABAAAAAAAAAA==/", _etag: '"00000000-0000-0000-0000-000000000000"', _attachments: "attachments/", _ts: 1764547200 });

/** Answers given so far, which number their activity ids. */
let answered = 0;

/** The bytes of the gateway's answer to a GET of `path`: the account at "/", the item anywhere else. */
function answer(path: string): Buffer {
  const body = path === "/" ? accountBody : itemBody;
  answered += 1;
  const activityId = `28f12d89-a5cc-4e05-9298-${String(answered % 1_000_000_000_000).padStart(12, "0")}`;
  return Buffer.from(
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-ms-request-charge: 1\r\n" +
      `x-ms-activity-id: ${activityId}\r\nx-ms-session-token: 0:0#1\r\nx-ms-serviceversion: version=2.14.0.0\r\n` +
      "x-ms-gatewayversion: version=2.14.0\r\nx-ms-alt-content-path: dbs/bench/colls/items\r\nx-ms-content-path: AAAAAAAAAAA=\r\n" +
      `etag: "00000000-0000-0000-0000-000000000000"\r\nDate: Mon, 01 Dec 2025 00:00:00 GMT\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: keep-alive\r\n\r\n${body}`,
    "latin1",
  );
}

/**
 * One connection: parses each request's head (GETs only, so no body) and
 * pushes the answer on a microtask, so that no answer arrives inside the
 * write that asked for it.
 */
class InMemoryConnection extends Duplex {
  // Stand-ins for the parts of a net.Socket beyond the stream that Node's HTTP client and agent may read or call (here and the no-op methods below).
  readonly remoteAddress = "127.0.0.1";
  readonly remotePort = 443;
  /** Request bytes written but not yet parsed into a whole head. */
  private pending = "";

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.pending += chunk.toString("latin1");
    let end = this.pending.indexOf("\r\n\r\n");
    while (end !== -1) {
      const requestLine = this.pending.slice(0, this.pending.indexOf("\r\n"));
      this.pending = this.pending.slice(end + 4);
      const reply = answer(requestLine.split(" ")[1] ?? "/");
      queueMicrotask(() => this.push(reply));
      end = this.pending.indexOf("\r\n\r\n");
    }
    callback();
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  setTimeout(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }
}

/** An agent for `CosmosClientOptions.agent` whose connections reach {@link inMemoryRegions}' gateway in memory. */
export class InMemoryAccountAgent extends Agent {
  constructor() {
    super({ keepAlive: true });
  }

  override createConnection(): Duplex {
    const connection = new InMemoryConnection();
    queueMicrotask(() => connection.emit("connect"));
    return connection;
  }
}
