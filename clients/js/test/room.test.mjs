import test from 'node:test';
import assert from 'node:assert/strict';
import { createClient, tokenExp, MemoryStorage } from '../src/index.js';
import { fakeSocketClass } from './helpers.mjs';

const flush = () => new Promise((r) => setTimeout(r, 0));

function setup(opts = {}) {
  const { FakeWebSocket, sockets } = fakeSocketClass();
  const client = createClient({ baseUrl: 'http://atrium.test', WebSocket: FakeWebSocket, storage: new MemoryStorage(), sessionStorage: null, ...opts });
  return { client, sockets };
}

const welcome = (doc, extra = {}) => ({ type: 'welcome', you: 'p1', role: 'editor', version: 3, doc, people: [{ id: 'p1', name: 'Ann', account: 'a1', role: 'editor', page: null }], presence_hz: 20, ...extra });

test('open: the socket URL is the file\'s, the hello carries the client id and the token', async () => {
  const { client, sockets } = setup({ auth: { token: 'tok' } });
  const room = client.open('file_1', { clientId: 'c'.repeat(24) });
  await flush();
  assert.equal(sockets[0].url, 'ws://atrium.test/files/file_1/ws');
  sockets[0].open();
  assert.deepEqual(sockets[0].sent[0], { type: 'hello', token: 'tok', key: null, client: 'c'.repeat(24), since: null, name: '' });
  room.close();
  assert.equal(sockets[0].closed, 1000);
});

test('a welcome\'s document is in room.doc before any listener hears of the welcome', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  const seen = [];
  room.subscribe('welcome', () => seen.push(['welcome', Object.keys(room.doc).sort()]));
  room.subscribe('status', (s) => seen.push([s.state, Object.keys(room.doc).sort()]));
  await flush();
  sockets[0].open();
  sockets[0].deliver(welcome({ page1: { type: 'page' }, r1: { type: 'rect', page: 'page1' } }));
  assert.deepEqual(seen.find((x) => x[0] === 'welcome'), ['welcome', ['page1', 'r1']]);
  assert.deepEqual(seen.find((x) => x[0] === 'online'), ['online', ['page1', 'r1']]);
  await room.ready;
  assert.equal(room.version, 3);
  room.close();
});

test('a remote patch makes a new doc; nodes it did not touch keep their identity', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  await flush();
  sockets[0].open();
  sockets[0].deliver(welcome({ a: { x: 1 }, b: { x: 2 } }));
  const before = room.doc;
  sockets[0].deliver({ type: 'patch', v: 4, by: 'p2', ops: [{ op: 'set', id: 'a', props: { x: 5 } }] });
  assert.notEqual(room.doc, before);
  assert.equal(room.doc.b, before.b);
  assert.notEqual(room.doc.a, before.a);
  assert.equal(room.doc.a.x, 5);
  room.close();
});

test('patch: applied at once, sent once online, confirmed by its ack; viewers cannot', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  assert.equal(room.patch([{ op: 'put', id: 'n', props: { x: 1 } }]), true);
  assert.deepEqual(room.doc.n, { x: 1 });
  assert.equal(room.status.waiting, 1);
  await flush();
  sockets[0].open();
  sockets[0].deliver(welcome({}));
  await new Promise((r) => setTimeout(r, 80));
  const [p] = sockets[0].patches();
  assert.deepEqual(p.ops, [{ op: 'put', id: 'n', props: { x: 1 } }]);
  const done = room.flushed(1000);
  sockets[0].deliver({ type: 'ack', id: p.id, v: 4 });
  await done;
  assert.equal(room.status.waiting, 0);
  sockets[0].deliver({ type: 'role', id: 'p1', role: 'viewer' });
  assert.equal(room.patch([{ op: 'delete', id: 'n' }]), false);
  assert.deepEqual(room.doc.n, { x: 1 });
  room.close();
});

