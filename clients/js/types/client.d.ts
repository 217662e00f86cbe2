/**
 * Makes a client. See `ClientOptions`.
 * @param {ClientOptions} [o]
 * @returns {Client}
 */
export function createClient(o?: ClientOptions): Client;
/**
 * The `exp` of a JWT (Unix seconds), read without checking it (the server does), or null.
 * @param {string} token
 * @returns {number | null}
 */
export function tokenExp(token: string): number | null;
/**
 * Who the person is:
 * - a function returning an app token (or a promise of one) from your backend
 *   (docs/auth.md): called before every connection, and again before the token expires
 *   (the new one is sent as `refresh` on the live socket, without reconnecting);
 * - `{ token }`: an Atrium session token (from `client.signIn` or your own sign-in);
 * - `{ email, password }`: Atrium sign-in, done at the first `open` or API call;
 * - nothing: a guest, who opens files with a link key (`client.open(id, { key })`).
 * @typedef {(() => string | Promise<string>) | {token: string} | {email: string, password: string} | null} Auth
 */
/**
 * @typedef {object} ClientOptions
 * @property {string} [baseUrl] the server's origin, e.g. `https://atrium.example.com`;
 *   default: the page's own origin in a browser
 * @property {Auth} [auth]
 * @property {string} [name] the name others see for a guest
 * @property {import('./tabstore.js').StorageLike | null} [storage] where unconfirmed edits and
 *   the last document are kept so they survive a reload: `localStorage` in a browser by
 *   default; none (memory only) elsewhere unless given
 * @property {import('./tabstore.js').StorageLike | null} [sessionStorage] where a tab keeps its
 *   client ids across reloads: `sessionStorage` in a browser by default
 * @property {typeof WebSocket} [WebSocket] the WebSocket class: the global one by default
 *   (browsers, Node 22+; Node 20 needs `--experimental-websocket` or a class such as `ws`'s)
 * @property {typeof fetch} [fetch] the fetch function: the global one by default
 */
/**
 * @typedef {object} OpenOptions
 * @property {string | null} [key] a link key (from a share link's `#key=`)
 * @property {string} [name] the name others see, for a guest (default: the client's `name`)
 * @property {string} [clientId] this tab's secret client id for the file (at least 22
 *   random characters); default: kept per tab, or adopted from a closed tab's unsent edits
 */
export class Client {
    /** @param {ClientOptions} [o] */
    constructor(o?: ClientOptions);
    baseUrl: string;
    name: string;
    storage: import("./tabstore.js").StorageLike | null;
    session: import("./tabstore.js").StorageLike | null;
    WebSocket: {
        new (url: string | URL, protocols?: string | string[]): WebSocket;
        prototype: WebSocket;
        readonly CONNECTING: 0;
        readonly OPEN: 1;
        readonly CLOSING: 2;
        readonly CLOSED: 3;
    };
    /** @type {(() => string | Promise<string>) | null} */
    getToken: (() => string | Promise<string>) | null;
    /** @type {{email: string, password: string} | null} */
    credentials: {
        email: string;
        password: string;
    } | null;
    api: Api;
    /** @type {{token: string, exp: number} | null} */
    cachedAppToken: {
        token: string;
        exp: number;
    } | null;
    /** @type {Set<Room>} */
    rooms: Set<Room>;
    /** @type {Promise<unknown> | null} */
    signingIn: Promise<unknown> | null;
    /** The session token in use (Atrium sign-in), or null. */
    get token(): string | null;
    /**
     * Signs in with an Atrium account; later rooms and API calls use its session.
     * @param {string} email @param {string} password
     */
    signIn(email: string, password: string): Promise<import("./api.js").Session>;
    /**
     * Creates an Atrium account and signs in with it.
     * @param {string} email @param {string} password @param {string} name
     */
    signUp(email: string, password: string, name: string): Promise<import("./api.js").Session>;
    /** Signs out (the session token stops working everywhere). */
    signOut(): Promise<void>;
    /** @private An app token for HTTP calls, fetched again a minute before its exp. */
    private appToken;
    /** @private Signs in with the configured email and password, once (one attempt at a time). */
    private ensureSignedIn;
    /**
     * Opens a file: connects (and keeps reconnecting) until `room.close()`. With
     * `{email, password}` auth the sign-in happens first, so the room starts `connecting`.
     * @param {string} fileId
     * @param {OpenOptions} [o]
     * @returns {Room}
     */
    open(fileId: string, o?: OpenOptions): Room;
    /** Closes every open room. */
    close(): void;
}
/**
 * Who the person is:
 * - a function returning an app token (or a promise of one) from your backend
 *   (docs/auth.md): called before every connection, and again before the token expires
 *   (the new one is sent as `refresh` on the live socket, without reconnecting);
 * - `{ token }`: an Atrium session token (from `client.signIn` or your own sign-in);
 * - `{ email, password }`: Atrium sign-in, done at the first `open` or API call;
 * - nothing: a guest, who opens files with a link key (`client.open(id, { key })`).
 */
export type Auth = (() => string | Promise<string>) | {
    token: string;
} | {
    email: string;
    password: string;
} | null;
export type ClientOptions = {
    /**
     * the server's origin, e.g. `https://atrium.example.com`;
     * default: the page's own origin in a browser
     */
    baseUrl?: string | undefined;
    auth?: Auth | undefined;
    /**
     * the name others see for a guest
     */
    name?: string | undefined;
    /**
     * where unconfirmed edits and
     * the last document are kept so they survive a reload: `localStorage` in a browser by
     * default; none (memory only) elsewhere unless given
     */
    storage?: import("./tabstore.js").StorageLike | null | undefined;
    /**
     * where a tab keeps its
     * client ids across reloads: `sessionStorage` in a browser by default
     */
    sessionStorage?: import("./tabstore.js").StorageLike | null | undefined;
    /**
     * the WebSocket class: the global one by default
     * (browsers, Node 22+; Node 20 needs `--experimental-websocket` or a class such as `ws`'s)
     */
    WebSocket?: {
        new (url: string | URL, protocols?: string | string[]): WebSocket;
        prototype: WebSocket;
        readonly CONNECTING: 0;
        readonly OPEN: 1;
        readonly CLOSING: 2;
        readonly CLOSED: 3;
    } | undefined;
    /**
     * the fetch function: the global one by default
     */
    fetch?: typeof fetch | undefined;
};
export type OpenOptions = {
    /**
     * a link key (from a share link's `#key=`)
     */
    key?: string | null | undefined;
    /**
     * the name others see, for a guest (default: the client's `name`)
     */
    name?: string | undefined;
    /**
     * this tab's secret client id for the file (at least 22
     * random characters); default: kept per tab, or adopted from a closed tab's unsent edits
     */
    clientId?: string | undefined;
};
import { Api } from './api.js';
import { Room } from './room.js';
