import test from 'node:test';
import assert from 'node:assert/strict';
import { applyOps, chunkOps, compactOps, DocState, pagesOf, shapesOn } from '../src/doc.js';

test('put, set (null removes), delete, and set on a missing node does nothing', () => {
  const d = applyOps({}, [
    { op: 'put', id: 'p', props: { type: 'page', name: 'P' } },
    { op: 'put', id: 'r', props: { page: 'p', x: 1, fill: '#f00' } },
    { op: 'set', id: 'r', props: { x: 5, fill: null } },
    { op: 'set', id: 'gone', props: { x: 5 } },
  ]);
  assert.deepEqual(d, { p: { type: 'page', name: 'P' }, r: { page: 'p', x: 5 } });
  applyOps(d, [{ op: 'delete', id: 'r' }, { op: 'delete', id: 'r' }, { op: 'set', id: 'r', props: { x: 9 } }]);
  assert.deepEqual(d, { p: { type: 'page', name: 'P' } });
  assert.deepEqual(pagesOf(d).map((p) => p.id), ['p']);
});

test('compactOps has the same effect as the ops in order, on any starting document', () => {
  const starts = [{}, { a: { x: 0, keep: 1 } }, { a: { x: 0 }, b: { y: 1 } }];
  const seqs = [
    [{ op: 'set', id: 'a', props: { x: 1 } }, { op: 'set', id: 'a', props: { x: 2, y: 3 } }, { op: 'set', id: 'a', props: { y: null } }],
    [{ op: 'put', id: 'a', props: { x: 1, y: 1 } }, { op: 'set', id: 'a', props: { y: null, z: 2 } }],
    [{ op: 'set', id: 'a', props: { x: 1 } }, { op: 'delete', id: 'a' }, { op: 'set', id: 'a', props: { x: 3 } }],
    [{ op: 'delete', id: 'a' }, { op: 'put', id: 'a', props: { x: 7 } }, { op: 'set', id: 'b', props: { y: 2 } }, { op: 'set', id: 'a', props: { q: 1 } }],
  ];
  for (const seq of seqs) {
    const merged = compactOps(seq);
    assert.ok(new Set(merged.map((o) => o.id)).size === merged.length, 'one op per node');
    for (const s of starts) {
      const a = applyOps(structuredClone(s), seq);
      const b = applyOps(structuredClone(s), merged);
      assert.deepEqual(b, a, JSON.stringify({ seq, s }));
    }
  }
});

test('a thousand drag moves merge into one op', () => {
  const ops = [];
  for (let i = 0; i < 1000; i++) ops.push({ op: 'set', id: 'r', props: { x: i, y: i } });
  assert.deepEqual(compactOps(ops), [{ op: 'set', id: 'r', props: { x: 999, y: 999 } }]);
});

test('chunkOps respects the op and byte limits', () => {
  const ops = [];
  for (let i = 0; i < 2500; i++) ops.push({ op: 'set', id: `n${i}`, props: { x: i } });
  const chunks = chunkOps(ops, { maxOps: 1000 });
  assert.deepEqual(chunks.map((c) => c.length), [1000, 1000, 500]);
  const big = chunkOps(ops, { maxOps: 1000, maxBytes: 10_000 });
  for (const c of big) assert.ok(JSON.stringify(c).length <= 10_000 + 100);
  assert.equal(big.flat().length, 2500);
});

test('DocState: versions in order, gaps detected, pending ops rebased on top', () => {
  const s = new DocState();
  s.reset(3, { r: { page: 'p', x: 0, y: 0 } });
  assert.equal(s.applyServer(3, []), 'old');
  assert.equal(s.applyServer(5, []), 'gap');
  assert.equal(s.applyServer(4, [{ op: 'set', id: 'r', props: { y: 9 } }]), 'applied');
  const view = s.rebase([{ op: 'set', id: 'r', props: { x: 7 } }]);
  assert.deepEqual(view.r, { page: 'p', x: 7, y: 9 });
  assert.deepEqual(s.server.r, { page: 'p', x: 0, y: 9 }, 'server state untouched by pending ops');
  s.applyServer(5, [{ op: 'delete', id: 'r' }]);
  assert.deepEqual(s.rebase([{ op: 'set', id: 'r', props: { x: 7 } }]), {}, 'a drag never resurrects a deleted shape');
  assert.deepEqual(shapesOn({ a: { page: 'p', z: 2 }, b: { page: 'p', z: 1 }, c: { page: 'q' } }, 'p').map((x) => x.id), ['b', 'a']);
});
