import assert from "node:assert/strict";
import { topologyChangeLines } from "../../../src/topology/topologyLog.js";
import { eastUs, northEurope, westUs } from "../../support/hedgingFixtures.js";

const topology = {
  readRegions: [eastUs, westUs],
  writeRegions: [eastUs],
  multipleWriteLocations: false,
  perPartitionFailover: false,
  crossRegionalHedgingDisabled: false,
};

describe("topologyChangeLines", () => {
  it("the first topology: its regions, multi-write and PPAF state in one line", () => {
    assert.deepEqual(topologyChangeLines(undefined, topology), [
      { key: "topology", line: "Learned the account's topology: read regions East US, West US; write regions East US; multi-write off; per-partition automatic failover off." },
    ]);
    assert.deepEqual(topologyChangeLines(undefined, { ...topology, readRegions: [], writeRegions: [], multipleWriteLocations: true, perPartitionFailover: true }), [
      { key: "topology", line: "Learned the account's topology: read regions none; write regions none; multi-write on; per-partition automatic failover on." },
    ]);
  });

  it("the same topology again: nothing", () => {
    assert.deepEqual(topologyChangeLines(topology, { ...topology, readRegions: [...topology.readRegions] }), []);
  });

  it("a change of read regions, their order or endpoints, of write regions or of multi-write: one line with the new shape", () => {
    const changed = "The account's topology changed: ";
    for (const next of [
      { ...topology, readRegions: [westUs, eastUs] },
      { ...topology, readRegions: [eastUs, westUs, northEurope] },
      { ...topology, readRegions: [eastUs, { ...westUs, endpoint: "https://other-westus.documents.azure.com:443/" }] },
      { ...topology, writeRegions: [westUs] },
      { ...topology, multipleWriteLocations: true },
    ]) {
      const lines = topologyChangeLines(topology, next);
      assert.equal(lines.length, 1, JSON.stringify(next));
      assert.equal(lines[0]?.key, "topology");
      assert.ok(lines[0]?.line.startsWith(changed), lines[0]?.line);
    }
    assert.deepEqual(topologyChangeLines(topology, { ...topology, multipleWriteLocations: true }), [
      { key: "topology", line: "The account's topology changed: read regions East US, West US; write regions East US; multi-write on." },
    ]);
  });

  it("PPAF turning on or off: its own line, which says what it does to followAccount", () => {
    assert.deepEqual(topologyChangeLines(topology, { ...topology, perPartitionFailover: true }), [
      { key: "perPartitionFailover", line: 'The account now reports per-partition automatic failover: hedging set to "followAccount" is on.' },
    ]);
    assert.deepEqual(topologyChangeLines({ ...topology, perPartitionFailover: true }, topology), [
      { key: "perPartitionFailover", line: 'The account no longer reports per-partition automatic failover: hedging set to "followAccount" is off.' },
    ]);
  });

  it("the operator's switch: a line when set, from the first topology on, and when cleared", () => {
    const off = { ...topology, crossRegionalHedgingDisabled: true };
    const set = "The account's disableCrossRegionalHedging switch is set: all hedging is off until the operator clears it.";
    assert.deepEqual(topologyChangeLines(undefined, off).map((line) => line.key), ["topology", "crossRegionalHedgingDisabled"]);
    assert.equal(topologyChangeLines(undefined, off)[1]?.line, set);
    assert.deepEqual(topologyChangeLines(topology, off), [{ key: "crossRegionalHedgingDisabled", line: set }]);
    assert.deepEqual(topologyChangeLines(off, off), []);
    assert.deepEqual(topologyChangeLines(off, topology), [
      { key: "crossRegionalHedgingDisabled", line: "The account's disableCrossRegionalHedging switch was cleared: hedging is back as configured." },
    ]);
  });

  it("several changes at once: a line for each, the regions first", () => {
    const next = { ...topology, readRegions: [westUs], perPartitionFailover: true, crossRegionalHedgingDisabled: true };
    assert.deepEqual(topologyChangeLines(topology, next).map((line) => line.key), ["topology", "perPartitionFailover", "crossRegionalHedgingDisabled"]);
  });
});
