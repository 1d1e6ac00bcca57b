import assert from "node:assert/strict";
import { StallDetector, stallDefaults } from "../../../src/learning/stallDetector.js";

/** A detector fed by hand: answers at given times, the healthy tail at 10 ms, every answer in bucket 0. */
function detector(): { offer(at: number, latencyMs: number): void; settle(at: number): void; readonly stalls: number[][] } {
  const stalls: number[][] = [];
  const stalled = new StallDetector((epochs, latencies) => {
    assert.ok(epochs.every((epoch) => epoch === 0));
    stalls.push([...latencies]);
  });
  return {
    offer: (at, latencyMs) => stalled.answer(at, 0, latencyMs, 10),
    settle: (at) => stalled.settle(at),
    stalls,
  };
}

/** Healthy answers every `spacingMs` over `[fromMs, toMs)`. */
function calm(offer: (at: number, latencyMs: number) => void, fromMs: number, toMs: number, spacingMs = 10): void {
  for (let at = fromMs; at < toMs; at += spacingMs) offer(at, 2);
}

describe("StallDetector", () => {
  it("reports a burst of slow answers after a calm stretch once three healthy answers in a row follow it", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    for (const [at, latency] of [
      [3000, 30],
      [3010, 31],
      [3020, 2],
      [3030, 32],
      [3040, 33],
    ] as const) {
      offer(at, latency);
    }
    offer(3050, 2);
    offer(3060, 2);
    assert.deepEqual(stalls, [], "two healthy answers do not end it: a read sent after a stall can answer before its last reads");
    offer(3070, 2);
    assert.deepEqual(stalls, [[30, 31, 32, 33]], "the healthy answer inside it is not taken out");
  });

  it("ends a burst after gapMs without a slow answer when no more answers come", () => {
    const { offer, settle, stalls } = detector();
    calm(offer, 0, 3000);
    for (const at of [3000, 3010, 3020]) offer(at, 40);
    settle(3020 + stallDefaults.gapMs);
    assert.deepEqual(stalls, []);
    settle(3021 + stallDefaults.gapMs);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });

  it("takes two slow answers for the healthy tail, not a stall", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    offer(3000, 40);
    offer(3010, 40);
    calm(offer, 3020, 4000);
    assert.deepEqual(stalls, []);
  });

  it("takes a burst where fewer than half the answers are slow for a tail, not a stall", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    // Slow, healthy, healthy, slow, healthy, healthy, slow: 3 of 7.
    for (let i = 0; i < 7; i++) offer(3000 + i * 10, i % 3 === 0 ? 40 : 2);
    calm(offer, 3070, 4000);
    assert.deepEqual(stalls, []);
  });

  it("takes a slowdown longer than maxStallMs for the region's, and the bursts after it too", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    for (let at = 3000; at <= 3000 + 3 * stallDefaults.maxStallMs; at += 10) offer(at, 40);
    calm(offer, 4600, 4700);
    assert.deepEqual(stalls, [], "every burst of it came after slow answers, and the first was too long");
    // Once the context is calm again, a stall counts.
    calm(offer, 4700, 7000);
    for (const at of [7000, 7010, 7020]) offer(at, 40);
    calm(offer, 7030, 7100);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });

  it("takes bursts one after another, as a lasting slowdown shows at a low read rate, for stalls only while the stretch before them was calm", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000, 33);
    // Three slow answers, three healthy ones, and again: half the answers slow for two seconds, three slow ones in each 200 ms.
    for (let i = 0; i < 60; i++) offer(3000 + i * 33, Math.floor(i / 3) % 2 === 0 ? 40 : 2);
    const discounted = stalls.reduce((sum, stall) => sum + stall.length, 0);
    // Until the context's own slow share passes maxContextSlowShare, a burst still stands out of it: that allowance and one burst more.
    const allowance = stallDefaults.maxContextSlowShare * (stallDefaults.contextMs / 33) + 3;
    assert.ok(discounted > 0 && discounted <= allowance, `at most the context's allowance of slow answers and one burst are taken out: ${discounted} of 30`);
  });

  it("takes a stretch with a lasting tail of stragglers within maxStallMs (one answer in eight 150 ms late) for calm, and one with a quarter slow for not", () => {
    for (const [everyNth, reported] of [
      [8, true],
      [4, false],
    ] as const) {
      const { offer, stalls } = detector();
      for (let i = 0; i < 300; i++) offer(i * 10, i % everyNth === everyNth - 1 ? 150 : 2);
      for (const at of [3000, 3010, 3020]) offer(at, 40);
      calm(offer, 3030, 3100);
      assert.deepEqual(stalls.length > 0 && stalls.some((stall) => stall.includes(40)), reported, `one answer in ${everyNth} slow before the burst`);
    }
  });

  it("leaves a straggler's answer (later than the healthy tail by more than maxStallMs) out: it neither opens nor ends a burst", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    offer(3000, 1010);
    offer(3001, 1010);
    offer(3002, 1010);
    calm(offer, 3010, 3100);
    assert.deepEqual(stalls, []);
    for (const at of [4000, 4010]) offer(at, 40);
    for (let i = 0; i < 5; i++) offer(4011 + i, 1010);
    offer(4020, 40);
    calm(offer, 4030, 4100);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });

  it("keeps the bound a burst opened with: its own answers never raise it", () => {
    const stalls: number[][] = [];
    const stalled = new StallDetector((_, latencies) => stalls.push([...latencies]));
    for (let at = 0; at < 3000; at += 10) stalled.answer(at, 0, 2, 10);
    stalled.answer(3000, 0, 30, 10);
    // A young window's p99 would be the stall's own answers by now.
    stalled.answer(3010, 0, 30, 30);
    stalled.answer(3020, 0, 30, 30);
    for (let at = 3030; at < 3100; at += 10) stalled.answer(at, 0, 2, 30);
    assert.deepEqual(stalls, [[30, 30, 30]]);
  });
  it("takes an answer at the healthy tail for healthy, and one maxStallMs past it for slow", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    offer(3000, 10 + stallDefaults.maxStallMs);
    offer(3010, 40);
    offer(3020, 40);
    offer(3030, 10);
    offer(3040, 2);
    offer(3050, 2);
    assert.deepEqual(stalls, [[10 + stallDefaults.maxStallMs, 40, 40]]);
  });

  it("keeps a burst whose last slow answer comes maxStallMs after its first, and ends one that goes on longer", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    for (const at of [3000, 3250, 3000 + stallDefaults.maxStallMs]) offer(at, 40);
    for (const at of [3510, 3520, 3530]) offer(at, 2);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });

  it("takes a burst of exactly half slow answers, up to its last slow one, for a stall", () => {
    const { offer, stalls } = detector();
    calm(offer, 0, 3000);
    for (const [at, latency] of [
      [3000, 40],
      [3010, 2],
      [3020, 2],
      [3030, 41],
      [3040, 2],
      [3050, 42],
    ] as const) {
      offer(at, latency);
    }
    for (const at of [3060, 3070, 3080]) offer(at, 2);
    assert.deepEqual(stalls, [[40, 41, 42]]);
  });

  it("takes a context of exactly a fifth slow answers for calm, the burst's own slot so far among them", () => {
    const { offer, stalls } = detector();
    // A lone slow answer in the slot at 2 s, with three healthy ones that end its burst: 1 slow of 4 there.
    offer(2000, 40);
    for (const at of [2010, 2020, 2030]) offer(at, 2);
    // One healthy answer in the burst's own slot before it: 1 slow of 5 in the context.
    offer(3000, 2);
    for (const at of [3010, 3020, 3030]) offer(at, 40);
    for (const at of [3040, 3050, 3060]) offer(at, 2);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });

  it("forgets the answers of a slot contextMs old, though the burst's slot takes its place in the ring", () => {
    const { offer, stalls } = detector();
    const slotMs = stallDefaults.contextMs / 8;
    // A slot with a quarter slow answers, exactly contextMs before the burst's slot: outside the burst's context.
    offer(3000 - stallDefaults.contextMs, 40);
    for (const at of [1010, 1020, 1030]) offer(at, 2);
    assert.equal(3000 - stallDefaults.contextMs, 4 * slotMs);
    for (const at of [3000, 3010, 3020]) offer(at, 40);
    for (const at of [3030, 3040, 3050]) offer(at, 2);
    assert.deepEqual(stalls, [[40, 40, 40]]);
  });
});
