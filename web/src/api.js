// The HTTP API (PROTOCOL.md, "HTTP API") as small async functions. Errors come back as
// thrown ApiError {status, code, message}. The file list is fetched with If-None-Match
// and its ETag kept, so an unchanged list costs a 304.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  /**
   * @param {{base?: string, token?: string|null, fetch?: typeof fetch}} [o]
   *   base: '' for the page's own origin, or e.g. 'http://127.0.0.1:8080'
   */
  constructor({ base = '', token = null, fetch: f = globalThis.fetch.bind(globalThis) } = {}) {
    this.base = base.replace(/\/$/, '');
    this.token = token;
    this.fetch = f;
    this.listCache = null; // {etag, files}
  }

  async req(method, path, { body, key, headers = {} } = {}) {
    const h = { ...headers };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
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

  async signup(email, password, name) {
    return (await this.req('POST', '/api/signup', { body: { email, password, name } })).body;
  }

  async signin(email, password) {
    return (await this.req('POST', '/api/signin', { body: { email, password } })).body;
  }

  async signout() {
    await this.req('POST', '/api/signout');
  }

  async me() {
    return (await this.req('GET', '/api/me')).body.account;
  }

  /** The caller's files; revalidated with the ETag of the last answer. */
  async files() {
    const headers = this.listCache ? { 'If-None-Match': this.listCache.etag } : {};
    const r = await this.req('GET', '/api/files', { headers });
    if (r.status === 304 && this.listCache) return this.listCache.files;
    const etag = r.res.headers.get('ETag');
    this.listCache = etag ? { etag, files: r.body.files } : null;
    return r.body.files;
  }

  async createFile(name, doc) {
    return (await this.req('POST', '/api/files', { body: doc ? { name, doc } : { name } })).body;
  }

  async file(id, key) {
    return (await this.req('GET', `/api/files/${encodeURIComponent(id)}`, { key })).body;
  }

  async updateFile(id, changes) {
    return (await this.req('PATCH', `/api/files/${encodeURIComponent(id)}`, { body: changes })).body;
  }

  async rotateKeys(id) {
    return (await this.req('POST', `/api/files/${encodeURIComponent(id)}/keys`)).body;
  }

  async deleteFile(id) {
    await this.req('DELETE', `/api/files/${encodeURIComponent(id)}`);
  }

  async doc(id, key) {
    return (await this.req('GET', `/api/files/${encodeURIComponent(id)}/doc`, { key })).body;
  }

  /** The socket URL of a file, on the API's origin. */
  wsUrl(id, origin) {
    const base = this.base || origin;
    return `${base.replace(/^http/, 'ws')}/files/${encodeURIComponent(id)}/ws`;
  }
}

/** The share link of a file: the key rides in the fragment, never sent to a server. */
export function shareLink(origin, fileId, key) {
  return `${origin}/?file=${encodeURIComponent(fileId)}#key=${encodeURIComponent(key)}`;
}
