// Atrium's connection module: one file, one WebSocket, and everything a client needs to
// keep editing through disconnects. Copy it into your app; it depends only on the
// small pure modules next to it and on a WebSocket class.
//
//   import { Connection } from './connection.js';
//   const conn = new Connection({ url: 'wss://host/files/F/ws', token, key, name, client, outbox, doc });
//   conn.on('doc', (view) => render(view));        // server state + your pending edits
//   conn.on('status', (s) => showStatus(s));
//   conn.start();
//   conn.edit([{ op: 'set', id: 'r1', props: { x: 10 } }]);   // works offline too
//   conn.presence({ cursor: [x, y] });                         // throttled and coalesced
//
// What it does, as the wire contract asks:
// - says `hello` first, with `since` = the version of the document it holds, so a
//   reconnect gets a `resume` (only what it missed) instead of the whole document;
// - applies the server's patches and the acks of its own patches in version order to the
//   server state, and shows that state with the pending local edits re-applied on top;
//   a skipped version (a lost message) reconnects for a clean resume;
// - reconnects with backoff and jitter (backoff.js), handling close codes as the
//   contract's table says (closes.js);
// - keeps edits in an Outbox (outbox.js, persisted), resends unconfirmed patches with
//   their original ids, at most 30 in flight, and merges long offline queues;
// - sends presence through a PresenceThrottle (presence.js).
//
// Events (conn.on(name, fn)): 'status' {state, reason, retryAt, waiting}, 'welcome' msg,
// 'doc' (view, {remote}), 'people' (Map id -> person), 'presences' [entries],
// 'role' {id, role, you}, 'reject' msg, 'notice' msg, 'closed' {code, action, reason},
// 'message' msg (any other server message, e.g. history's `version` and `restored`),
// 'receive' msg (every server message, before the connection acts on it).
// States: 'connecting', 'online', 'offline' (a retry is scheduled), 'needs-user' (retry
// only when the person asks: call retry()), 'sign-in' (credentials refused), 'stopped'.

import { Backoff } from './backoff.js';
import { closeAction, restartDelay, retryHint } from './closes.js';
import { DocState } from './doc.js';
import { Outbox } from './outbox.js';
import { PresenceThrottle } from './presence.js';

export class Connection {
  /**
   * @param {object} o
   * @param {string} o.url the socket's URL, `ws(s)://<host>/files/<file id>/ws`
   * @param {string|null} [o.token] session token (signed in) or null
   * @param {() => (string|Promise<string>)} [o.getToken] instead of `token`: returns an app
   *   token from the app's backend (docs/auth.md), asked before every hello and again when
   *   the node says the token is expiring (the socket is then refreshed in place)
   * @param {string|null} [o.key] link key or null
   * @param {string} [o.name] display name (guests)
   * @param {string} o.client this tab's secret client id, the same across reconnects
   * @param {Outbox} [o.outbox] the (persisted) queue of edits
   * @param {DocState} [o.doc] the document to start from (e.g. kept from last time)
   * @param {(version: number, doc: object) => void} [o.saveDoc] keeps the server state (throttled)
   * @param {typeof WebSocket} [o.WebSocket]
   * @param {{setTimeout?: (f: Function, ms: number) => any, clearTimeout?: (h: any) => void, now?: () => number}} [o.timers]
   * @param {'editor' | 'viewer' | null} [o.role] the role last held (kept with the document)
   * @param {() => number} [o.random]
   * @param {number} [o.flushMs] edits are sent at most this often (a drag makes many)
   * @param {number} [o.welcomeTimeoutMs] a socket not welcomed this long after it was made
   *   (a handshake that hangs, a node that never answers) is dropped and retried with backoff
   */
  constructor(o) {
    this.url = o.url;
    this.token = o.token ?? null;
    /** @type {(() => (string|Promise<string>)) | null} */
    this.getToken = o.getToken ?? null;
    this.hadToken = false; // welcomed with a token from getToken since the last refusal
    this.key = o.key ?? null;
    this.name = o.name ?? '';
    this.client = o.client;
    this.outbox = o.outbox ?? new Outbox();
    this.doc = o.doc ?? new DocState();
    this.saveDoc = o.saveDoc ?? null;
    this.WS = o.WebSocket ?? globalThis.WebSocket;
    /** @type {{setTimeout?: (f: Function, ms: number) => any, clearTimeout?: (h: any) => void, now?: () => number}} */
    const t = o.timers ?? {};
    this.setTimeout = t.setTimeout ?? ((f, ms) => setTimeout(f, ms));
    this.clearTimeout = t.clearTimeout ?? ((h) => clearTimeout(h));
    this.now = t.now ?? (() => Date.now());
    this.random = o.random ?? Math.random;
    this.flushMs = o.flushMs ?? 50;
    this.welcomeTimeoutMs = o.welcomeTimeoutMs ?? 15_000;
    this.welcomeTimer = null;

    this.backoff = new Backoff({ random: this.random });
    this.presenceOut = new PresenceThrottle({
      send: (m) => this.send(m),
      now: this.now,
      setTimeout: this.setTimeout,
      clearTimeout: this.clearTimeout,
    });
    this.ws = null;
    this.welcomed = false;
    this.state = 'stopped';
    this.reason = '';
    this.retryAt = null;
    this.retryTimer = null;
    this.flushTimer = null;
    this.lastPumpAt = -Infinity;
    this.saveTimer = null;
    this.movedBefore = false;
    this.fresh = false; // next hello asks for the whole document (since: null)
    this.you = null;
    this.role = o.role ?? null;
    this.roleReason = null;
    this.people = new Map();
    this.presenceHz = 20;
    this.handlers = {};
    this.doc.rebase(this.outbox.pendingOps());
  }

