// What a tab keeps for one open file (in localStorage in a browser, or any storage with
// getItem/setItem/removeItem/key/length given to createClient), so edits survive a reload:
//   atrium:outbox:<file>:<client>  the Outbox (pending edits and their ids)
//   atrium:doc:<file>:<client>     the last server state {version, doc, role}
//   atrium:alive:<file>:<client>   a heartbeat (ms) while a tab holds that client id
// The tab's client id lives in sessionStorage (kept across reloads of the tab). A new
// tab adopts the queue of a client whose tab is gone (no heartbeat for 10 s), so edits
// made offline in a closed tab still reach the server, under their original ids.

const ALIVE_MS = 10_000;

/**
 * Something with the Web Storage methods the client uses (localStorage, sessionStorage,
 * or your own, e.g. backed by a file in Node).
 * @typedef {object} StorageLike
 * @property {(key: string) => string | null} getItem
 * @property {(key: string, value: string) => void} setItem
 * @property {(key: string) => void} removeItem
 * @property {(index: number) => string | null} [key]
 * @property {number} [length]
 */

/** A Storage kept in memory (lost with the process): for tests and servers. */
export class MemoryStorage {
  constructor() {
    /** @type {Map<string, string>} */
    this.m = new Map();
  }
  get length() {
    return this.m.size;
  }
  /** @param {number} i */
  key(i) {
    return [...this.m.keys()][i] ?? null;
  }
  /** @param {string} k */
  getItem(k) {
    return this.m.has(k) ? /** @type {string} */ (this.m.get(k)) : null;
  }
  /** @param {string} k @param {string} v */
  setItem(k, v) {
    this.m.set(k, String(v));
  }
  /** @param {string} k */
  removeItem(k) {
    this.m.delete(k);
  }
}

/** A random id of the id rule's alphabet (18 bytes: 24 characters, 144 bits). */
export function randomId(bytes = 18) {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return btoa(String.fromCharCode(...a)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** @param {string} file @param {string} client */
export function keys(file, client) {
  return {
    outbox: `atrium:outbox:${file}:${client}`,
    doc: `atrium:doc:${file}:${client}`,
    alive: `atrium:alive:${file}:${client}`,
  };
}

/**
 * Picks this tab's client id for `file`: its own from before a reload (in `session`), an
 * orphan's (a queue in `local` whose tab has gone), or a new one.
 * @param {string} file
 * @param {{local?: StorageLike | null, session?: StorageLike | null, now?: number}} [o]
 */
export function chooseClient(file, { local = globalThis.localStorage ?? null, session = globalThis.sessionStorage ?? null, now = Date.now() } = {}) {
  const sKey = `atrium:client:${file}`;
  const mine = session?.getItem(sKey);
  if (mine) return mine;
  const prefix = `atrium:outbox:${file}:`;
  const n = local?.length ?? 0;
  for (let i = 0; local && local.key && i < n; i++) {
    const k = local.key(i);
    if (!k || !k.startsWith(prefix)) continue;
    const client = k.slice(prefix.length);
    const alive = Number(local.getItem(keys(file, client).alive) ?? 0);
    if (now - alive > ALIVE_MS) {
      session?.setItem(sKey, client);
      return client;
    }
  }
  const client = randomId();
  session?.setItem(sKey, client);
  return client;
}

/**
 * Keeps the heartbeat of `client` while the tab is open; returns a stop function.
 * @param {string} file @param {string} client
 * @param {{local?: StorageLike | null}} [o]
 */
export function holdClient(file, client, { local = globalThis.localStorage ?? null } = {}) {
  if (!local) return () => {};
  const k = keys(file, client).alive;
  const beat = () => {
    try {
      local.setItem(k, String(Date.now()));
    } catch {
      // storage full: adoption by another tab is only a convenience
    }
  };
  beat();
  const timer = setInterval(beat, 3000);
  // In Node, the heartbeat must not keep the process alive.
  /** @type {any} */ (timer).unref?.();
  return () => {
    clearInterval(timer);
    local.removeItem(k);
  };
}

/** @param {string} file @param {string} client @param {StorageLike} [local] */
export function loadDoc(file, client, local = globalThis.localStorage) {
  try {
    const raw = local.getItem(keys(file, client).doc);
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}

/** @param {string} file @param {string} client @param {object} record @param {StorageLike} [local] */
export function saveDoc(file, client, record, local = globalThis.localStorage) {
  try {
    local.setItem(keys(file, client).doc, JSON.stringify(record));
  } catch {
    // over quota: a reload will fetch the whole document instead
  }
}
