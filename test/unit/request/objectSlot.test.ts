import assert from "node:assert/strict";
import { inspect } from "node:util";
import { ObjectSlot } from "../../../src/request/objectSlot.js";

describe("ObjectSlot", () => {
  it("keeps a value per object, out of the object's keys and JSON", () => {
    const slot = new ObjectSlot<string>("test value");
    const first = { id: 1 };
    const second = { id: 2 };
    slot.set(first, "one");
    assert.equal(slot.get(first), "one");
    assert.equal(slot.get(second), undefined);
    slot.set(first, "changed");
    assert.equal(slot.get(first), "changed");
    assert.deepEqual(Object.keys(first), ["id"]);
    assert.equal(JSON.stringify(first), '{"id":1}');
    const names: string[] = [];
    for (const name in first) names.push(name);
    assert.deepEqual(names, ["id"]);
  });

  it("keeps two slots of one description apart", () => {
    const a = new ObjectSlot<number>("same");
    const b = new ObjectSlot<number>("same");
    const target = {};
    a.set(target, 1);
    assert.equal(b.get(target), undefined);
  });

  it("keeps a value for an object that takes no new property (frozen, sealed, not extensible)", () => {
    const slot = new ObjectSlot<string>("test value");
    for (const target of [Object.freeze({}), Object.seal({}), Object.preventExtensions({})]) {
      slot.set(target, "kept");
      assert.equal(slot.get(target), "kept");
      assert.equal(Object.getOwnPropertySymbols(target).length, 0);
    }
  });

  it("reads a value set before the object was frozen", () => {
    const slot = new ObjectSlot<string>("test value");
    const target = {};
    slot.set(target, "before");
    Object.freeze(target);
    assert.equal(slot.get(target), "before");
    assert.match(inspect(target), /test value/, "a property the object's own inspection shows, under its description");
  });

  it("reads the latest value of an object frozen between two values, not the one it held when frozen", () => {
    const slot = new ObjectSlot<string>("test value");
    for (const lock of [Object.freeze, Object.seal, Object.preventExtensions]) {
      const target = {};
      slot.set(target, "before");
      lock(target);
      slot.set(target, "after");
      assert.equal(slot.get(target), "after");
    }
  });

  it("clears a value without making an object, before or after the object was frozen, and a cleared value stays cleared", () => {
    const slot = new ObjectSlot<string>("test value");
    const open = {};
    slot.set(open, "value");
    slot.clear(open);
    assert.equal(slot.get(open), undefined);
    slot.clear({});
    for (const lock of [Object.freeze, Object.seal, Object.preventExtensions]) {
      const target = {};
      slot.set(target, "before");
      lock(target);
      slot.clear(target);
      assert.equal(slot.get(target), undefined, "the value it kept from before is cleared too");
      slot.set(target, "again");
      assert.equal(slot.get(target), "again");
    }
  });

  it("gives a copy made by spread or Object.assign no value: a value belongs to the object it was set on", () => {
    const slot = new ObjectSlot<string>("test value");
    const original = { id: 1 };
    slot.set(original, "original's");
    const spread = { ...original };
    const assigned = Object.assign({}, original);
    assert.equal(slot.get(spread), undefined);
    assert.equal(slot.get(assigned), undefined);
    slot.set(spread, "spread's");
    assert.equal(slot.get(spread), "spread's");
    assert.equal(slot.get(original), "original's");
    assert.equal(slot.get(Object.freeze({ ...original })), undefined);
  });
});
