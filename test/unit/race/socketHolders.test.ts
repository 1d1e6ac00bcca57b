import assert from "node:assert/strict";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { holdSocket, yieldSocketsTo } from "../../../src/race/socketHolders.js";
import { eastUs, northEurope, pointRead, westUs } from "../../support/hedgingFixtures.js";
import type { RegionEndpoint } from "../../../src/topology/regionCache.js";

/** The lists of a Node.js agent's pool that `socketWaitAt` reads, by connection name. */
interface FakePool {
  maxSockets: number;
  maxTotalSockets: number;
  totalSocketCount: number;
  sockets: Record<string, unknown[]>;
  freeSockets: Record<string, unknown[]>;
  requests: Record<string, unknown[]>;
}

const prefixOf = (region: RegionEndpoint): string => `${new URL(region.endpoint).hostname}:443:`;

function poolOf(bounds: Partial<FakePool> = {}): FakePool {
  return { maxSockets: Infinity, maxTotalSockets: Infinity, totalSocketCount: 0, sockets: {}, freeSockets: {}, requests: {}, ...bounds };
}

/** A socket of the pool busy with a request to `region`. */
function busy(pool: FakePool, region: RegionEndpoint): void {
  (pool.sockets[prefixOf(region)] ??= []).push({});
  pool.totalSocketCount += 1;
}

function on(pool: FakePool, region: RegionEndpoint): PipelineRequest {
  const request = pointRead(region);
  request.agent = pool as unknown as NonNullable<PipelineRequest["agent"]>;
  return request;
}

describe("socketHolders: a hedge gives its socket up to a request of the SDK's", () => {
  const released: Array<() => void> = [];
  const hold = (arm: PipelineRequest, cut: string[], name: string): void => {
    const release = holdSocket(arm, () => void cut.push(name));
    if (release !== undefined) released.push(release);
  };
  afterEach(() => {
    // Every holder is released, as a hedge's settlement releases it, so that no test leaves one for the next.
    for (const release of released.splice(0)) release();
  });

  it("registers nothing where the agent bounds no socket, and a request there cuts nothing", () => {
    const pool = poolOf();
    assert.equal(holdSocket(on(pool, westUs), () => assert.fail("nothing holds a socket of an unbounded pool")), undefined);
    yieldSocketsTo(on(pool, westUs));
  });

  it("where maxSockets is full for the host, the newest hedge to that host is cut, and only for the request that would wait", () => {
    const pool = poolOf({ maxSockets: 1 });
    const cut: string[] = [];
    hold(on(pool, westUs), cut, "west, older");
    busy(pool, westUs);
    hold(on(pool, northEurope), cut, "north");
    busy(pool, northEurope);
    yieldSocketsTo(on(pool, eastUs));
    assert.deepEqual(cut, [], "East US has room for a socket of its own: nothing waits");
    const sdkRequest = on(pool, westUs);
    yieldSocketsTo(sdkRequest);
    assert.deepEqual(cut, ["west, older"], "the hedge holding West US's socket, not North Europe's");
    yieldSocketsTo(sdkRequest);
    assert.deepEqual(cut, ["west, older"], "a request asked about again by a second layer cuts no second hedge");
  });

  it("cuts the newest of two hedges to the full host, one a request", () => {
    const pool = poolOf({ maxSockets: 2 });
    const cut: string[] = [];
    hold(on(pool, westUs), cut, "first");
    hold(on(pool, westUs), cut, "second");
    busy(pool, westUs);
    busy(pool, westUs);
    yieldSocketsTo(on(pool, westUs));
    assert.deepEqual(cut, ["second"]);
    yieldSocketsTo(on(pool, westUs));
    assert.deepEqual(cut, ["second", "first"]);
  });

  it("where maxTotalSockets is full, a hedge to the request's host first; one to another host only while the request's host has no socket busy", () => {
    const pool = poolOf({ maxTotalSockets: 3 });
    const cut: string[] = [];
    hold(on(pool, westUs), cut, "west");
    busy(pool, westUs);
    hold(on(pool, northEurope), cut, "north");
    busy(pool, northEurope);
    busy(pool, eastUs);
    // Node gives a queued East US request a freed socket of another host only while East US has none busy.
    yieldSocketsTo(on(pool, eastUs));
    assert.deepEqual(cut, [], "East US has a socket busy: cutting another host's hedge would free nothing for it");
    yieldSocketsTo(on(pool, westUs));
    assert.deepEqual(cut, ["west"], "the hedge to the request's own host, though North Europe's is newer");
    pool.sockets[prefixOf(eastUs)] = [];
    yieldSocketsTo(on(pool, eastUs));
    assert.deepEqual(cut, ["west", "north"], "East US has no socket busy: another host's hedge frees one for it");
  });

  it("where maxSockets is full for the request's host and no hedge holds a socket of that host, cuts nothing: another host's hedge frees nothing for it", () => {
    const pool = poolOf({ maxSockets: 1 });
    const cut: string[] = [];
    hold(on(pool, northEurope), cut, "north");
    busy(pool, northEurope);
    // East US's one socket carries a request of the SDK's, not a hedge.
    busy(pool, eastUs);
    yieldSocketsTo(on(pool, eastUs));
    assert.deepEqual(cut, []);
  });

  it("a request of another agent, its host full there, cuts no hedge of this one", () => {
    const hedgesPool = poolOf({ maxSockets: 1 });
    const otherPool = poolOf({ maxSockets: 1 });
    const cut: string[] = [];
    hold(on(hedgesPool, westUs), cut, "west");
    busy(hedgesPool, westUs);
    busy(otherPool, westUs);
    yieldSocketsTo(on(otherPool, westUs));
    assert.deepEqual(cut, []);
  });

  it("cuts nothing while a socket is free for the request, or once the hedge has settled and released it", () => {
    const pool = poolOf({ maxSockets: 1 });
    const cut: string[] = [];
    const release = holdSocket(on(pool, westUs), () => void cut.push("west"));
    busy(pool, westUs);
    pool.freeSockets[prefixOf(westUs)] = [{}];
    yieldSocketsTo(on(pool, westUs));
    assert.deepEqual(cut, [], "a free socket serves the request");
    pool.freeSockets = {};
    release?.();
    yieldSocketsTo(on(pool, westUs));
    assert.deepEqual(cut, [], "a settled hedge holds nothing");
  });

  it("a hedge passing a policy of this package below its race never cuts another hedge", () => {
    const pool = poolOf({ maxSockets: 1 });
    const cut: string[] = [];
    hold(on(pool, westUs), cut, "first");
    busy(pool, westUs);
    const second = on(pool, westUs);
    hold(second, cut, "second");
    yieldSocketsTo(second);
    assert.deepEqual(cut, []);
  });
});
