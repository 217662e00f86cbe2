import test from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../src/backoff.js';

test('first retry is within 0.25-0.5 s, then the range doubles', () => {
  for (const r of [0, 0.5, 0.999999]) {
    const b = new Backoff({ random: () => r });
    const w = b.next();
    assert.ok(w >= 250 && w <= 500, `first wait ${w}`);
    const w2 = b.next();
    assert.ok(w2 >= 500 && w2 <= 1000, `second wait ${w2}`);
    const w3 = b.next();
    assert.ok(w3 >= 1000 && w3 <= 2000, `third wait ${w3}`);
  }
});

test('waits are capped at 7.5-15 s and drawn within the range', () => {
  const b = new Backoff();
  const seen = [];
  for (let i = 0; i < 200; i++) seen.push(b.next());
  for (const w of seen.slice(10)) assert.ok(w >= 7500 && w <= 15000, `capped wait ${w}`);
  const late = seen.slice(10);
  assert.ok(Math.max(...late) - Math.min(...late) > 2000, 'jitter spreads the capped waits');
  assert.deepEqual(b.range(100), [7500, 15000]);
});

test('each wait is random (jitter) and reset starts over', () => {
  const draws = new Set();
  for (let i = 0; i < 50; i++) draws.add(Math.round(new Backoff().next()));
  assert.ok(draws.size > 10, 'first waits vary');
  const b = new Backoff({ random: () => 0 });
  b.next();
  b.next();
  b.next();
  b.reset();
  assert.equal(b.next(), 250);
});
