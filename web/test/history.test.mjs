import test from 'node:test';
import assert from 'node:assert/strict';
import { dayKey, dayLabel, editorsText, groupByDay, HistoryApi, labelOf, marksOf, permissions, timeOf, VersionList } from '../src/history.js';

const at = (y, m, d, hh = 12, mm = 0) => new Date(y, m - 1, d, hh, mm).getTime();
const v = (id, created_at, extra = {}) => ({ id, version: id * 10, created_at, kind: 'auto', title: null, description: null, editors: [], restored_from: null, bytes: 10, ...extra });

/** A server of `n` versions (ids 1..n) answering pages as the node does. */
function source(n) {
  const all = Array.from({ length: n }, (_, i) => v(i + 1, at(2026, 12, 1) + i * 60_000));
  const calls = [];
  return {
    all,
    calls,
    async list({ before, limit }) {
      calls.push({ before, limit });
      const older = all.filter((x) => before === null || x.id < before).sort((a, b) => b.id - a.id);
      const page = older.slice(0, limit);
      return { versions: page, next: older.length > limit ? page[page.length - 1].id : null };
    },
  };
}

test('groups newest-first versions by local day, labelled Today, Yesterday, then dates', () => {
  const now = at(2026, 12, 3, 18);
  const list = [v(5, at(2026, 12, 3, 17, 5)), v(4, at(2026, 12, 3, 0, 1)), v(3, at(2026, 12, 2, 23, 59)), v(2, at(2026, 11, 20, 9)), v(1, at(2025, 11, 20, 9))];
  const groups = groupByDay(list, now);
  assert.deepEqual(groups.map((g) => [g.day, g.versions.map((x) => x.id)]), [
    ['2026-12-03', [5, 4]], ['2026-12-02', [3]], ['2026-11-20', [2]], ['2025-11-20', [1]],
  ]);
  assert.equal(groups[0].label, 'Today');
  assert.equal(groups[1].label, 'Yesterday');
  assert.match(groups[2].label, /20 Nov/);
  assert.doesNotMatch(groups[2].label, /2026/, 'this year goes without its year');
  assert.match(groups[3].label, /2025/);
  assert.equal(dayKey(at(2026, 1, 1, 0, 0)), '2026-01-01');
  assert.equal(dayLabel('2026-01-01', at(2026, 1, 2, 0, 30)), 'Yesterday', 'across a year end');
  assert.equal(timeOf(at(2026, 12, 3, 9, 5)), '09:05');
  assert.deepEqual(groupByDay([], now), []);
});

test('labels: titles of named versions, Autosave, Restored from', () => {
  assert.equal(labelOf(v(1, 0, { kind: 'named', title: 'Before review' })), 'Before review');
  assert.equal(labelOf(v(2, 0)), 'Autosave');
  assert.equal(labelOf(v(3, 0, { kind: 'restore', title: 'Restored from “Before review”', restored_from: 1 })), 'Restored from “Before review”');
  assert.equal(labelOf(v(4, 0, { kind: 'restore', restored_from: 2 })), 'Restored from version 2');
  assert.equal(editorsText([]), 'No edits');
  assert.equal(editorsText(['Ann']), 'Ann');
  assert.equal(editorsText(['Ann', 'Bob']), 'Ann and Bob');
  assert.equal(editorsText(['Ann', 'Bob', 'Cleo']), 'Ann, Bob and Cleo');
  assert.equal(editorsText(['Ann', 'Bob', 'Cleo', 'Dan']), 'Ann, Bob, Cleo and 1 other');
  assert.equal(editorsText(['Ann', 'Bob', 'Cleo', 'Dan', 'Eve']), 'Ann, Bob, Cleo and 2 others');
});

test('pages: each more() asks for the versions before the oldest, until next is null', async () => {
  const src = source(7);
  const list = new VersionList(src, { pageSize: 3 });
  assert.equal(list.hasMore, true);
  await list.more();
  assert.deepEqual(list.versions.map((x) => x.id), [7, 6, 5]);
  await Promise.all([list.more(), list.more()]); // one request at a time
  assert.deepEqual(list.versions.map((x) => x.id), [7, 6, 5, 4, 3, 2]);
  assert.equal(list.hasMore, true);
  await list.more();
  assert.deepEqual(list.versions.map((x) => x.id), [7, 6, 5, 4, 3, 2, 1]);
  assert.equal(list.hasMore, false);
  assert.equal(await list.more(), false, 'nothing left to ask for');
  assert.deepEqual(src.calls, [{ before: null, limit: 3 }, { before: 5, limit: 3 }, { before: 2, limit: 3 }]);
  await list.reload();
  assert.deepEqual(list.versions.map((x) => x.id), [7, 6, 5]);
});

