import test from 'node:test';
import assert from 'node:assert/strict';
import { Connection } from '../src/connection.js';
import { closeAction, retryHint } from '../src/closes.js';
import { Outbox } from '../src/outbox.js';
import { DocState } from '../src/doc.js';
import { FakeClock, FakeStorage, fakeSocketClass } from './helpers.mjs';

function setup({ storage = new FakeStorage(), random = () => 0.5, doc } = {}) {
  const clock = new FakeClock();
  const { FakeWebSocket, sockets } = fakeSocketClass();
  const outbox = new Outbox({ storage, key: 'ob', now: clock.now });
  const statuses = [];
  const conn = new Connection({
    url: 'ws://x/files/f/ws', token: 't', key: null, name: 'Ann', client: 'c'.repeat(22),
    outbox, doc, WebSocket: FakeWebSocket, timers: clock, random,
  });
  conn.on('status', (s) => statuses.push(s.state));
  conn.start();
  return { clock, sockets, conn, outbox, storage, statuses, last: () => sockets.at(-1) };
}

function welcome(ws, extra = {}) {
  ws.open();
  ws.deliver({ type: 'welcome', you: 'me', role: 'editor', version: 0, doc: {}, people: [{ id: 'me', name: 'Ann', role: 'editor' }], presence_hz: 20, ...extra });
}

test('hello first, with since null on a fresh client and the held version after', () => {
  const { sockets, clock, last } = setup();
  last().open();
  assert.deepEqual(last().sent[0], { type: 'hello', token: 't', key: null, client: 'c'.repeat(22), since: null, name: 'Ann' });
  last().deliver({ type: 'welcome', you: 'me', role: 'editor', version: 7, doc: { a: { x: 1 } }, people: [], presence_hz: 20 });
  last().drop(1006);
  clock.tick(1000);
  assert.equal(sockets.length, 2);
  last().open();
  assert.equal(last().sent[0].since, 7);
});

test('close codes: each does what the contract table says', () => {
  const cases = [
    [1000, 'stop'], [1003, 'stop'], [1007, 'stop'], [1009, 'stop'], [1012, 'reconnect'], [1013, 'reconnect'],
    [4000, 'reconnect'], [4001, 'sign-in'], [4003, 'stop'], [4004, 'stop'], [4006, 'stop'], [4008, 'reconnect'], [4009, 'reconnect'],
    [4010, 'stop'], [4013, 'reconnect'], [4029, 'wait-user'], [4031, 'reconnect'], [1006, 'reconnect'], [4999, 'reconnect'],
  ];
  for (const [code, action] of cases) assert.equal(closeAction(code).action, action, `code ${code}`);
});

test('a lost connection retries with backoff: 0.25-0.5 s, then doubling', () => {
  const { clock, sockets, last } = setup();
  welcome(last());
  last().drop(1006);
  assert.deepEqual(clock.pending(), [375]); // random 0.5 within 250-500
  clock.tick(375);
  assert.equal(sockets.length, 2);
  last().drop(1006); // never welcomed
  assert.deepEqual(clock.pending(), [750]);
  clock.tick(750);
  last().drop(1006);
  assert.deepEqual(clock.pending(), [1500]);
  clock.tick(1500);
  welcome(last()); // welcome resets the backoff
  last().drop(1006);
  assert.deepEqual(clock.pending(), [375]);
});

test('1013 with the node\'s retry-ms hint comes back after the hint; without one, after the backoff', () => {
  const { clock, sockets, last } = setup();
  welcome(last());
  last().drop(1013, 'the node is busy with other joins; retry-ms=1840');
  assert.deepEqual(clock.pending(), [1840]);
  clock.tick(1839);
  assert.equal(sockets.length, 1, 'not before the hint');
  clock.tick(1);
  assert.equal(sockets.length, 2);
  last().drop(1013, 'the store is unavailable');
  assert.deepEqual(clock.pending(), [750], 'the backoff grew meanwhile');
  assert.equal(retryHint('busy; retry-ms=999999'), 30_000);
  assert.equal(retryHint('retry-ms=soon'), null);
  assert.equal(retryHint(undefined), null);
});

