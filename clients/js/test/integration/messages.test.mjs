// @ts-check
// The contract and the package's types agree, checked against a real node:
// - every message type in docs/protocol.md's table of messages is exercised here, and no
//   other;
// - each client message is built as the package's type says (tsc checks this file: see
//   tsconfig.test.json) and sent on a real socket, and the node takes it;
// - each server message the node sends is checked field by field against the package's
//   type: a field the type does not name fails (the lists below are typed as keys of the
//   types, so a field the type lacks cannot be listed).

import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestNode, appToken, sleep } from './node.mjs';

/** @typedef {import('../../src/messages.js').ServerMessage} ServerMessage */
/** @typedef {import('../../src/messages.js').ClientMessage} ClientMessage */
/** @typedef {import('../../src/messages.js').Person} Person */
/** @typedef {import('../../src/messages.js').PresenceEntry} PresenceEntry */
/** @typedef {import('../../src/messages.js').Version} Version */

const DOCS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../docs/protocol.md');

/** Every field each server message may carry: typed, so each name must be one of the type's. */
/** @type {{[K in ServerMessage['type']]: Array<keyof Extract<ServerMessage, {type: K}>>}} */
const SERVER_FIELDS = {
  welcome: ['type', 'you', 'role', 'reason', 'version', 'doc', 'resume', 'people', 'presence_hz'],
  ack: ['type', 'id', 'v', 't'],
  patch: ['type', 'v', 'by', 'ops', 't'],
  reject: ['type', 'id', 'code', 'message'],
  presences: ['type', 'people'],
  join: ['type', 'people'],
  leave: ['type', 'ids'],
  'presence-rate': ['type', 'hz'],
  role: ['type', 'id', 'role'],
  notice: ['type', 'code', 'message', 'reason', 'exp'],
  refreshed: ['type', 'exp'],
  version: ['type', 'event', 'version'],
  restored: ['type', 'v', 'from', 'by'],
  event: ['type', 'by', 'data'],
};
/** @type {Array<keyof Person>} */
const PERSON_FIELDS = ['id', 'name', 'account', 'role', 'page', 'sub', 'color', 'avatar'];
/** @type {Array<keyof PresenceEntry>} */
const PRESENCE_FIELDS = ['id', 'page', 'cursor', 'sel', 'camera', 't'];
/** @type {Array<keyof Version>} */
const VERSION_FIELDS = ['id', 'version', 'created_at', 'kind', 'title', 'description', 'editors', 'restored_from', 'bytes'];
/** @type {Array<ClientMessage['type']>} */
const CLIENT_TYPES = ['hello', 'patch', 'presence', 'refresh', 'event'];

/** @param {string} what @param {any} obj @param {readonly string[]} fields */
function onlyFields(what, obj, fields) {
  assert.equal(typeof obj, 'object', `${what} is an object`);
  for (const k of Object.keys(obj)) assert.ok(fields.includes(k), `${what} has a field the package's type lacks: ${k} (${JSON.stringify(obj)})`);
}

/** Checks one server message against the package's type (and the nested ones). @param {any} m */
function checkServer(m) {
  const type = /** @type {ServerMessage['type']} */ (m.type);
  assert.ok(type in SERVER_FIELDS, `a message type the package does not know: ${type}`);
  onlyFields(type, m, SERVER_FIELDS[type]);
  const num = (/** @type {unknown} */ v) => typeof v === 'number' && Number.isFinite(v);
  switch (type) {
    case 'welcome':
      assert.ok(typeof m.you === 'string' && ['editor', 'viewer'].includes(m.role) && num(m.version) && num(m.presence_hz));
      assert.ok(('doc' in m) !== ('resume' in m), 'exactly one of doc and resume');
      for (const p of m.people) onlyFields('person', p, PERSON_FIELDS);
      break;
    case 'ack':
      assert.ok(num(m.id) && num(m.v));
      break;
    case 'patch':
      assert.ok(num(m.v) && typeof m.by === 'string' && Array.isArray(m.ops));
      break;
    case 'reject':
      assert.ok((m.id === null || num(m.id)) && typeof m.code === 'string' && typeof m.message === 'string');
      break;
    case 'presences':
      for (const p of m.people) onlyFields('presence entry', p, PRESENCE_FIELDS);
      break;
    case 'join':
      for (const p of m.people) onlyFields('person', p, PERSON_FIELDS);
      break;
    case 'leave':
      assert.ok(Array.isArray(m.ids));
      break;
    case 'presence-rate':
      assert.ok(num(m.hz));
      break;
    case 'role':
      assert.ok(typeof m.id === 'string' && ['editor', 'viewer'].includes(m.role));
      break;
    case 'notice':
      assert.ok(num(m.code) && typeof m.message === 'string');
      break;
    case 'refreshed':
      assert.ok(num(m.exp));
      break;
    case 'version':
      assert.ok(['saved', 'renamed', 'deleted'].includes(m.event));
      onlyFields('version', m.version, VERSION_FIELDS);
      break;
    case 'restored':
      assert.ok(num(m.v) && typeof m.by === 'string');
      onlyFields('version', m.from, VERSION_FIELDS);
      break;
    case 'event':
      assert.ok(typeof m.by === 'string' && 'data' in m);
      break;
  }
}

