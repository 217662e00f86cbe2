/** A random id of the id rule's alphabet (18 bytes: 24 characters, 144 bits). */
export function randomId(bytes?: number): string;
/** @param {string} file @param {string} client */
export function keys(file: string, client: string): {
    outbox: string;
    doc: string;
    alive: string;
};
/**
 * Picks this tab's client id for `file`: its own from before a reload (in `session`), an
 * orphan's (a queue in `local` whose tab has gone), or a new one.
 * @param {string} file
 * @param {{local?: StorageLike | null, session?: StorageLike | null, now?: number}} [o]
 */
export function chooseClient(file: string, { local, session, now }?: {
    local?: StorageLike | null;
    session?: StorageLike | null;
    now?: number;
}): string;
/**
 * Keeps the heartbeat of `client` while the tab is open; returns a stop function.
 * @param {string} file @param {string} client
 * @param {{local?: StorageLike | null}} [o]
 */
export function holdClient(file: string, client: string, { local }?: {
    local?: StorageLike | null;
}): () => void;
/** @param {string} file @param {string} client @param {StorageLike} [local] */
export function loadDoc(file: string, client: string, local?: StorageLike): any;
/** @param {string} file @param {string} client @param {object} record @param {StorageLike} [local] */
export function saveDoc(file: string, client: string, record: object, local?: StorageLike): void;
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
    /** @type {Map<string, string>} */
    m: Map<string, string>;
    get length(): number;
    /** @param {number} i */
    key(i: number): string;
    /** @param {string} k */
    getItem(k: string): string | null;
    /** @param {string} k @param {string} v */
    setItem(k: string, v: string): void;
    /** @param {string} k */
    removeItem(k: string): void;
}
/**
 * Something with the Web Storage methods the client uses (localStorage, sessionStorage,
 * or your own, e.g. backed by a file in Node).
 */
export type StorageLike = {
    getItem: (key: string) => string | null;
    setItem: (key: string, value: string) => void;
    removeItem: (key: string) => void;
    key?: ((index: number) => string | null) | undefined;
    length?: number | undefined;
};