test('4029 waits for the person; retry() connects', () => {
  const { clock, sockets, conn, statuses, last } = setup();
  last().drop(4029);
  assert.equal(conn.state, 'needs-user');
  clock.tick(60_000);
  assert.equal(sockets.length, 1, 'no retry by itself');
  conn.retry();
  assert.equal(sockets.length, 2);
  assert.ok(statuses.includes('needs-user'));
});

test('4009 reconnects at once the first time, then with backoff', () => {
  const { clock, sockets, last } = setup();
  welcome(last());
  last().drop(4009);
  assert.deepEqual(clock.pending(), [0]);
  clock.tick(0);
  assert.equal(sockets.length, 2);
  last().drop(4009);
  assert.deepEqual(clock.pending(), [375]);
});

test('1012 reconnects after a random 0-3 s, then with backoff', () => {
  for (const r of [0, 0.5, 0.99]) {
    const { clock, sockets, last } = setup({ random: () => r });
    welcome(last());
    last().drop(1012);
    const [wait] = clock.pending();
    assert.ok(wait >= 0 && wait <= 3000, `wait ${wait}`);
    clock.tick(wait);
    assert.equal(sockets.length, 2);
    last().drop(1006);
    const [w2] = clock.pending();
    assert.ok(w2 >= 250 && w2 <= 500, `then backoff: ${w2}`);
  }
});

test('4001 asks to sign in; 4003 and 4004 stop; 4004 forgets the queue', () => {
  for (const [code, state] of [[4001, 'sign-in'], [4003, 'stopped'], [4004, 'stopped'], [4010, 'stopped']]) {
    const { clock, sockets, conn, outbox, last } = setup();
    welcome(last());
    conn.edit([{ op: 'put', id: 'a', props: {} }]);
    last().drop(code);
    assert.equal(conn.state, state, `code ${code}`);
    clock.tick(60_000);
    assert.equal(sockets.length, 1, `no retry after ${code}`);
    assert.equal(outbox.waiting, code === 4004 ? 0 : 1);
  }
});

test('edits offline are kept, and after a reload resent with original ids, then new ones merged', () => {
  const storage = new FakeStorage();
  const a = setup({ storage });
  welcome(a.last());
  // 3 edits go out (one per burst), unacked; then the socket is lost
  for (let i = 0; i < 3; i++) {
    a.conn.edit([{ op: 'put', id: `r${i}`, props: { x: i } }]);
    a.clock.tick(100);
  }
  const sentIds = a.last().patches().map((p) => p.id);
  assert.deepEqual(sentIds, [1, 2, 3]);
  a.last().drop(1006);
  // 25 more edits while offline
  for (let i = 0; i < 25; i++) {
    a.conn.edit([{ op: 'set', id: 'r0', props: { x: 100 + i } }]);
    a.clock.tick(100);
  }
  a.conn.stop();
  // reload: a new page on the same storage
  const b = setup({ storage, doc: new DocState({ version: 0, doc: {} }) });
  assert.deepEqual(b.conn.doc.view.r0, { x: 124 }, 'the view shows the offline edits at once');
  b.last().open();
  assert.equal(b.last().sent[0].since, 0);
  // the server had applied 1 (v1) before the drop: resume carries its ack
  b.last().deliver({ type: 'welcome', you: 'me', role: 'editor', version: 1, resume: [{ type: 'ack', id: 1, v: 1 }], people: [], presence_hz: 20 });
  const p = b.last().patches();
  assert.deepEqual(p.map((m) => m.id), [2, 3, 4], 'unconfirmed 2 and 3 with original ids, then one merged patch');
  assert.deepEqual(p[2].ops, [{ op: 'set', id: 'r0', props: { x: 124 } }]);
  b.last().deliver({ type: 'ack', id: 2, v: 2 });
  b.last().deliver({ type: 'patch', v: 3, by: 'other', ops: [{ op: 'set', id: 'r1', props: { y: 5 } }] });
  b.last().deliver({ type: 'ack', id: 3, v: 4 });
  b.last().deliver({ type: 'ack', id: 4, v: 5 });
  assert.equal(b.outbox.waiting, 0);
  assert.deepEqual(b.conn.doc.server, { r0: { x: 124 }, r1: { x: 1, y: 5 }, r2: { x: 2 } });
  assert.deepEqual(b.conn.doc.view, b.conn.doc.server);
});