  on(event, fn) {
    (this.handlers[event] ??= []).push(fn);
    return this;
  }

  emit(event, ...args) {
    for (const fn of this.handlers[event] ?? []) fn(...args);
  }

  setState(state, reason = '', retryAt = null) {
    this.state = state;
    this.reason = reason;
    this.retryAt = retryAt;
    this.emit('status', { state, reason, retryAt, waiting: this.outbox.waiting });
  }

  /** Opens the socket (no-op while one is open or a retry is pending). */
  start() {
    if (this.ws || this.retryTimer !== null) return;
    this.connect();
  }

  /** Closes for good (the page is leaving the file). */
  stop() {
    this.cancelRetry();
    this.detach(1000);
    this.persistDoc();
    this.setState('stopped');
  }

  /**
   * The person asked to retry (after 4029, to skip a backoff wait, or when the network is
   * back): connect now. A socket still waiting for its welcome is replaced (it may have
   * been opened while the network was gone); a welcomed one is kept.
   */
  retry() {
    if (this.ws && this.welcomed) return;
    if (this.ws) this.detach(4000);
    this.cancelRetry();
    this.backoff.reset();
    this.connect();
  }

  connect() {
    this.retryTimer = null;
    this.welcomed = false;
    this.setState('connecting');
    if (this.getToken) {
      // A fresh token for every hello; a backend that cannot give one counts as offline,
      // one that refuses (an error with status 401) as signed out.
      Promise.resolve()
        .then(() => /** @type {() => (string|Promise<string>)} */ (this.getToken)())
        .then((t) => {
          if (this.state !== 'connecting' || this.ws) return;
          this.token = t;
          this.open();
        }, (e) => {
          if (this.state !== 'connecting' || this.ws) return;
          // Credentials refused (a wrong password, a backend saying 401): ask the person.
          if (e && e.status === 401) this.setState('sign-in', 'the credentials were refused');
          else this.afterClose(1006);
        });
      return;
    }
    this.open();
  }

  /** Sends a fresh app token on the live socket (the node answers `refreshed`). */
  async refreshToken() {
    if (!this.getToken || !this.ws) return;
    try {
      this.token = await this.getToken();
    } catch {
      return; // the node closes with 4001 at exp; the reconnect asks again
    }
    this.send({ type: 'refresh', token: this.token });
  }

  open() {
    let ws;
    try {
      ws = new this.WS(this.url);
    } catch {
      this.afterClose(1006);
      return;
    }
    this.ws = ws;
    // The node answers a hello within its own deadline (10 s); past ours, the socket is dead.
    this.welcomeTimer = this.setTimeout(() => {
      this.welcomeTimer = null;
      if (this.ws !== ws || this.welcomed) return;
      this.detach(4000);
      this.afterClose(1006, 'no welcome in time');
    }, this.welcomeTimeoutMs);
    ws.onopen = () => {
      ws.send(JSON.stringify({
        type: 'hello',
        token: this.token,
        key: this.key,
        client: this.client,
        since: this.fresh ? null : this.doc.version,
        name: this.name,
      }));
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      this.receive(msg);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.afterClose(ev.code, ev.reason);
    };
    ws.onerror = () => {}; // a close always follows
  }

