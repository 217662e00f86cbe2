// A room: one open file, as an app sees it. It wraps a Connection (the socket and its
// rules) and keeps what a UI draws from in immutable snapshots: every change makes a new
// `doc` object (nodes that did not change keep their identity), a new `people` array, a
// new `others` map, a new `status` object. So a UI can compare references to know what
// changed (React's useSyncExternalStore does exactly that).

import { Connection } from './connection.js';
import { DocState } from './doc.js';
import { Glide } from './glide.js';
import { Outbox } from './outbox.js';
import { keys } from './tabstore.js';

/** @import { Doc, Op, Person, Presence, PresenceEntry, Role } from './messages.js' */

/**
 * @typedef {'connecting' | 'online' | 'offline' | 'needs-user' | 'sign-in' | 'stopped'} State
 *   connecting; online (welcomed); offline (a retry is scheduled at `retryAt`); needs-user (4029:
 *   retry only when the person asks, `room.retry()`); sign-in (credentials refused); stopped.
 */

/**
 * @typedef {object} Status
 * @property {State} state
 * @property {string} reason a short sentence for a status bar ('' when online)
 * @property {number | null} retryAt when a retry is scheduled (ms since the epoch)
 * @property {number} waiting local edits the server has not confirmed yet
 */

/**
 * Another person's presence as the room keeps it: the latest full state we were sent.
 * @typedef {object} Other
 * @property {string} id
 * @property {string | null} page
 * @property {[number, number] | null} cursor
 * @property {string[] | null} sel
 * @property {[number, number, number] | null} camera
 */

/**
 * A cursor to draw: another person on our page, at a position that glides between the
 * room's presence ticks.
 * @typedef {object} Cursor
 * @property {string} id
 * @property {string} name
 * @property {string | undefined} color
 * @property {number} x
 * @property {number} y
 */

/**
 * @typedef {object} RoomEvents
 * @property {Doc} doc the document changed (the new `room.doc`)
 * @property {Person[]} people someone joined, left or changed role
 * @property {{id: string, role: Role, you: boolean}} role someone's role changed (`you`: this person's)
 * @property {Map<string, Other>} others someone's presence changed
 * @property {Status} status
 * @property {import('./messages.js').WelcomeMessage} welcome
 * @property {import('./messages.js').RejectMessage} reject a patch or message was refused
 * @property {import('./messages.js').NoticeMessage} notice
 * @property {{code: number, action: string, reason: string}} closed the socket closed
 * @property {import('./messages.js').RefreshedMessage} refreshed an app token was refreshed
 * @property {import('./messages.js').VersionMessage} version a version was saved, renamed or deleted
 * @property {import('./messages.js').RestoredMessage} restored the file was restored to a version
 * @property {import('./messages.js').RemoteEventMessage} event someone else sent an event (`sendEvent`)
 * @property {import('./messages.js').ServerMessage} message every message from the server
 */

/**
 * @typedef {object} RoomOptions
 * @property {string} url the socket URL
 * @property {string} fileId
 * @property {string} client this tab's secret client id
 * @property {string | null} [token]
 * @property {(() => string | Promise<string>) | null} [getToken]
 * @property {string | null} [key]
 * @property {string} [name]
 * @property {import('./tabstore.js').StorageLike | null} [storage]
 * @property {typeof WebSocket} [WebSocket]
 * @property {() => void} [onClose]
 */

export class Room {
  /** @param {RoomOptions} o */
  constructor(o) {
    this.fileId = o.fileId;
    this.client = o.client;
    const storage = o.storage ?? null;
    this.storageKeys = keys(o.fileId, o.client);
    /** @type {{version: number, doc: Doc, role?: Role | null} | null} */
    let saved = null;
    try {
      const raw = storage?.getItem(this.storageKeys.doc);
      saved = raw ? JSON.parse(raw) : null;
    } catch {
      saved = null; // a damaged record: start from the server's document
    }
    this.storage = storage;
    this.onClose = o.onClose ?? null;
    /** @type {Map<string, Set<Function>>} */
    this.listeners = new Map();
    this.conn = new Connection({
      url: o.url,
      token: o.token ?? null,
      getToken: o.getToken ?? undefined,
      key: o.key ?? null,
      name: o.name ?? '',
      client: o.client,
      outbox: new Outbox({ storage, key: this.storageKeys.outbox }),
      doc: new DocState(saved ? { version: saved.version, doc: saved.doc } : {}),
      role: saved?.role ?? null,
      saveDoc: storage ? (version, doc) => this.keepDoc(version, doc) : undefined,
      WebSocket: o.WebSocket,
    });
    /** @type {Person[]} */
    this.people = [];
    /** @type {Map<string, Other>} */
    this.others = new Map();
    /** @type {Map<string, Glide>} */
    this.glides = new Map();
    /** @type {Status} */
    this.status = { state: 'stopped', reason: '', retryAt: null, waiting: this.conn.outbox.waiting };
    /** @type {Presence} */
    this.presence = {};
    this.closed = false;
    /** Resolves at the first welcome; rejects when the room stops before one. */
    this.ready = new Promise((resolve, reject) => {
      this.settleReady = { resolve, reject };
    });
    this.ready.catch(() => {}); // nobody has to wait for it
    this.wire();
    this.conn.start();
  }

