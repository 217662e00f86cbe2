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
    constructor(o: {
        url: string;
        token?: string | null | undefined;
        getToken?: (() => (string | Promise<string>)) | undefined;
        key?: string | null | undefined;
        name?: string | undefined;
        client: string;
        outbox?: Outbox | undefined;
        doc?: DocState | undefined;
        saveDoc?: ((version: number, doc: object) => void) | undefined;
        WebSocket?: {
            new (url: string | URL, protocols?: string | string[]): WebSocket;
            prototype: WebSocket;
            readonly CONNECTING: 0;
            readonly OPEN: 1;
            readonly CLOSING: 2;
            readonly CLOSED: 3;
        } | undefined;
        timers?: {
            setTimeout?: (f: Function, ms: number) => any;
            clearTimeout?: (h: any) => void;
            now?: () => number;
        } | undefined;
        role?: "editor" | "viewer" | null | undefined;
        random?: (() => number) | undefined;
        flushMs?: number | undefined;
        welcomeTimeoutMs?: number | undefined;
    });
    url: string;
    token: string | null;
    /** @type {(() => (string|Promise<string>)) | null} */
    getToken: (() => (string | Promise<string>)) | null;
    hadToken: boolean;
    key: string | null;
    name: string;
    client: string;
    outbox: Outbox;
    doc: DocState;
    saveDoc: ((version: number, doc: object) => void) | null;
    WS: {
        new (url: string | URL, protocols?: string | string[]): WebSocket;
        prototype: WebSocket;
        readonly CONNECTING: 0;
        readonly OPEN: 1;
        readonly CLOSING: 2;
        readonly CLOSED: 3;
    };
    setTimeout: (f: Function, ms: number) => any;
    clearTimeout: (h: any) => void;
    now: () => number;
    random: () => number;
    flushMs: number;
    welcomeTimeoutMs: number;
    welcomeTimer: any;
    backoff: Backoff;
    presenceOut: PresenceThrottle;
    ws: WebSocket | null;
    welcomed: boolean;
    state: string;
    reason: string;
    retryAt: any;
    retryTimer: any;
    flushTimer: any;
    lastPumpAt: number;
    saveTimer: any;
    movedBefore: boolean;
    fresh: boolean;
    you: any;
    role: "editor" | "viewer" | null;
    roleReason: any;
    people: Map<any, any>;
    presenceHz: number;
    handlers: {};
    on(event: any, fn: any): this;
    emit(event: any, ...args: any[]): void;
    setState(state: any, reason?: string, retryAt?: null): void;
    /** Opens the socket (no-op while one is open or a retry is pending). */
    start(): void;
    /** Closes for good (the page is leaving the file). */
    stop(): void;
    /**
     * The person asked to retry (after 4029, to skip a backoff wait, or when the network is
     * back): connect now. A socket still waiting for its welcome is replaced (it may have
     * been opened while the network was gone); a welcomed one is kept.
     */
    retry(): void;
    connect(): void;
    /** Sends a fresh app token on the live socket (the node answers `refreshed`). */
    refreshToken(): Promise<void>;
    open(): void;
    /** Drops the current socket without its close handler running. */
    detach(code: any): void;
    cancelRetry(): void;
    clearWelcomeTimer(): void;
    afterClose(code: any, reason?: string): void;
    scheduleRetry(wait: any, reason: any): void;
    /** Reconnects at once asking for the whole document (after a gap or an unknown ack). */
    resync(): void;
    send(msg: any): boolean;
    receive(msg: any): void;
    onWelcome(msg: any): void;
    onAck(msg: any): void;
    onPatch(msg: any): void;
    afterChange(remote: any): void;
    persistDoc(): void;
    /**
     * A local edit: applied to the view at once, queued (and stored), and sent within
     * `flushMs` when connected. Returns false for viewers (nothing happens).
     */
    edit(ops: any): boolean;
    /** Pumps within `flushMs` of the last pump: at most 1000/flushMs sends a second. */
    schedulePump(): void;
    /** Sends what the outbox allows now (resends first, at most 30 in flight). */
    pump(): void;
    /** Presence: any of page, cursor, sel, camera. Throttled, coalesced, sent when it can. */
    presence(partial: any): void;
    /**
     * Sends an event now when the socket is welcomed; events are never queued.
     * @param {import('./messages.js').JsonValue} data
     * @returns {boolean}
     */
    sendEvent(data: import("./messages.js").JsonValue): boolean;
    /** The tab was hidden or shown (document.visibilityState). */
    setHidden(hidden: any): void;
}
import { Outbox } from './outbox.js';
import { DocState } from './doc.js';
import { Backoff } from './backoff.js';
import { PresenceThrottle } from './presence.js';
