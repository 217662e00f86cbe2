// The HTTP API (docs/protocol.md, "HTTP") as small async functions. Errors come back as
// thrown ApiError {status, code, message}; `status` 0 with `code` "network" means the
// server could not be reached. The file list is fetched with If-None-Match and its ETag
// kept, so an unchanged list costs a 304.

/** @import { Doc } from './messages.js' */

/**
 * @typedef {object} Account
 * @property {string} id
 * @property {string} email
 * @property {string} name
 * @property {boolean} admin
 */
/** @typedef {{token: string, account: Account}} Session */
/** @typedef {'none' | 'view' | 'edit'} Link */
/**
 * A file as the API gives it (`view_key` and `edit_key` for its owner only).
 * @typedef {object} FileInfo
 * @property {string} id
 * @property {string} name
 * @property {Link} link
 * @property {number} version
 * @property {number} [updated_at]
 * @property {string} [owner]
 * @property {string} [view_key]
 * @property {string} [edit_key]
 * @property {boolean} [viewers_see_history]
 */

export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  /**
   * @param {{base?: string, token?: string|null, fetch?: typeof fetch, getToken?: () => Promise<string>}} [o]
   *   base: '' for the page's own origin, or e.g. 'http://127.0.0.1:8080'; getToken: an app
   *   token for each request (instead of `token`)
   */
  constructor({ base = '', token = null, fetch: f = undefined, getToken = undefined } = {}) {
    this.base = base.replace(/\/$/, '');
    /** @type {string | null} */
    this.token = token;
    this.getToken = getToken ?? null;
    this.fetch = f ?? globalThis.fetch.bind(globalThis);
    /** @type {{etag: string, files: FileInfo[]} | null} */
    this.listCache = null;
  }

  /**
   * One request; the body of a 2xx answer, or a thrown ApiError.
   * @param {string} method @param {string} path
   * @param {{body?: unknown, key?: string | null, headers?: Record<string, string>, anonymous?: boolean}} [o]
   *   anonymous: send no token (sign-up and sign-in)
   * @returns {Promise<{status: number, body: any, res: Response}>}
   */
  async req(method, path, { body, key, headers = {}, anonymous = false } = {}) {
    /** @type {Record<string, string>} */
    const h = { ...headers };
    const token = anonymous ? null : this.getToken ? await this.getToken() : this.token;
    if (token) h.Authorization = `Bearer ${token}`;
    if (key) h['X-Atrium-Key'] = key;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let res;
    try {
      res = await this.fetch(this.base + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw new ApiError(0, 'network', 'the server cannot be reached');
    }
    if (res.status === 204 || res.status === 304) return { status: res.status, body: null, res };
    let json = null;
    try {
      json = await res.json();
    } catch {
      // not JSON
    }
    if (!res.ok) {
      const err = json?.error ?? {};
      throw new ApiError(res.status, err.code ?? 'error', err.message ?? `HTTP ${res.status}`);
    }
    return { status: res.status, body: json, res };
  }

  /** @param {string} email @param {string} password @param {string} name @returns {Promise<Session>} */
  async signup(email, password, name) {
    return (await this.req('POST', '/api/signup', { body: { email, password, name }, anonymous: true })).body;
  }

  /** @param {string} email @param {string} password @returns {Promise<Session>} */
  async signin(email, password) {
    return (await this.req('POST', '/api/signin', { body: { email, password }, anonymous: true })).body;
  }

  async signout() {
    await this.req('POST', '/api/signout');
  }

  /** @returns {Promise<Account>} */
  async me() {
    return (await this.req('GET', '/api/me')).body.account;
  }

  /** The caller's files; revalidated with the ETag of the last answer. @returns {Promise<FileInfo[]>} */
  async files() {
    /** @type {Record<string, string>} */
    const headers = this.listCache ? { 'If-None-Match': this.listCache.etag } : {};
    const r = await this.req('GET', '/api/files', { headers });
    if (r.status === 304 && this.listCache) return this.listCache.files;
    const etag = r.res.headers.get('ETag');
    this.listCache = etag ? { etag, files: r.body.files } : null;
    return r.body.files;
  }

  /**
   * Creates a file (201): `doc` is its first document; `id` names it (app tokens only).
   * @param {string} [name] @param {Doc} [doc] @param {{id?: string}} [o]
   * @returns {Promise<FileInfo>}
   */
  async createFile(name, doc, { id } = {}) {
    /** @type {Record<string, unknown>} */
    const body = {};
    if (id !== undefined) body.id = id;
    if (name !== undefined) body.name = name;
    if (doc) body.doc = doc;
    return (await this.req('POST', '/api/files', { body })).body;
  }

  /** @param {string} id @param {string | null} [key] @returns {Promise<FileInfo>} */
  async file(id, key) {
    return (await this.req('GET', `/api/files/${encodeURIComponent(id)}`, { key })).body;
  }

  /** @param {string} id @param {{name?: string, link?: Link, viewers_see_history?: boolean}} changes @returns {Promise<FileInfo>} */
  async updateFile(id, changes) {
    return (await this.req('PATCH', `/api/files/${encodeURIComponent(id)}`, { body: changes })).body;
  }

  /** @param {string} id @returns {Promise<{view_key: string, edit_key: string}>} */
  async rotateKeys(id) {
    return (await this.req('POST', `/api/files/${encodeURIComponent(id)}/keys`)).body;
  }

  /** @param {string} id */
  async deleteFile(id) {
    await this.req('DELETE', `/api/files/${encodeURIComponent(id)}`);
  }

  /** The document as the server holds it. @param {string} id @param {string | null} [key] @returns {Promise<{version: number, doc: Doc}>} */
  async doc(id, key) {
    return (await this.req('GET', `/api/files/${encodeURIComponent(id)}/doc`, { key })).body;
  }

  /** The socket URL of a file, on the API's origin. @param {string} id @param {string} [origin] */
  wsUrl(id, origin = '') {
    const base = this.base || origin;
    return `${base.replace(/^http/, 'ws')}/files/${encodeURIComponent(id)}/ws`;
  }
}

/**
 * The share link of a file: the key rides in the fragment, never sent to a server.
 * @param {string} origin @param {string} fileId @param {string} key
 */
export function shareLink(origin, fileId, key) {
  return `${origin}/?file=${encodeURIComponent(fileId)}#key=${encodeURIComponent(key)}`;
}
