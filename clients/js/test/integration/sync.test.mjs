// @atrium/client against a real atrium-node (spawned, see node.mjs):
// - two clients converge under random concurrent edits, with the node killed (-9) and
//   started again in the middle, and no acknowledged patch is lost;
// - edits made offline survive a "reload" (a new client on the same storage) and reach
//   the server once each, in id order; a patch sent but never acked is resent after the
//   reload under its original id and applied once;
// - an app token is refreshed before it expires, on the live socket, without a reconnect.

import test from 'node:test';
import assert from 'node:assert/strict';
import { createClient, MemoryStorage } from '../../src/index.js';
import { TestNode, appToken, canonical, sleep, until } from './node.mjs';

/** @type {TestNode} */
let node;
test.before(async () => {
  node = new TestNode({ ATRIUM_APP_TOKEN_NOTICE_MS: '4000' });
  await node.start();
});
test.after(async () => {
  await node?.stop();
});

async function signUp(name) {
  const c = createClient({ baseUrl: node.baseUrl, storage: null, sessionStorage: null });
  const email = `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const s = await c.signUp(email, 'correct horse battery', name);
  return { token: s.token, email };
}

/** Counts of messages by type seen by a room, and the versions its acks carried. */
function watch(room) {
  const w = { acked: new Map(), welcomes: 0 };
  room.subscribe('message', (m) => {
    if (m.type === 'ack') w.acked.set(m.id, m.v);
    if (m.type === 'welcome') {
      w.welcomes++;
      for (const r of m.resume ?? []) if (r.type === 'ack') w.acked.set(r.id, r.v);
    }
  });
  return w;
}

test('two clients converge under random concurrent edits with the node restarted in the middle; no acked patch is lost', async () => {
  const { token } = await signUp('ann');
  const file = await node.api('POST', '/api/files', { token, body: { name: 'Race' } });
  await node.api('PATCH', `/api/files/${file.id}`, { token, body: { link: 'edit' } });

  const a = createClient({ baseUrl: node.baseUrl, auth: { token }, storage: new MemoryStorage(), sessionStorage: null });
  const b = createClient({ baseUrl: node.baseUrl, name: 'Bo', storage: new MemoryStorage(), sessionStorage: null });
  const ra = a.open(file.id);
  const rb = b.open(file.id, { key: file.edit_key });
  const wa = watch(ra);
  const wb = watch(rb);
  await Promise.all([ra.ready, rb.ready]);

  // Each client owns "witness" nodes it creates and never deletes (each is proof that one
  // acked patch survived); both fight over a few shared nodes with put, set and delete.
  const shared = ['s0', 's1', 's2', 's3'];
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const edits = { a: 0, b: 0 };
  function edit(name, room) {
    const n = edits[name]++;
    const ops = [{ op: 'put', id: `w-${name}-${n}`, props: { n, by: name } }];
    const sid = shared[Math.floor(rnd() * shared.length)];
    const r = rnd();
    if (r < 0.4) ops.push({ op: 'put', id: sid, props: { by: name, n } });
    else if (r < 0.8) ops.push({ op: 'set', id: sid, props: { x: Math.floor(rnd() * 1000), by: name } });
    else ops.push({ op: 'delete', id: sid });
    room.patch(ops);
  }
  let stop = false;
  const loop = async (name, room) => {
    while (!stop) {
      edit(name, room);
      await sleep(5 + Math.floor(rnd() * 25));
    }
  };
  const loops = [loop('a', ra), loop('b', rb)];
  await sleep(1500);
  const ackedBeforeKill = wa.acked.size + wb.acked.size;
  assert.ok(ackedBeforeKill > 10, `some patches acked before the kill (${ackedBeforeKill})`);
  await node.restart(); // kill -9 in the middle of the edits, then the node comes back
  await sleep(2500);
  stop = true;
  await Promise.all(loops);

  await Promise.all([ra.flushed(30_000), rb.flushed(30_000)]);
  const server = await node.api('GET', `/api/files/${file.id}/doc`, { token });
  await until('both clients at the server version', () => ra.version === server.version && rb.version === server.version);
  assert.equal(canonical(ra.doc), canonical(server.doc), 'A converged to the server');
  assert.equal(canonical(rb.doc), canonical(server.doc), 'B converged to the server');
  assert.ok(wa.welcomes >= 2 && wb.welcomes >= 2, 'both reconnected after the restart');

  // Nothing acked is lost: every witness node of an acked patch is in the document, and
  // every version the server handed out belongs to exactly one acked patch.
  for (const [name, w] of [['a', wa], ['b', wb]]) {
    const count = edits[name];
    for (let n = 0; n < count; n++) assert.ok(server.doc[`w-${name}-${n}`], `witness w-${name}-${n} is in the document`);
    assert.equal(Object.keys(server.doc).filter((k) => k.startsWith(`w-${name}-`)).length, count);
    assert.ok(w.acked.size > 0);
  }
  const versions = new Set([...wa.acked.values(), ...wb.acked.values()]);
  assert.equal(versions.size, wa.acked.size + wb.acked.size, 'no two patches share a version');
  assert.equal(Math.max(...versions), server.version, 'the last version is an acked patch');
  assert.equal(versions.size, server.version, 'every version is one acked patch: none lost, none doubled');
  ra.close();
  rb.close();
});

test('edits made offline survive a reload and each arrives once, ids in order', async (t) => {
  const { token } = await signUp('cy');
  const file = await node.api('POST', '/api/files', { token, body: { name: 'Offline', doc: { page1: { type: 'page', name: 'One' } } } });
  const storage = new MemoryStorage(); // the browser's localStorage, kept across the reload

  const c1 = createClient({ baseUrl: node.baseUrl, auth: { token }, storage, sessionStorage: null });
  const r1 = c1.open(file.id);
  await r1.ready;
  assert.deepEqual(Object.keys(r1.doc), ['page1']);
  const sent = [];
  node.setOffline(true);
  await until('offline', () => r1.status.state === 'offline');
  for (let i = 0; i < 5; i++) {
    r1.patch([{ op: 'put', id: `off-${i}`, props: { type: 'rect', page: 'page1', i } }]);
    await sleep(60); // apart: five groups (edits within 50 ms join one)
  }
  assert.equal(r1.status.waiting, 5);
  await sleep(1200); // the last server state is saved at most once a second
  const clientId = r1.client;
  r1.close(); // the tab reloads: everything in memory is gone, storage stays
  t.after(() => node.setOffline(false));

  // Still offline: the reloaded page shows the document with its pending edits at once.
  const c2 = createClient({ baseUrl: node.baseUrl, auth: { token }, storage, sessionStorage: null });
  const r2 = c2.open(file.id);
  assert.equal(r2.client, clientId, 'the reloaded tab adopts the queue of its client id');
  assert.deepEqual(Object.keys(r2.doc).sort(), ['off-0', 'off-1', 'off-2', 'off-3', 'off-4', 'page1']);
  assert.equal(r2.status.waiting, 5);
  r2.subscribe('message', (m) => { if (m.type === 'ack') sent.push(m.id); });
  node.setOffline(false);
  r2.retry();
  await r2.flushed(40_000); // a handshake begun while offline may hang: dropped at 15 s
  const server = await node.api('GET', `/api/files/${file.id}/doc`, { token });
  assert.deepEqual(Object.keys(server.doc).sort(), ['off-0', 'off-1', 'off-2', 'off-3', 'off-4', 'page1']);
  assert.equal(server.version, sent.length);
  assert.deepEqual(sent, [...sent].sort((x, y) => x - y), 'ids in increasing order');
  r2.close();
});

test('a patch sent but never acked survives a reload and is resent under its original id, applied once', async (t) => {
  const { token } = await signUp('fin');
  const file = await node.api('POST', '/api/files', { token, body: { name: 'Resend' } });
  const storage = new MemoryStorage();
  const c1 = createClient({ baseUrl: node.baseUrl, auth: { token }, storage, sessionStorage: null });
  const r1 = c1.open(file.id);
  await r1.ready;
  // The node stops answering (SIGSTOP): the patch goes out on the socket, no ack comes back.
  node.proc.kill('SIGSTOP');
  t.after(() => { node.proc.kill('SIGCONT'); node.setOffline(false); });
  r1.patch([{ op: 'put', id: 'sent-once', props: { n: 1 } }]);
  await sleep(300);
  const stored = JSON.parse(storage.getItem(`atrium:outbox:${file.id}:${r1.client}`));
  assert.deepEqual(stored.sent.map((p) => p.id), [1], 'the patch has its id, kept in storage, and is unacked');
  node.setOffline(true); // the connection drops; the node may or may not have read the patch
  node.proc.kill('SIGCONT');
  r1.close(); // and the tab reloads

  const acked = [];
  const c2 = createClient({ baseUrl: node.baseUrl, auth: { token }, storage, sessionStorage: null });
  const r2 = c2.open(file.id);
  r2.subscribe('message', (m) => {
    if (m.type === 'ack') acked.push(m.id);
    if (m.type === 'welcome') for (const r of m.resume ?? []) if (r.type === 'ack') acked.push(r.id);
  });
  assert.equal(r2.client, r1.client);
  node.setOffline(false);
  r2.retry();
  await r2.flushed(40_000); // a handshake begun while offline may hang: dropped at 15 s
  assert.ok(acked.includes(1), `the original id 1 was acknowledged (acks: ${acked})`);
  const server = await node.api('GET', `/api/files/${file.id}/doc`, { token });
  assert.deepEqual(server.doc, { 'sent-once': { n: 1 } });
  assert.equal(server.version, 1, 'applied once');
  r2.close();
});

test('an app token is refreshed before it expires, on the live socket, without a reconnect', async () => {
  const owner = await signUp('dee');
  const file = await node.api('POST', '/api/files', { token: owner.token, body: { name: 'Tokens' } });
  let asked = 0;
  // Tokens of 7 s; the node warns 4 s before exp, so the first must be refreshed at about 3 s.
  const getToken = async () => {
    asked++;
    return appToken({ sub: 'user-7', name: 'Seven', files: { [file.id]: 'edit' }, exp: Math.floor(Date.now() / 1000) + 7 });
  };
  const c = createClient({ baseUrl: node.baseUrl, auth: getToken, storage: null, sessionStorage: null });
  const room = c.open(file.id);
  const w = watch(room);
  const refreshed = [];
  const closes = [];
  room.subscribe('refreshed', (m) => refreshed.push(m.exp));
  room.subscribe('closed', (m) => closes.push(m.code));
  await room.ready;
  assert.equal(room.people.find((p) => p.id === room.you)?.sub, 'user-7');
  await until('a refresh', () => refreshed.length >= 1, 10_000);
  await sleep(9000 - 4000); // past the first token's exp
  assert.ok(refreshed.length >= 1);
  assert.equal(w.welcomes, 1, 'one welcome: the socket was never replaced');
  assert.deepEqual(closes, [], 'no close');
  assert.equal(room.status.state, 'online');
  assert.ok(asked >= 2);
  // The socket still works under the refreshed token.
  room.patch([{ op: 'put', id: 'after', props: {} }]);
  await room.flushed(10_000);
  room.close();
});

test('auth by Atrium sign-in: the room signs in first, then opens; a wrong password stops at sign-in', async () => {
  const { email, token } = await signUp('eve');
  const file = await node.api('POST', '/api/files', { token, body: { name: 'Sign-in' } });
  const c = createClient({ baseUrl: node.baseUrl, auth: { email, password: 'correct horse battery' }, storage: null, sessionStorage: null });
  const made = await c.api.createFile('Made before any room'); // the first API call signs in
  assert.equal(made.name, 'Made before any room');
  const room = c.open(file.id);
  await room.ready;
  assert.equal(room.role, 'editor');
  assert.ok(c.token, 'signed in: the session token is kept for API calls');
  assert.equal((await c.api.file(file.id)).name, 'Sign-in');
  room.close();

  const bad = createClient({ baseUrl: node.baseUrl, auth: { email, password: 'not the password' }, storage: null, sessionStorage: null });
  const r2 = bad.open(file.id);
  const states = [];
  r2.subscribe('status', (s) => states.push(s.state));
  await until('a refused sign-in asks the person to sign in', () => r2.status.state === 'sign-in');
  await assert.rejects(r2.ready);
  assert.ok(!states.includes('online'));
  r2.close();
});