test('people and others: join, presences, leave; cursors glide on our page only', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  await flush();
  sockets[0].open();
  sockets[0].deliver(welcome({}));
  const peopleSeen = [];
  room.subscribe('people', (p) => peopleSeen.push(p.map((x) => x.id)));
  sockets[0].deliver({ type: 'join', people: [{ id: 'p2', name: 'Bo', account: null, role: 'editor', page: null, color: '#ff0000' }] });
  assert.deepEqual(peopleSeen.at(-1), ['p1', 'p2']);
  room.setPresence({ page: 'pg' });
  sockets[0].deliver({ type: 'presences', people: [{ id: 'p2', page: 'pg', cursor: [10, 20], sel: ['r1'], camera: null, t: null }] });
  assert.deepEqual(room.others.get('p2').sel, ['r1']);
  const [c] = room.cursors({ now: 1e12 });
  assert.deepEqual({ id: c.id, name: c.name, color: c.color, x: c.x, y: c.y }, { id: 'p2', name: 'Bo', color: '#ff0000', x: 10, y: 20 });
  assert.deepEqual(room.cursors({ page: 'elsewhere' }), []);
  sockets[0].deliver({ type: 'presences', people: [{ id: 'p2', page: 'other' }] });
  assert.equal(room.others.get('p2').cursor, null);
  assert.deepEqual(room.cursors(), []);
  sockets[0].deliver({ type: 'leave', ids: ['p2'] });
  assert.equal(room.others.has('p2'), false);
  assert.deepEqual(peopleSeen.at(-1), ['p1']);
  room.close();
});

test('an app token function: asked before the hello and again on token-expiring, sent as refresh', async () => {
  let n = 0;
  const { client, sockets } = setup({ auth: async () => `h.${btoa(JSON.stringify({ exp: 2e9 }))}.s${++n}` });
  const room = client.open('f');
  await flush();
  await flush();
  sockets[0].open();
  assert.equal(sockets[0].sent[0].token.endsWith('.s1'), true);
  sockets[0].deliver(welcome({}));
  sockets[0].deliver({ type: 'notice', code: 4001, reason: 'token-expiring', exp: 1, message: 'soon' });
  await flush();
  await flush();
  const refresh = sockets[0].sent.find((m) => m.type === 'refresh');
  assert.ok(refresh && refresh.token.endsWith('.s2'), JSON.stringify(sockets[0].sent));
  assert.equal(sockets.length, 1, 'no reconnect');
  room.close();
});

test('subscribe returns an unsubscribe; one listener throwing does not stop the next', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  let calls = 0;
  const off = room.subscribe('doc', () => calls++);
  room.subscribe('doc', () => { throw new Error('listener bug'); });
  const errors = [];
  const saved = console.error;
  console.error = (e) => errors.push(e.message);
  room.patch([{ op: 'put', id: 'a', props: {} }]);
  off();
  room.patch([{ op: 'put', id: 'b', props: {} }]);
  console.error = saved;
  assert.equal(calls, 1);
  assert.deepEqual(errors, ['listener bug', 'listener bug']);
  room.close();
});

test('createClient: no WebSocket class is a clear error; tokenExp reads a JWT', () => {
  assert.throws(() => createClient({ baseUrl: 'http://x', WebSocket: /** @type {any} */ (42) }), /WebSocket/);
  assert.equal(tokenExp(`a.${btoa(JSON.stringify({ exp: 123 })).replace(/=+$/, '')}.c`), 123);
  assert.equal(tokenExp('not-a-jwt'), null);
});

test('events: sent only while welcomed, never queued; others\' arrive as the event event', async () => {
  const { client, sockets } = setup();
  const room = client.open('f', { key: 'k' });
  const got = [];
  room.subscribe('event', (m) => got.push(m));
  assert.equal(room.sendEvent({ reaction: 'wave' }), false, 'not connected: dropped');
  await flush();
  sockets[0].open();
  sockets[0].deliver(welcome({}));
  assert.equal(room.sendEvent({ reaction: 'wave' }), true);
  assert.deepEqual(sockets[0].sent.filter((m) => m.type === 'event'), [{ type: 'event', data: { reaction: 'wave' } }]);
  sockets[0].deliver({ type: 'event', by: 'p2', data: null });
  assert.deepEqual(got, [{ type: 'event', by: 'p2', data: null }]);
  room.close();
  assert.equal(room.sendEvent(1), false, 'closed');
});
