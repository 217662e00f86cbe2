// A file's version history, the data side (docs/protocol.md, "Version history" and
// "History messages"): the HTTP routes as small functions, the paged list kept up to date
// by the socket's `version` messages, grouping by day, labels, what a person may do, and
// the canvas marks of a comparison. No DOM: history_ui.js draws it.

const enc = encodeURIComponent;

/** The history routes of one file, over the Api of @atrium/client; `key` is a link key or null. */
export class HistoryApi {
  constructor(api, fileId, key = null) {
    this.api = api;
    this.path = `/api/files/${enc(fileId)}/versions`;
    this.key = key;
  }

  async call(method, path, body) {
    return (await this.api.req(method, this.path + path, { key: this.key, body })).body;
  }

  /** One page, newest first: {versions, next}; `before` is the last page's `next`. */
  list({ before = null, limit = 50 } = {}) {
    return this.call('GET', `?limit=${limit}${before === null ? '' : `&before=${before}`}`);
  }

  /** {version, doc} */
  read(id) {
    return this.call('GET', `/${enc(id)}`);
  }

  /** {from, to, added, removed, changed: [{id, props}]} */
  compare(from, to = 'current') {
    return this.call('GET', `/compare?from=${enc(from)}&to=${enc(to)}`);
  }

  /** Names the current state; the new version. */
  name(title, description = null) {
    return this.call('POST', '', description ? { title, description } : { title });
  }

  rename(id, changes) {
    return this.call('PATCH', `/${enc(id)}`, changes);
  }

  remove(id) {
    return this.call('DELETE', `/${enc(id)}`);
  }

  /** {v, restored_from} once the restore is durable. */
  restore(id) {
    return this.call('POST', `/${enc(id)}/restore`);
  }
}

/**
 * The versions loaded so far, newest first, paged with `more()`, and kept current by the
 * socket's `version` messages (`apply`). Versions are keyed by id, which counts up in a
 * file, so the newest-first order is the id order.
 */
export class VersionList {
  /** @param {{list: (o: {before: number|null, limit: number}) => Promise<{versions: object[], next: number|null}>}} source */
  constructor(source, { pageSize = 50 } = {}) {
    this.source = source;
    this.pageSize = pageSize;
    this.byId = new Map();
    this.next = null; // the `before` of the next page
    this.loaded = false; // the first page came
    this.loading = null;
  }

  /** Newest first. */
  get versions() {
    return [...this.byId.values()].sort((a, b) => b.id - a.id);
  }

  /** Whether older versions are left to load. */
  get hasMore() {
    return !this.loaded || this.next !== null;
  }

  /** Loads from the newest again (the panel opened, or the list may have missed messages). */
  reload() {
    this.byId.clear();
    this.next = null;
    this.loaded = false;
    this.loading = null;
    return this.more();
  }

  /** Loads the next (older) page; one request at a time. */
  more() {
    if (this.loading) return this.loading;
    if (!this.hasMore) return Promise.resolve(false);
    const before = this.loaded ? this.next : null;
    const p = this.source.list({ before, limit: this.pageSize }).then((page) => {
      if (this.loading !== p) return false; // a reload started meanwhile
      for (const v of page.versions ?? []) this.byId.set(v.id, v);
      this.next = page.next ?? null;
      this.loaded = true;
      return true;
    }).finally(() => {
      if (this.loading === p) this.loading = null;
    });
    this.loading = p;
    return p;
  }

  /**
   * A socket message. `version` saved / renamed / deleted changes the list; returns whether
   * it did. A version older than the oldest loaded is left for its page to bring.
   */
  apply(msg) {
    if (msg?.type !== 'version' || !msg.version || !this.loaded) return false;
    const v = msg.version;
    if (msg.event === 'deleted') return this.byId.delete(v.id);
    const oldest = Math.min(...this.byId.keys());
    if (!this.byId.has(v.id) && this.next !== null && v.id < oldest) return false;
    this.byId.set(v.id, v);
    return true;
  }
}

const pad = (n) => String(n).padStart(2, '0');

/** The local calendar day of a time: "YYYY-MM-DD". */
export function dayKey(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** "Today", "Yesterday", or the date, for a day key, seen at `now`. */
export function dayLabel(key, now = Date.now()) {
  if (key === dayKey(now)) return 'Today';
  const y = new Date(now);
  y.setDate(y.getDate() - 1);
  if (key === dayKey(y.getTime())) return 'Yesterday';
  const [yy, mm, dd] = key.split('-').map(Number);
  const d = new Date(yy, mm - 1, dd);
  const sameYear = yy === new Date(now).getFullYear();
  return d.toLocaleDateString('en-GB', { weekday: 'short', day: 'numeric', month: 'short', ...(sameYear ? {} : { year: 'numeric' }) });
}

/** Versions (newest first) in groups by local day: [{day, label, versions}]. */
export function groupByDay(versions, now = Date.now()) {
  const groups = [];
  for (const v of versions) {
    const day = dayKey(v.created_at);
    let g = groups[groups.length - 1];
    if (!g || g.day !== day) {
      g = { day, label: dayLabel(day, now), versions: [] };
      groups.push(g);
    }
    g.versions.push(v);
  }
  return groups;
}

/** "14:05", local time. */
export function timeOf(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** What the list shows as a version's name. */
export function labelOf(v) {
  if (v.kind === 'named') return v.title || `Version ${v.id}`;
  if (v.kind === 'restore') return v.title || (v.restored_from ? `Restored from version ${v.restored_from}` : 'Restored');
  return v.title || 'Autosave';
}

/** Who edited since the version before: "Ann, Bob and 2 others". */
export function editorsText(editors, shown = 3) {
  const names = editors ?? [];
  if (names.length === 0) return 'No edits';
  if (names.length <= shown) return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  const rest = names.length - shown;
  return `${names.slice(0, shown).join(', ')} and ${rest} other${rest === 1 ? '' : 's'}`;
}

/**
 * What a person may do with the history (docs/protocol.md, "Who may"): the owner and
 * editors all but delete (the owner's); viewers list and read only when the owner lets them.
 * @param {{role: string|null, owner: boolean, viewersSeeHistory: boolean}} who
 */
export function permissions({ role, owner, viewersSeeHistory }) {
  const editor = owner || role === 'editor' || role === 'owner';
  return {
    read: editor || !!viewersSeeHistory,
    compare: editor,
    name: editor,
    rename: editor,
    restore: editor,
    remove: owner,
  };
}

/**
 * The canvas marks of a comparison from a version to the current state: each node id to
 * {kind: 'added'|'removed'|'changed', props}. `removed` ones exist only in the version.
 */
export function marksOf(comparison) {
  const marks = new Map();
  for (const id of comparison.added ?? []) marks.set(id, { kind: 'added', props: [] });
  for (const id of comparison.removed ?? []) marks.set(id, { kind: 'removed', props: [] });
  for (const c of comparison.changed ?? []) marks.set(c.id, { kind: 'changed', props: c.props ?? [] });
  return marks;
}