test('a resent patch the server already had is acked at its old version and not applied twice', () => {
  const { conn, clock, last } = setup();
  welcome(last());
  conn.edit([{ op: 'put', id: 'a', props: { n: 1 } }]);
  clock.tick(100);
  assert.deepEqual(last().patches().map((m) => m.id), [1]);
  last().drop(1006);
  // reconnect gets the whole document (since too old) which already includes patch 1
  conn.retry();
  last().open();
  last().deliver({ type: 'welcome', you: 'me', role: 'editor', version: 9, doc: { a: { n: 1 } }, people: [], presence_hz: 20 });
  assert.deepEqual(last().patches().map((m) => m.id), [1]);
  last().deliver({ type: 'ack', id: 1, v: 9 });
  assert.equal(conn.doc.version, 9);
  assert.equal(conn.outbox.waiting, 0);
});

test('a gap in versions resynchronises with since null', () => {
  const { clock, sockets, last } = setup();
  welcome(last());
  last().deliver({ type: 'patch', v: 2, by: 'x', ops: [] }); // v1 lost
  assert.equal(last().closed, 1000);
  clock.tick(0);
  assert.equal(sockets.length, 2);
  last().open();
  assert.equal(last().sent[0].since, null);
});

test('viewers cannot edit; a rejected patch is dropped from the view', () => {
  const { conn, clock, last } = setup();
  welcome(last(), { role: 'viewer', reason: 'view-link' });
  assert.equal(conn.edit([{ op: 'put', id: 'a', props: {} }]), false);
  assert.equal(conn.roleReason, 'view-link');
  last().deliver({ type: 'role', id: 'me', role: 'editor' });
  assert.equal(conn.edit([{ op: 'put', id: 'a', props: {} }]), true);
  clock.tick(100);
  const [p] = last().patches();
  assert.ok(conn.doc.view.a);
  last().deliver({ type: 'reject', id: p.id, code: 'invalid', message: 'no' });
  assert.equal(conn.doc.view.a, undefined);
});

test('edits are batched: a 60 fps drag sends at most 20 patches a second', () => {
  const { conn, clock, last } = setup();
  welcome(last());
  for (let i = 0; i < 60; i++) {
    conn.edit([{ op: 'set', id: 'r', props: { x: i } }]);
    clock.tick(16);
    for (const p of last().patches()) if (!p.acked) {
      p.acked = true;
      last().deliver({ type: 'ack', id: p.id, v: conn.doc.version + 1 });
    }
  }
  const n = last().patches().length;
  assert.ok(n <= 21, `patches in ~1 s: ${n}`);
  // Batching must not lose the drag: let any pending flush go, then the last patch sent
  // carries the final position and nothing is left queued.
  clock.tick(100);
  for (const p of last().patches()) if (!p.acked) {
    p.acked = true;
    last().deliver({ type: 'ack', id: p.id, v: conn.doc.version + 1 });
  }
  const sent = last().patches();
  assert.ok(sent.length >= 1, 'the drag was sent');
  assert.deepEqual(sent.at(-1).ops, [{ op: 'set', id: 'r', props: { x: 59 } }], 'the last patch has the final position');
  assert.equal(conn.outbox.waiting, 0, 'nothing left unsent');
});

