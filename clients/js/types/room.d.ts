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
    constructor(o: RoomOptions);
    fileId: string;
    client: string;
    storageKeys: {
        outbox: string;
        doc: string;
        alive: string;
    };
    storage: import("./tabstore.js").StorageLike | null;
    onClose: (() => void) | null;
    /** @type {Map<string, Set<Function>>} */
    listeners: Map<string, Set<Function>>;
    conn: Connection;
    /** @type {Person[]} */
    people: Person[];
    /** @type {Map<string, Other>} */
    others: Map<string, Other>;
    /** @type {Map<string, Glide>} */
    glides: Map<string, Glide>;
    /** @type {Status} */
    status: Status;
    /** @type {Presence} */
    presence: Presence;
    closed: boolean;
    /** Resolves at the first welcome; rejects when the room stops before one. */
    ready: Promise<any>;
    settleReady: {
        resolve: (value: any) => void;
        reject: (reason?: any) => void;
    };
    /** The document to draw: the server's state with this client's pending edits on top. */
    get doc(): Doc;
    /** The version of the server state the room holds (null before the first welcome). */
    get version(): number | null;
    /** This person's id in the file (null before the first welcome). */
    get you(): any;
    /** @returns {Role | null} */
    get role(): Role | null;
    /** Why this person is a viewer when they asked for more (`view-link`, `editors-full`). */
    get roleReason(): any;
    /** The room's presence rate (`presence_hz`, changed by `presence-rate`). */
    get presenceHz(): number;
    /** @private */
    private wire;
    /** @private @param {PresenceEntry[]} entries */
    private onPresences;
    /**
     * The cursors of others on `page` (this person's page by default), each where it should
     * be drawn at time `now` (performance.now()): it glides to the latest position over a
     * little more than one presence tick. Call it from requestAnimationFrame while
     * `cursorsMoving()` is true.
     * @param {{page?: string | null, now?: number}} [o]
     * @returns {Cursor[]}
     */
    cursors({ page, now }?: {
        page?: string | null;
        now?: number;
    }): Cursor[];
    /** True while some cursor is still gliding towards its target. */
    cursorsMoving(now?: number): boolean;
    /**
     * Listens to an event; returns a function that stops listening.
     * @template {keyof RoomEvents} E
     * @param {E} event
     * @param {(value: RoomEvents[E]) => void} fn
     * @returns {() => void}
     */
    subscribe<E extends keyof RoomEvents>(event: E, fn: (value: RoomEvents[E]) => void): () => void;
    /** @private @param {string} event @param {unknown} value */
    private emit;
    /**
     * Edits the document: applied to `doc` at once, queued (kept in storage when there is
     * one), and sent when online, resent with its original id after a reconnect. Returns
     * false (and does nothing) for viewers.
     * @param {Op[]} ops
     * @returns {boolean}
     */
    patch(ops: Op[]): boolean;
    /**
     * Says where this person is and what they do: any of page, cursor, sel, camera. Sent at
     * most 20 times a second (less when the room says so), only what changed.
     * @param {Presence} p
     */
    setPresence(p: Presence): void;
    /**
     * Sends an event to everyone else in the file now (a reaction, "the AI is thinking"):
     * never stored or resent, so one sent while offline is dropped (returns false). The
     * node drops events past its rates silently and rejects data over its size limit
     * (`reject` with `too-large`).
     * @param {import('./messages.js').JsonValue} data
     * @returns {boolean} whether it was sent
     */
    sendEvent(data: import("./messages.js").JsonValue): boolean;
    /** Connect now (after `needs-user`, or to skip a backoff wait). */
    retry(): void;
    /** The page was hidden or shown: no presence while hidden, and the state is kept. */
    setHidden(hidden: any): void;
    /**
     * Resolves once every local edit is confirmed by the server (rejects after `timeoutMs`).
     * @param {number} [timeoutMs]
     * @returns {Promise<void>}
     */
    flushed(timeoutMs?: number): Promise<void>;
    /** Keeps the server's document in storage now (it is kept at most once a second otherwise): call it when the page goes away. */
    persist(): void;
    /** Leaves the file: closes the socket for good. Unconfirmed edits stay in storage. */
    close(): void;
    /** @private @param {number} version @param {Doc} doc */
    private keepDoc;
}
/**
 * connecting; online (welcomed); offline (a retry is scheduled at `retryAt`); needs-user (4029:
 * retry only when the person asks, `room.retry()`); sign-in (credentials refused); stopped.
 */
export type State = "connecting" | "online" | "offline" | "needs-user" | "sign-in" | "stopped";
export type Status = {
    state: State;
    /**
     * a short sentence for a status bar ('' when online)
     */
    reason: string;
    /**
     * when a retry is scheduled (ms since the epoch)
     */
    retryAt: number | null;
    /**
     * local edits the server has not confirmed yet
     */
    waiting: number;
};
/**
 * Another person's presence as the room keeps it: the latest full state we were sent.
 */
export type Other = {
    id: string;
    page: string | null;
    cursor: [number, number] | null;
    sel: string[] | null;
    camera: [number, number, number] | null;
};
/**
 * A cursor to draw: another person on our page, at a position that glides between the
 * room's presence ticks.
 */
export type Cursor = {
    id: string;
    name: string;
    color: string | undefined;
    x: number;
    y: number;
};
export type RoomEvents = {
    /**
     * the document changed (the new `room.doc`)
     */
    doc: Doc;
    /**
     * someone joined, left or changed role
     */
    people: Person[];
    /**
     * someone's role changed (`you`: this person's)
     */
    role: {
        id: string;
        role: Role;
        you: boolean;
    };
    /**
     * someone's presence changed
     */
    others: Map<string, Other>;
    status: Status;
    welcome: import("./messages.js").WelcomeMessage;
    /**
     * a patch or message was refused
     */
    reject: import("./messages.js").RejectMessage;
    notice: import("./messages.js").NoticeMessage;
    /**
     * the socket closed
     */
    closed: {
        code: number;
        action: string;
        reason: string;
    };
    /**
     * an app token was refreshed
     */
    refreshed: import("./messages.js").RefreshedMessage;
    /**
     * a version was saved, renamed or deleted
     */
    version: import("./messages.js").VersionMessage;
    /**
     * the file was restored to a version
     */
    restored: import("./messages.js").RestoredMessage;
    /**
     * someone else sent an event (`sendEvent`)
     */
    event: import("./messages.js").RemoteEventMessage;
    /**
     * every message from the server
     */
    message: import("./messages.js").ServerMessage;
};
export type RoomOptions = {
    /**
     * the socket URL
     */
    url: string;
    fileId: string;
    /**
     * this tab's secret client id
     */
    client: string;
    token?: string | null | undefined;
    getToken?: (() => string | Promise<string>) | null | undefined;
    key?: string | null | undefined;
    name?: string | undefined;
    storage?: import("./tabstore.js").StorageLike | null | undefined;
    WebSocket?: {
        new (url: string | URL, protocols?: string | string[]): WebSocket;
        prototype: WebSocket;
        readonly CONNECTING: 0;
        readonly OPEN: 1;
        readonly CLOSING: 2;
        readonly CLOSED: 3;
    } | undefined;
    onClose?: (() => void) | undefined;
};
import { Connection } from './connection.js';
import type { Person } from './messages.js';
import { Glide } from './glide.js';
import type { Presence } from './messages.js';
import type { Doc } from './messages.js';
import type { Role } from './messages.js';
import type { Op } from './messages.js';
