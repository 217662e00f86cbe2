// createClient: the package's front door. A client knows the server (`baseUrl`) and who
// the person is (`auth`), talks HTTP through `client.api`, and opens files as rooms.
//
//   const client = createClient({ baseUrl: 'https://atrium.example.com', auth: getAppToken });
//   const room = client.open('doc_123');
//   room.subscribe('doc', (doc) => draw(doc));
//   room.patch([{ op: 'set', id: 'r1', props: { x: 10 } }]);

import { Api } from './api.js';
import { Room } from './room.js';
import { chooseClient, holdClient } from './tabstore.js';

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
  constructor(o = {}) {
    const origin = globalThis.location?.origin ?? '';
    this.baseUrl = (o.baseUrl ?? origin).replace(/\/$/, '');
    if (!this.baseUrl) throw new TypeError('createClient: baseUrl is required outside a browser');
    this.name = o.name ?? '';
    this.storage = o.storage === undefined ? webStorage('localStorage') : o.storage;
    this.session = o.sessionStorage === undefined ? webStorage('sessionStorage') : o.sessionStorage;
    this.WebSocket = o.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== 'function') {
      throw new TypeError('createClient: no WebSocket class: pass the `WebSocket` option (Node 20: run with --experimental-websocket, or use the `ws` package)');
    }
    const auth = o.auth ?? null;
    /** @type {(() => string | Promise<string>) | null} */
    this.getToken = typeof auth === 'function' ? auth : null;
    /** @type {{email: string, password: string} | null} */
    this.credentials = auth && typeof auth === 'object' && 'email' in auth ? { email: auth.email, password: auth.password } : null;
    const token = auth && typeof auth === 'object' && 'token' in auth ? auth.token : null;
    // API calls carry an app token (cached until a minute before its exp), or the session of
    // the configured sign-in (made at the first call that needs it), or the given token.
    let apiToken;
    if (this.getToken) apiToken = () => this.appToken();
    else if (this.credentials) apiToken = async () => {
      await this.ensureSignedIn();
      return /** @type {string} */ (this.api.token);
    };
    this.api = new Api({ base: this.baseUrl, token, fetch: o.fetch, getToken: apiToken });
    /** @type {{token: string, exp: number} | null} */
    this.cachedAppToken = null;
    /** @type {Set<Room>} */
    this.rooms = new Set();
    /** @type {Promise<unknown> | null} */
    this.signingIn = null;
  }

  /** The session token in use (Atrium sign-in), or null. */
  get token() {
    return this.api.token;
  }

  /**
   * Signs in with an Atrium account; later rooms and API calls use its session.
   * @param {string} email @param {string} password
   */
  async signIn(email, password) {
    const r = await this.api.signin(email, password);
    this.api.token = r.token;
    return r;
  }

  /**
   * Creates an Atrium account and signs in with it.
   * @param {string} email @param {string} password @param {string} name
   */
  async signUp(email, password, name) {
    const r = await this.api.signup(email, password, name);
    this.api.token = r.token;
    return r;
  }

  /** Signs out (the session token stops working everywhere). */
  async signOut() {
    await this.api.signout();
    this.api.token = null;
  }

  /** @private An app token for HTTP calls, fetched again a minute before its exp. */
  async appToken() {
    const c = this.cachedAppToken;
    if (c && c.exp * 1000 - Date.now() > 60_000) return c.token;
    const token = await /** @type {() => string | Promise<string>} */ (this.getToken)();
    this.cachedAppToken = { token, exp: tokenExp(token) ?? 0 };
    return token;
  }

  /** @private Signs in with the configured email and password, once (one attempt at a time). */
  async ensureSignedIn() {
    if (!this.credentials || this.api.token) return;
    if (!this.signingIn) {
      const { email, password } = this.credentials;
      this.signingIn = this.signIn(email, password).finally(() => {
        this.signingIn = null;
      });
    }
    await this.signingIn;
  }

  /**
   * Opens a file: connects (and keeps reconnecting) until `room.close()`. With
   * `{email, password}` auth the sign-in happens first, so the room starts `connecting`.
   * @param {string} fileId
   * @param {OpenOptions} [o]
   * @returns {Room}
   */
  open(fileId, o = {}) {
    const client = o.clientId ?? chooseClient(fileId, { local: this.storage, session: this.session });
    const release = holdClient(fileId, client, { local: this.storage });
    const signIn = Boolean(this.credentials && !this.api.token);
    const room = new Room({
      url: this.api.wsUrl(fileId, this.baseUrl),
      fileId,
      client,
      token: this.api.token,
      // Sign-in by email: the first hello waits for it (a failure counts as offline).
      getToken: this.getToken ?? (signIn ? async () => {
        await this.ensureSignedIn();
        return /** @type {string} */ (this.api.token);
      } : null),
      key: o.key ?? null,
      name: o.name ?? this.name,
      storage: this.storage,
      WebSocket: this.WebSocket,
      onClose: () => {
        release();
        this.rooms.delete(room);
      },
    });
    this.rooms.add(room);
    return room;
  }

  /** Closes every open room. */
  close() {
    for (const r of [...this.rooms]) r.close();
  }
}

/**
 * The browser's storage of that name, or null where there is none or it cannot be used
 * (Node, where reading `localStorage` may warn or throw; a browser that blocks storage).
 * @param {'localStorage' | 'sessionStorage'} name
 * @returns {import('./tabstore.js').StorageLike | null}
 */
function webStorage(name) {
  if (typeof window === 'undefined') return null;
  try {
    const s = /** @type {any} */ (globalThis)[name];
    return s && typeof s.getItem === 'function' ? s : null;
  } catch {
    return null;
  }
}

/**
 * Makes a client. See `ClientOptions`.
 * @param {ClientOptions} [o]
 * @returns {Client}
 */
export function createClient(o) {
  return new Client(o);
}

/**
 * The `exp` of a JWT (Unix seconds), read without checking it (the server does), or null.
 * @param {string} token
 * @returns {number | null}
 */
export function tokenExp(token) {
  const part = String(token).split('.')[1];
  if (!part) return null;
  try {
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    const exp = JSON.parse(json).exp;
    return typeof exp === 'number' ? exp : null;
  } catch {
    return null;
  }
}