test('presence is sent only once welcomed and obeys presence-rate', () => {
  const { conn, clock, last } = setup();
  const presences = () => last().sent.filter((m) => m.type === 'presence');
  conn.presence({ cursor: [1, 1] });
  conn.presence({ cursor: [2, 2] });
  clock.tick(100);
  last().open();
  assert.equal(presences().length, 0);
  last().deliver({ type: 'welcome', you: 'me', role: 'viewer', version: 0, doc: {}, people: [], presence_hz: 20 });
  clock.tick(10);
  assert.equal(presences().length, 1, 'sent once welcomed');
  assert.deepEqual(presences()[0].cursor, [2, 2], 'with the latest cursor');
  last().deliver({ type: 'presence-rate', hz: 5 });
  // 1 s of moves (every 10 ms). Sends must be >= 200 ms apart, and the last one went
  // at t=100, so at most 5 fit in (110 ms, 1110 ms]; a throttle that keeps up sends 5.
  for (let i = 0; i < 100; i++) {
    conn.presence({ cursor: [i, 0] });
    clock.tick(10);
  }
  const n = presences().length - 1;
  assert.ok(n <= 5, `at most 5 a second: ${n}`);
  assert.ok(n >= 4, `close to 5 a second: ${n}`);
  // The last move is not lost: it goes within one period.
  clock.tick(200);
  assert.deepEqual(presences().at(-1).cursor, [99, 0], 'the latest cursor reaches the server');
});

test('app tokens: asked before each hello, refreshed on the expiry notice, one retry after 4001', async () => {
  const clock = new FakeClock();
  const { FakeWebSocket, sockets } = fakeSocketClass();
  let n = 0;
  const conn = new Connection({
    url: 'ws://x/files/f/ws', getToken: async () => `jwt.${++n}.sig`, client: 'c'.repeat(22),
    outbox: new Outbox({ storage: new FakeStorage(), key: 'ob', now: clock.now }),
    WebSocket: FakeWebSocket, timers: clock, random: () => 0.5,
  });
  const flush = () => new Promise((r) => setTimeout(r, 0));
  conn.start();
  await flush();
  assert.equal(sockets.length, 1);
  welcome(sockets[0]);
  assert.equal(sockets[0].sent[0].token, 'jwt.1.sig');
  sockets[0].deliver({ type: 'notice', code: 4001, reason: 'token-expiring', exp: 100 });
  await flush();
  assert.deepEqual(sockets[0].sent.at(-1), { type: 'refresh', token: 'jwt.2.sig' });
  // Revoked or expired on a live socket: a new token, at once.
  sockets[0].drop(4001);
  clock.tick(0);
  await flush();
  assert.equal(sockets.length, 2);
  sockets[1].open();
  assert.equal(sockets[1].sent[0].token, 'jwt.3.sig');
  // Refused at hello: sign in, no loop.
  sockets[1].drop(4001);
  assert.equal(conn.state, 'sign-in');
});

test("messages the connection has no part in (history's version, restored) go to 'message'", () => {
  const { conn, last } = setup();
  const seen = [];
  conn.on('message', (m) => seen.push(m.type));
  welcome(last());
  last().deliver({ type: 'version', event: 'saved', version: { id: 1 } });
  last().deliver({ type: 'patch', v: 1, ops: [{ op: 'put', id: 'a', props: { x: 1 } }], by: 'restore' });
  last().deliver({ type: 'restored', v: 1, from: { id: 1 }, by: 'Ann' });
  assert.deepEqual(seen, ['version', 'restored'], "the patch is the connection's own, not passed on");
  assert.deepEqual(conn.doc.server, { a: { x: 1 } });
});

test('a socket never welcomed (a hung handshake, a silent node) is dropped after 15 s and retried with backoff', () => {
  const { clock, sockets, conn, last } = setup();
  const first = last();
  clock.tick(14_999);
  assert.equal(first.closed, null, 'still waiting');
  clock.tick(1);
  assert.equal(first.closed, 4000, 'dropped');
  assert.equal(conn.state, 'offline');
  clock.tick(500);
  assert.equal(sockets.length, 2, 'retried');
  welcome(last());
  clock.tick(60_000);
  assert.equal(last().closed, null, 'a welcomed socket has no such deadline');
  assert.equal(conn.state, 'online');
});

test('retry() replaces a socket still waiting for its welcome, and keeps a welcomed one', () => {
  const { sockets, conn, last } = setup();
  const first = last();
  conn.retry();
  assert.equal(first.closed, 4000);
  assert.equal(sockets.length, 2);
  welcome(last());
  conn.retry();
  assert.equal(sockets.length, 2);
  assert.equal(last().closed, null);
});