  /** The document to draw: the server's state with this client's pending edits on top. */
  get doc() {
    return /** @type {Doc} */ (this.conn.doc.view);
  }

  /** The version of the server state the room holds (null before the first welcome). */
  get version() {
    return this.conn.doc.version;
  }

  /** This person's id in the file (null before the first welcome). */
  get you() {
    return this.conn.you;
  }

  /** @returns {Role | null} */
  get role() {
    return this.conn.role;
  }

  /** Why this person is a viewer when they asked for more (`view-link`, `editors-full`). */
  get roleReason() {
    return this.conn.roleReason;
  }

  /** The room's presence rate (`presence_hz`, changed by `presence-rate`). */
  get presenceHz() {
    return this.conn.presenceHz;
  }

  /** @private */
  wire() {
    const c = this.conn;
    c.on('doc', (view) => this.emit('doc', view));
    c.on('status', (s) => {
      const next = { state: s.state, reason: s.reason, retryAt: s.retryAt, waiting: s.waiting };
      const cur = this.status;
      if (cur.state === next.state && cur.reason === next.reason && cur.retryAt === next.retryAt && cur.waiting === next.waiting) return;
      this.status = next;
      if (next.state === 'stopped' || next.state === 'sign-in') {
        this.settleReady.reject(new Error(next.reason || next.state));
      }
      this.emit('status', next);
    });
    c.on('people', (people) => {
      this.people = [...people.values()];
      let changed = false;
      for (const id of [...this.others.keys()]) {
        if (!people.has(id)) {
          this.others.delete(id);
          this.glides.delete(id);
          changed = true;
        }
      }
      if (changed) this.others = new Map(this.others);
      this.emit('people', this.people);
      if (changed) this.emit('others', this.others);
    });
    c.on('presences', (entries) => this.onPresences(entries));
    c.on('welcome', (m) => {
      this.others = new Map();
      this.glides.clear();
      // The server knows nothing of our presence on a new socket: say it all again.
      if (Object.keys(this.presence).length) c.presence(this.presence);
      this.settleReady.resolve(this);
      this.emit('welcome', m);
      this.emit('others', this.others);
    });
    c.on('role', (m) => this.emit('role', m));
    c.on('reject', (m) => this.emit('reject', m));
    c.on('notice', (m) => this.emit('notice', m));
    c.on('closed', (m) => this.emit('closed', m));
    c.on('refreshed', (m) => this.emit('refreshed', m));
    c.on('message', (m) => {
      if (m.type === 'version' || m.type === 'restored' || m.type === 'event') this.emit(m.type, m);
    });
    c.on('receive', (m) => this.emit('message', m));
  }

  /** @private @param {PresenceEntry[]} entries */
  onPresences(entries) {
    const now = nowMs();
    const next = new Map(this.others);
    const you = this.conn.you;
    for (const e of entries) {
      if (e.id === you) continue;
      const prev = next.get(e.id) ?? { id: e.id, page: null, cursor: null, sel: null, camera: null };
      /** @type {Other} */
      const o = { ...prev, page: e.page ?? null };
      if (e.page !== prev.page && !('cursor' in e)) {
        // Moved to another page: what we knew of their cursor is stale.
        o.cursor = null;
        o.sel = null;
        o.camera = null;
      }
      if ('cursor' in e) o.cursor = e.cursor ?? null;
      if ('sel' in e) o.sel = e.sel ?? null;
      if ('camera' in e) o.camera = e.camera ?? null;
      next.set(e.id, o);
      let g = this.glides.get(e.id);
      if (!g) {
        g = new Glide(1100 / this.conn.presenceHz);
        this.glides.set(e.id, g);
      }
      g.duration = 1100 / this.conn.presenceHz; // a little over one tick: no stops between
      g.target(o.cursor, now);
    }
    this.others = next;
    this.emit('others', next);
  }