test('socket messages: saved adds, renamed replaces, deleted removes; unloaded pages are left alone', async () => {
  const src = source(5);
  const list = new VersionList(src, { pageSize: 2 });
  assert.equal(list.apply({ type: 'version', event: 'saved', version: v(6, 0) }), false, 'before the first page nothing is kept');
  await list.more();
  assert.deepEqual(list.versions.map((x) => x.id), [5, 4]);
  assert.equal(list.apply({ type: 'version', event: 'saved', version: v(6, 0, { kind: 'named', title: 'New' }) }), true);
  assert.equal(list.apply({ type: 'version', event: 'renamed', version: v(4, 0, { kind: 'named', title: 'Renamed' }) }), true);
  assert.equal(list.apply({ type: 'version', event: 'renamed', version: v(2, 0, { kind: 'named', title: 'Old' }) }), false, 'an older page brings it');
  assert.equal(list.apply({ type: 'version', event: 'deleted', version: v(5, 0) }), true);
  assert.equal(list.apply({ type: 'restored', v: 3 }), false);
  assert.deepEqual(list.versions.map((x) => [x.id, labelOf(x)]), [[6, 'New'], [4, 'Renamed']]);
  await list.more();
  await list.more();
  assert.deepEqual(list.versions.map((x) => x.id), [6, 4, 3, 2, 1]);
});

test('who may do what: editors all but delete, the owner all, viewers read only if allowed', () => {
  assert.deepEqual(permissions({ role: 'editor', owner: true, viewersSeeHistory: false }), { read: true, compare: true, name: true, rename: true, restore: true, remove: true });
  assert.deepEqual(permissions({ role: 'editor', owner: false, viewersSeeHistory: false }), { read: true, compare: true, name: true, rename: true, restore: true, remove: false });
  assert.deepEqual(permissions({ role: 'viewer', owner: false, viewersSeeHistory: true }), { read: true, compare: false, name: false, rename: false, restore: false, remove: false });
  assert.deepEqual(permissions({ role: 'viewer', owner: false, viewersSeeHistory: false }), { read: false, compare: false, name: false, rename: false, restore: false, remove: false });
});

test('marks of a comparison, and the routes and bodies the API is asked', async () => {
  const marks = marksOf({ from: '1', to: 'current', added: ['a'], removed: ['b'], changed: [{ id: 'c', props: ['x', 'fill'] }] });
  assert.deepEqual([...marks], [['a', { kind: 'added', props: [] }], ['b', { kind: 'removed', props: [] }], ['c', { kind: 'changed', props: ['x', 'fill'] }]]);
  const seen = [];
  const api = { req: async (method, path, o) => { seen.push([method, path, o.key, o.body]); return { body: {} }; } };
  const h = new HistoryApi(api, 'f/1', 'k');
  await h.list();
  await h.list({ before: 9, limit: 20 });
  await h.read(3);
  await h.compare(3);
  await h.name('T');
  await h.name('T', 'D');
  await h.rename(3, { title: 'U' });
  await h.remove(3);
  await h.restore(3);
  const base = '/api/files/f%2F1/versions';
  assert.deepEqual(seen, [
    ['GET', `${base}?limit=50`, 'k', undefined],
    ['GET', `${base}?limit=20&before=9`, 'k', undefined],
    ['GET', `${base}/3`, 'k', undefined],
    ['GET', `${base}/compare?from=3&to=current`, 'k', undefined],
    ['POST', base, 'k', { title: 'T' }],
    ['POST', base, 'k', { title: 'T', description: 'D' }],
    ['PATCH', `${base}/3`, 'k', { title: 'U' }],
    ['DELETE', `${base}/3`, 'k', undefined],
    ['POST', `${base}/3/restore`, 'k', undefined],
  ]);
});