  /** Drops the current socket without its close handler running. */
  detach(code) {
    this.clearWelcomeTimer();
    const ws = this.ws;
    this.ws = null;
    this.welcomed = false;
    this.presenceOut.setEnabled(false);
    if (this.flushTimer !== null) this.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close(code);
      } catch {
        // already closed
      }
    }
  }

  cancelRetry() {
    if (this.retryTimer !== null) this.clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  clearWelcomeTimer() {
    if (this.welcomeTimer !== null) this.clearTimeout(this.welcomeTimer);
    this.welcomeTimer = null;
  }

  afterClose(code, reason = '') {
    this.clearWelcomeTimer();
    this.welcomed = false;
    this.presenceOut.setEnabled(false);
    if (this.flushTimer !== null) this.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.persistDoc();
    if (code === 4001 && this.getToken && this.hadToken) {
      // The app token ran out or was revoked on a live socket: ask the app once more;
      // a refusal at the next hello means sign-in.
      this.hadToken = false;
      this.emit('closed', { code, action: 'reconnect', delay: 'now', reason: 'token expired' });
      this.scheduleRetry(0, 'getting a new token');
      return;
    }
    const act = closeAction(code, { movedBefore: this.movedBefore });
    this.emit('closed', { code, ...act });
    if (act.action === 'reconnect') {
      let wait;
      if (act.delay === 'now') {
        this.movedBefore = true;
        wait = 0;
      } else if (act.delay === 'restart') {
        wait = restartDelay(this.random);
      } else {
        // The backoff still grows; the node's hint, when it gave one, says when.
        wait = this.backoff.next();
        wait = retryHint(reason) ?? wait;
      }
      this.scheduleRetry(wait, act.reason);
    } else if (act.action === 'wait-user') {
      this.setState('needs-user', act.reason);
    } else if (act.action === 'sign-in') {
      this.setState('sign-in', act.reason);
    } else {
      if (code === 4004) this.outbox.clear();
      this.setState('stopped', act.reason);
    }
  }

  scheduleRetry(wait, reason) {
    this.cancelRetry();
    this.retryTimer = this.setTimeout(() => this.connect(), wait);
    this.setState('offline', reason, this.now() + wait);
  }

  /** Reconnects at once asking for the whole document (after a gap or an unknown ack). */
  resync() {
    this.fresh = true;
    this.detach(1000);
    this.scheduleRetry(0, 'resynchronising');
  }

  send(msg) {
    if (!this.ws || !this.welcomed) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  receive(msg) {
    this.emit('receive', msg);
    switch (msg.type) {
      case 'welcome':
        return this.onWelcome(msg);
      case 'ack':
        this.onAck(msg);
        return this.afterChange(false);
      case 'patch':
        this.onPatch(msg);
        return this.afterChange(true);
      case 'reject':
        if (msg.id !== null && msg.id !== undefined) {
          this.outbox.reject(msg.id);
          this.afterChange(false);
        }
        return this.emit('reject', msg);
      case 'presences':
        return this.emit('presences', msg.people ?? []);
      case 'join':
        for (const p of msg.people ?? []) this.people.set(p.id, p);
        return this.emit('people', this.people);
      case 'leave':
        for (const id of msg.ids ?? []) this.people.delete(id);
        return this.emit('people', this.people);
      case 'role': {
        const p = this.people.get(msg.id);
        if (p) p.role = msg.role;
        if (msg.id === this.you) {
          this.role = msg.role;
          this.roleReason = msg.role === 'viewer' ? this.roleReason : null;
        }
        this.emit('role', { id: msg.id, role: msg.role, you: msg.id === this.you });
        return this.emit('people', this.people);
      }
      case 'presence-rate':
        this.presenceHz = msg.hz;
        return this.presenceOut.setRate(msg.hz);
      case 'notice':
        if (msg.reason === 'token-expiring') this.refreshToken();
        return this.emit('notice', msg);
      case 'refreshed':
        return this.emit('refreshed', msg);
      default:
        // Messages this module has no part in (history's `version`, `restored`, `event`s):
        // the app's.
        return this.emit('message', msg);
    }
  }

  onWelcome(msg) {
    this.clearWelcomeTimer();
    this.you = msg.you;
    this.role = msg.role;
    this.roleReason = msg.reason ?? null;
    this.presenceHz = msg.presence_hz ?? 20;
    this.people = new Map((msg.people ?? []).map((p) => [p.id, p]));
    this.outbox.newSocket();
    if (msg.doc) {
      this.doc.reset(msg.version, msg.doc);
    } else {
      for (const m of msg.resume ?? []) {
        if (m.type === 'ack') this.onAck(m);
        else this.onPatch(m);
        if (!this.ws) return; // a gap: resyncing
      }
    }
    if (this.doc.version !== msg.version) return this.resync();
    // The view holds the welcome's document before anyone hears of the welcome, so a
    // listener never sees the state from before it (an empty document on a first open).
    this.doc.rebase(this.outbox.pendingOps());
    this.fresh = false;
    this.welcomed = true;
    this.hadToken = this.getToken !== null;
    this.backoff.reset();
    this.movedBefore = false;
    this.setState('online');
    this.presenceOut.setRate(Math.min(20, this.presenceHz));
    this.presenceOut.setEnabled(true);
    this.emit('welcome', msg);
    this.emit('people', this.people);
    this.afterChange(true);
    this.pump();
  }

  onAck(msg) {
    const entry = this.outbox.ack(msg.id);
    if (msg.v <= (this.doc.version ?? -1)) return; // already in the state we hold
    if (!entry) return this.resync(); // an ack of ops we no longer have
    if (this.doc.applyServer(msg.v, entry.ops) === 'gap') this.resync();
  }

  onPatch(msg) {
    if (this.doc.applyServer(msg.v, msg.ops) === 'gap') this.resync();
  }

  afterChange(remote) {
    this.doc.rebase(this.outbox.pendingOps());
    this.emit('doc', this.doc.view, { remote });
    if (this.saveDoc && this.saveTimer === null) {
      this.saveTimer = this.setTimeout(() => this.persistDoc(), 1000);
    }
    if (this.state === 'online' || this.state === 'offline') {
      this.emit('status', { state: this.state, reason: this.reason, retryAt: this.retryAt, waiting: this.outbox.waiting });
    }
    if (this.welcomed) this.schedulePump();
  }

  persistDoc() {
    if (this.saveTimer !== null) this.clearTimeout(this.saveTimer);
    this.saveTimer = null;
    if (this.saveDoc && this.doc.version !== null) this.saveDoc(this.doc.version, this.doc.server);
  }

  /**
   * A local edit: applied to the view at once, queued (and stored), and sent within
   * `flushMs` when connected. Returns false for viewers (nothing happens).
   */
  edit(ops) {
    if (this.role === 'viewer') return false;
    this.outbox.edit(ops);
    this.doc.rebase(this.outbox.pendingOps());
    this.emit('doc', this.doc.view, { remote: false });
    this.emit('status', { state: this.state, reason: this.reason, retryAt: this.retryAt, waiting: this.outbox.waiting });
    this.schedulePump();
    return true;
  }

  /** Pumps within `flushMs` of the last pump: at most 1000/flushMs sends a second. */
  schedulePump() {
    if (!this.welcomed || this.flushTimer !== null) return;
    if (this.outbox.waiting <= this.outbox.inFlight) return; // nothing new to send
    const wait = Math.max(0, this.lastPumpAt + this.flushMs - this.now());
    this.flushTimer = this.setTimeout(() => {
      this.flushTimer = null;
      this.pump();
    }, wait);
  }

  /** Sends what the outbox allows now (resends first, at most 30 in flight). */
  pump() {
    if (!this.welcomed) return;
    this.lastPumpAt = this.now();
    for (const p of this.outbox.take()) this.send({ type: 'patch', id: p.id, ops: p.ops });
  }

  /** Presence: any of page, cursor, sel, camera. Throttled, coalesced, sent when it can. */
  presence(partial) {
    this.presenceOut.update(partial);
  }

  /**
   * Sends an event now when the socket is welcomed; events are never queued.
   * @param {import('./messages.js').JsonValue} data
   * @returns {boolean}
   */
  sendEvent(data) {
    return this.send({ type: 'event', data });
  }

  /** The tab was hidden or shown (document.visibilityState). */
  setHidden(hidden) {
    this.presenceOut.setHidden(hidden);
    if (hidden) this.persistDoc();
  }
}