  /**
   * The cursors of others on `page` (this person's page by default), each where it should
   * be drawn at time `now` (performance.now()): it glides to the latest position over a
   * little more than one presence tick. Call it from requestAnimationFrame while
   * `cursorsMoving()` is true.
   * @param {{page?: string | null, now?: number}} [o]
   * @returns {Cursor[]}
   */
  cursors({ page = this.presence.page ?? null, now = nowMs() } = {}) {
    /** @type {Cursor[]} */
    const out = [];
    for (const [id, o] of this.others) {
      if (o.page !== page) continue;
      const pos = this.glides.get(id)?.at(now);
      if (!pos) continue;
      const p = this.people.find((x) => x.id === id);
      out.push({ id, name: p?.name ?? 'Someone', color: p?.color, x: pos[0], y: pos[1] });
    }
    return out;
  }

  /** True while some cursor is still gliding towards its target. */
  cursorsMoving(now = nowMs()) {
    for (const g of this.glides.values()) if (g.moving(now)) return true;
    return false;
  }

  /**
   * Listens to an event; returns a function that stops listening.
   * @template {keyof RoomEvents} E
   * @param {E} event
   * @param {(value: RoomEvents[E]) => void} fn
   * @returns {() => void}
   */
  subscribe(event, fn) {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  /** @private @param {string} event @param {unknown} value */
  emit(event, value) {
    for (const fn of [...(this.listeners.get(event) ?? [])]) {
      try {
        fn(value);
      } catch (e) {
        // One listener's bug must not stop the others or the connection.
        const report = /** @type {any} */ (globalThis).reportError ?? console.error;
        report(e);
      }
    }
  }

  /**
   * Edits the document: applied to `doc` at once, queued (kept in storage when there is
   * one), and sent when online, resent with its original id after a reconnect. Returns
   * false (and does nothing) for viewers.
   * @param {Op[]} ops
   * @returns {boolean}
   */
  patch(ops) {
    if (this.closed) return false;
    return this.conn.edit(ops);
  }

  /**
   * Says where this person is and what they do: any of page, cursor, sel, camera. Sent at
   * most 20 times a second (less when the room says so), only what changed.
   * @param {Presence} p
   */
  setPresence(p) {
    this.presence = { ...this.presence, ...p };
    this.conn.presence(p);
    if ('page' in p) this.emit('others', this.others);
  }

  /**
   * Sends an event to everyone else in the file now (a reaction, "the AI is thinking"):
   * never stored or resent, so one sent while offline is dropped (returns false). The
   * node drops events past its rates silently and rejects data over its size limit
   * (`reject` with `too-large`).
   * @param {import('./messages.js').JsonValue} data
   * @returns {boolean} whether it was sent
   */
  sendEvent(data) {
    if (this.closed) return false;
    return this.conn.sendEvent(data);
  }

  /** Connect now (after `needs-user`, or to skip a backoff wait). */
  retry() {
    if (!this.closed) this.conn.retry();
  }

  /** The page was hidden or shown: no presence while hidden, and the state is kept. */
  setHidden(hidden) {
    this.conn.setHidden(hidden);
  }

  /**
   * Resolves once every local edit is confirmed by the server (rejects after `timeoutMs`).
   * @param {number} [timeoutMs]
   * @returns {Promise<void>}
   */
  flushed(timeoutMs = 30_000) {
    return new Promise((resolve, reject) => {
      if (this.conn.outbox.waiting === 0) return resolve();
      const timer = setTimeout(() => {
        off();
        reject(new Error(`${this.conn.outbox.waiting} edits still unconfirmed`));
      }, timeoutMs);
      const off = this.subscribe('status', (s) => {
        if (s.waiting === 0) {
          clearTimeout(timer);
          off();
          resolve();
        }
      });
    });
  }

  /** Keeps the server's document in storage now (it is kept at most once a second otherwise): call it when the page goes away. */
  persist() {
    this.conn.persistDoc();
  }

  /** Leaves the file: closes the socket for good. Unconfirmed edits stay in storage. */
  close() {
    if (this.closed) return;
    this.conn.stop();
    this.closed = true;
    this.settleReady.reject(new Error('closed'));
    this.onClose?.();
    this.listeners.clear();
  }

  /** @private @param {number} version @param {Doc} doc */
  keepDoc(version, doc) {
    try {
      this.storage?.setItem(this.storageKeys.doc, JSON.stringify({ version, doc, role: this.conn.role }));
    } catch {
      // over quota: a reload fetches the whole document instead
    }
  }
}

function nowMs() {
  return globalThis.performance ? globalThis.performance.now() : Date.now();
}
