import test from 'node:test';
import assert from 'node:assert/strict';
import { PresenceThrottle } from '../src/presence.js';
import { FakeClock } from './helpers.mjs';

function setup(opts = {}) {
  const clock = new FakeClock();
  const sent = [];
  const p = new PresenceThrottle({ send: (m) => sent.push({ at: clock.t, ...m }), now: clock.now, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, ...opts });
  p.setEnabled(true);
  return { clock, sent, p };
}

test('at most 20 a second, coalesced to the latest state', () => {
  const { clock, sent, p } = setup();
  for (let i = 0; i < 1000; i++) {
    p.update({ cursor: [i, i] });
    clock.tick(1); // 1000 updates over one second
  }
  clock.tick(100);
  assert.ok(sent.length <= 21 && sent.length >= 19, `sent ${sent.length}`);
  for (let i = 1; i < sent.length; i++) assert.ok(sent[i].at - sent[i - 1].at >= 50, 'spaced by 50 ms');
  assert.deepEqual(sent.at(-1).cursor, [999, 999], 'the last state always goes out');
});

test('only changed fields are sent, nothing when nothing changed', () => {
  const { clock, sent, p } = setup();
  p.update({ page: 'p1', cursor: [1, 2], sel: [], camera: [0, 0, 1] });
  clock.tick(100);
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0], { at: 0, type: 'presence', page: 'p1', cursor: [1, 2], sel: [], camera: [0, 0, 1] });
  p.update({ cursor: [1, 2] }); // the same
  clock.tick(1000);
  assert.equal(sent.length, 1, 'unchanged state sends nothing');
  p.update({ sel: ['a'] });
  clock.tick(100);
  assert.deepEqual(sent[1], { at: 1100, type: 'presence', sel: ['a'] });
});

test('camera at most 5 a second', () => {
  const { clock, sent, p } = setup();
  for (let i = 0; i < 100; i++) {
    p.update({ camera: [i, 0, 1] });
    clock.tick(10); // 100 changes a second
  }
  clock.tick(500);
  const cams = sent.filter((m) => 'camera' in m);
  assert.ok(cams.length <= 6 && cams.length >= 4, `camera sends ${cams.length}`);
  for (let i = 1; i < cams.length; i++) assert.ok(cams[i].at - cams[i - 1].at >= 200);
  assert.deepEqual(cams.at(-1).camera, [99, 0, 1]);
});

test('camera held back does not hold back the cursor', () => {
  const { clock, sent, p } = setup();
  p.update({ camera: [0, 0, 1] });
  clock.tick(60);
  p.update({ camera: [5, 0, 1], cursor: [3, 3] });
  clock.tick(60);
  const second = sent[1];
  assert.deepEqual(second.cursor, [3, 3]);
  assert.ok(!('camera' in second), 'camera waits for its 200 ms');
  clock.tick(200);
  assert.ok(sent.some((m) => m.camera && m.camera[0] === 5));
});

test('nothing while hidden; the latest goes when visible again', () => {
  const { clock, sent, p } = setup();
  p.setHidden(true);
  for (let i = 0; i < 50; i++) {
    p.update({ cursor: [i, 0] });
    clock.tick(20);
  }
  assert.equal(sent.length, 0);
  p.setHidden(false);
  clock.tick(10);
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].cursor, [49, 0]);
});

test('presence-rate lowers (and raises) the rate', () => {
  const { clock, sent, p } = setup();
  p.setRate(5);
  for (let i = 0; i < 100; i++) {
    p.update({ cursor: [i, 0] });
    clock.tick(10);
  }
  assert.ok(sent.length <= 6, `at 5 Hz: ${sent.length}`);
  p.setRate(50); // never above our own 20
  const before = sent.length;
  for (let i = 0; i < 100; i++) {
    p.update({ cursor: [i, 1] });
    clock.tick(10);
  }
  const n = sent.length - before;
  assert.ok(n >= 18 && n <= 21, `back to 20 Hz: ${n}`);
});

test('disabled (no socket) sends nothing; re-enabled sends the full state', () => {
  const { clock, sent, p } = setup();
  p.update({ page: 'p', cursor: [1, 1] });
  clock.tick(100);
  p.setEnabled(false);
  p.update({ cursor: [2, 2] });
  clock.tick(100);
  assert.equal(sent.length, 1);
  p.setEnabled(true);
  clock.tick(100);
  assert.deepEqual(sent[1], { at: 200, type: "presence", page: "p", cursor: [2, 2] });
});