/** A raw socket that keeps what arrives, checked against the types as it comes. */
class Sock {
  /** @param {string} url */
  constructor(url) {
    /** @type {any[]} */
    this.got = [];
    /** @type {Error[]} */
    this.bad = [];
    /** @type {(() => void)[]} */
    this.waiters = [];
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = () => resolve(undefined);
      this.ws.onerror = () => reject(new Error('socket error'));
    });
    /** @type {{code: number, reason: string} | null} */
    this.closed = null;
    this.ws.onclose = (ev) => {
      this.closed = { code: ev.code, reason: ev.reason };
      for (const w of this.waiters.splice(0)) w();
    };
    this.ws.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data));
      try {
        checkServer(m);
      } catch (e) {
        this.bad.push(/** @type {Error} */ (e));
      }
      this.got.push(m);
      for (const w of this.waiters.splice(0)) w();
    };
  }

  /** @param {ClientMessage} m */
  send(m) {
    this.ws.send(JSON.stringify(m));
  }

  /**
   * The first message (from index `from`) that matches; waits for it.
   * @param {(m: any) => boolean} pred @param {string} what
   */
  async next(pred, what, timeout = 15_000) {
    const end = Date.now() + timeout;
    for (;;) {
      const m = this.got.find(pred);
      if (m) return m;
      if (this.closed) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) before ${what}`);
      if (Date.now() > end) throw new Error(`no ${what} in ${timeout} ms; got ${JSON.stringify(this.got.map((x) => x.type))}`);
      await new Promise((r) => {
        this.waiters.push(() => r(undefined));
        setTimeout(r, 100);
      });
    }
  }
}

/** The message table of docs/protocol.md: [type, direction]. */
function documentedTypes() {
  const text = fs.readFileSync(DOCS, 'utf8');
  const start = text.indexOf('### Messages');
  assert.ok(start >= 0, 'docs/protocol.md has a "### Messages" table');
  const table = text.slice(start).split('\n\n').find((block) => block.startsWith('|')) ?? '';
  /** @type {Set<string>} */
  const client = new Set();
  /** @type {Set<string>} */
  const server = new Set();
  for (const line of table.split('\n')) {
    const m = /^\| `([a-z-]+)` \| (client|server) /.exec(line);
    if (m) (m[2] === 'client' ? client : server).add(m[1]);
  }
  return { client, server };
}

test('every message the contract documents goes through the package\'s types to a real node', async (t) => {
  const docs = documentedTypes();
  assert.deepEqual([...docs.client].sort(), [...CLIENT_TYPES].sort(), 'client messages: docs/protocol.md and the package agree');
  assert.deepEqual([...docs.server].sort(), Object.keys(SERVER_FIELDS).sort(), 'server messages: docs/protocol.md and the package agree');

  // A busy room from 3 people (presence-rate), and a token-expiring notice at once.
  const node = new TestNode({ ATRIUM_BUSY_ROOM: '2', ATRIUM_APP_TOKEN_NOTICE_MS: '3600000' });
  await node.start();
  t.after(() => node.stop());
  const ws = (/** @type {string} */ id) => `${String(node.baseUrl).replace(/^http/, 'ws')}/files/${id}/ws`;
  const signup = await node.api('POST', '/api/signup', { body: { email: `m-${Date.now()}@example.com`, password: 'correct horse battery', name: 'Mo' } });
  const token = signup.token;
  const file = await node.api('POST', '/api/files', { token, body: { name: 'Messages', doc: { page1: { type: 'page', name: 'One' } } } });
  await node.api('PATCH', `/api/files/${file.id}`, { token, body: { link: 'edit' } });
  const seen = new Set();
  const sockets = /** @type {Sock[]} */ ([]);
  const open = async (/** @type {string} */ url) => {
    const s = new Sock(url);
    sockets.push(s);
    await s.opened;
    return s;
  };

  // hello → welcome
  const a = await open(ws(file.id));
  a.send({ type: 'hello', token, key: null, client: 'client-a-0123456789abcdefgh', since: null, name: 'ignored for accounts' });
  const welcome = await a.next((m) => m.type === 'welcome', 'welcome');
  assert.equal(welcome.doc.page1.type, 'page');

  // patch → ack
  a.send({ type: 'patch', id: 1, ops: [{ op: 'put', id: 'r1', props: { type: 'rect', page: 'page1', x: 1 } }, { op: 'set', id: 'r1', props: { x: 2 } }], t: 1.5 });
  const ack = await a.next((m) => m.type === 'ack', 'ack');
  assert.deepEqual([ack.id, ack.v, ack.t], [1, 1, 1.5]);

  // a guest → join (to A); A's patch → patch (to B); a bad patch → reject
  const b = await open(ws(file.id));
  b.send({ type: 'hello', token: null, key: file.edit_key, client: 'client-b-0123456789abcdefgh', since: 0, name: 'Guest Bo' });
  const wb = await b.next((m) => m.type === 'welcome', 'welcome (B)');
  assert.deepEqual(wb.resume.map((/** @type {any} */ m) => m.type), ['patch'], 'since 0: a resume');
  await a.next((m) => m.type === 'join', 'join');
  a.send({ type: 'patch', id: 2, ops: [{ op: 'delete', id: 'nothing' }] });
  const relayed = await b.next((m) => m.type === 'patch' && m.v === 2, 'patch (B)');
  assert.equal(relayed.by, welcome.you);
  a.send(/** @type {any} */ ({ type: 'patch', id: 3, ops: [{ op: 'move', id: 'r1' }] })); // deliberately outside the type
  const reject = await a.next((m) => m.type === 'reject', 'reject');
  assert.deepEqual([reject.id, reject.code], [3, 'invalid']);

  // presence → presences
  a.send({ type: 'presence', page: 'page1', cursor: [10, 20], sel: ['r1'], camera: [0, 0, 1], t: 7 });
  b.send({ type: 'presence', page: 'page1' });
  const pres = await b.next((m) => m.type === 'presences' && m.people.some((/** @type {any} */ p) => p.id === welcome.you && p.cursor), 'presences');
  assert.deepEqual(pres.people.find((/** @type {any} */ p) => p.id === welcome.you).sel, ['r1']);

  // event → event (to everyone else, not back to its sender)
  a.send({ type: 'event', data: { reaction: 'thumbs-up', at: [10, 20] } });
  const event = await b.next((m) => m.type === 'event', 'event (B)');
  assert.deepEqual([event.by, event.data], [welcome.you, { reaction: 'thumbs-up', at: [10, 20] }]);

  // an app token: a third person makes the room busy (presence-rate); its token is about
  // to expire (notice) and is refreshed (refresh → refreshed)
  const appTok = () => appToken({ sub: 'user-m', name: 'Em', color: '#336699', files: { [file.id]: 'edit' }, exp: Math.floor(Date.now() / 1000) + 120 });
  const c = await open(ws(file.id));
  c.send({ type: 'hello', token: appTok(), key: null, client: 'client-c-0123456789abcdefgh', since: null });
  await c.next((m) => m.type === 'welcome', 'welcome (C)');
  const joinC = await a.next((m) => m.type === 'join' && m.people.some((/** @type {any} */ p) => p.sub === 'user-m'), 'join (C)');
  assert.equal(joinC.people[0].color, '#336699');
  await a.next((m) => m.type === 'presence-rate', 'presence-rate');
  const notice = await c.next((m) => m.type === 'notice' && m.reason === 'token-expiring', 'notice');
  assert.equal(notice.code, 4001);
  c.send({ type: 'refresh', token: appTok() });
  await c.next((m) => m.type === 'refreshed', 'refreshed');

  // the link narrows to view → role (to everyone)
  await node.api('PATCH', `/api/files/${file.id}`, { token, body: { link: 'view' } });
  const role = await a.next((m) => m.type === 'role', 'role');
  assert.deepEqual([role.id, role.role], [wb.you, 'viewer']);

  // a named version → version; a restore → patch (by restore) and restored
  const v = await node.api('POST', `/api/files/${file.id}/versions`, { token, body: { title: 'First' } });
  await a.next((m) => m.type === 'version' && m.event === 'saved' && m.version.id === v.id, 'version');
  await node.api('POST', `/api/files/${file.id}/versions/${v.id}/restore`, { token });
  await a.next((m) => m.type === 'restored', 'restored');

  // the guest leaves → leave
  b.ws.close(1000);
  await a.next((m) => m.type === 'leave' && m.ids.includes(wb.you), 'leave');
  await sleep(100);

  for (const s of sockets) {
    for (const m of s.got) seen.add(m.type);
    assert.deepEqual(s.bad.map((e) => e.message), [], 'every server message matches the package\'s types');
    s.ws.close(1000);
  }
  assert.deepEqual([...seen].sort(), Object.keys(SERVER_FIELDS).sort(), 'every server message was seen');
});
