import test from 'node:test';
import assert from 'node:assert/strict';
import { Glide } from '../src/glide.js';

test('a cursor glides from where it is drawn to the new target over one tick', () => {
  const g = new Glide(50);
  g.target([0, 0], 0);
  assert.deepEqual(g.at(0), [0, 0], 'the first position is jumped to');
  g.target([100, 50], 100);
  assert.deepEqual(g.at(100), [0, 0]);
  assert.deepEqual(g.at(125), [50, 25]);
  assert.deepEqual(g.at(150), [100, 50]);
  assert.deepEqual(g.at(500), [100, 50], 'it stays at the target');
  assert.equal(g.moving(140), true);
  assert.equal(g.moving(151), false);
});

test('a new target mid-glide starts from the drawn position (no jump)', () => {
  const g = new Glide(50);
  g.target([0, 0], 0);
  g.target([100, 0], 0);
  g.target([100, 100], 25); // drawn at [50, 0] then
  assert.deepEqual(g.at(25), [50, 0]);
  assert.deepEqual(g.at(50), [75, 50]);
  g.target(null, 60);
  assert.equal(g.at(60), null);
});
