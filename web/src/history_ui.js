// The history panel beside the canvas: versions grouped by day, each with its time, its
// label and who edited since the one before; older pages on demand; naming the current
// state; renaming, deleting, previewing, comparing and restoring a version. Only what the
// person may do is offered (history.js `permissions`); a refusal from the server (403) is
// shown as it came. It hears the socket through one callback (`subscribe`), talks HTTP
// through HistoryApi, and shows the past on the canvas through the editor's `show(inspect)`.

import { editorsText, groupByDay, HistoryApi, labelOf, marksOf, permissions, timeOf, VersionList } from './history.js';
import { inspectBanner } from './history_inspect.js';
import { h } from './ui.js';

const DOCS_KEPT = 8; // version documents kept for previews: a bound on what a panel holds

export class HistoryPanel {
  /**
   * @param {object} o
   * @param {import('@atrium/client').Api} o.api
   * @param {string} o.fileId
   * @param {string|null} o.key link key, or null
   * @param {() => {role: string|null, owner: boolean, viewersSeeHistory: boolean}} o.who
   * @param {(fn: (msg: object) => void) => void} o.subscribe the socket's other messages
   * @param {(inspect: object|null) => void} o.show what the canvas draws (history_inspect.js)
   * @param {number} [o.pageSize]
   */
  constructor({ api, fileId, key, who, subscribe, show, pageSize = 50 }) {
    this.history = new HistoryApi(api, fileId, key);
    this.list = new VersionList(this.history, { pageSize });
    this.who = who;
    this.show = show;
    this.docs = new Map(); // version id -> doc, newest use last
    this.inspect = null;
    this.asked = 0; // counts what was asked to be shown: an older answer is not shown
    this.isOpen = false;
    this.renaming = null; // version id whose title is being edited
    this.el = h('aside', { class: 'history', 'data-testid': 'history-panel', hidden: true });
    this.banner = h('div', { 'data-testid': 'history-banner-slot' });
    this.toggle = h('button', { 'data-testid': 'history-toggle', onclick: () => (this.isOpen ? this.close() : this.open()) }, 'History');
    this.error = h('p', { class: 'error', 'data-testid': 'history-error' });
    this.notice = h('p', { class: 'notice', 'data-testid': 'history-notice', hidden: true });
    this.body = h('div', { class: 'versions', 'data-testid': 'versions' });
    subscribe((msg) => this.onMessage(msg));
    this.refreshAccess();
  }

  get may() {
    return permissions(this.who());
  }

  /** The role or the file's settings changed: offer only what is allowed now. */
  refreshAccess() {
    const may = this.may;
    this.toggle.hidden = !may.read;
    if (!may.read) {
      this.close();
      return;
    }
    if (this.inspect?.mode === 'compare' && !may.compare) this.back();
    this.render();
    this.renderBanner();
  }

  open() {
    if (!this.may.read) return;
    this.isOpen = true;
    this.el.hidden = false;
    this.toggle.classList.add('on');
    this.error.textContent = '';
    this.render();
    this.load(() => this.list.reload());
  }

  close() {
    this.isOpen = false;
    this.el.hidden = true;
    this.toggle.classList.remove('on');
    this.back();
  }

  /** After a reconnect the list may have missed messages. */
  onWelcome() {
    if (this.isOpen) this.load(() => this.list.reload());
  }

  onMessage(msg) {
    if (msg.type === 'version') {
      if (this.list.apply(msg)) this.render();
      if (msg.event === 'deleted' && this.inspect?.version.id === msg.version.id) this.back();
    } else if (msg.type === 'restored') {
      this.say(`${msg.by ?? 'Someone'} restored “${msg.from ? labelOf(msg.from) : 'a version'}”.`);
      if (this.inspect?.mode === 'compare') this.compare(this.inspect.version); // the current state moved
    }
  }

  say(text) {
    this.notice.textContent = text;
    this.notice.hidden = !text;
  }

  /** Runs an API call, showing its error (a 403 says what was refused). */
  async load(fn) {
    this.error.textContent = '';
    try {
      const r = await fn();
      this.render();
      return r;
    } catch (x) {
      this.error.textContent = x.status === 403 ? `Not allowed: ${x.message}` : x.message;
      this.render();
      return undefined;
    }
  }

  async versionDoc(v) {
    let doc = this.docs.get(v.id);
    if (!doc) doc = (await this.history.read(v.id)).doc;
    this.docs.delete(v.id);
    this.docs.set(v.id, doc);
    while (this.docs.size > DOCS_KEPT) this.docs.delete(this.docs.keys().next().value);
    return doc;
  }

  setInspect(inspect, asked = ++this.asked) {
    if (asked !== this.asked) return;
    this.inspect = inspect;
    this.show(inspect);
    this.render();
    this.renderBanner();
  }

  preview(v) {
    const asked = ++this.asked;
    return this.load(async () => this.setInspect({ mode: 'preview', version: v, doc: await this.versionDoc(v) }, asked));
  }

  compare(v) {
    const asked = ++this.asked;
    return this.load(async () => {
      const [cmp, before] = await Promise.all([this.history.compare(v.id), this.versionDoc(v)]);
      this.setInspect({ mode: 'compare', version: v, before, marks: marksOf(cmp) }, asked);
    });
  }

  back() {
    if (this.inspect) this.setInspect(null);
  }

  restore(v) {
    if (!confirm(`Restore “${labelOf(v)}”? Everyone in the file sees the document as it was then. The current state stays in the history.`)) return undefined;
    return this.load(async () => {
      await this.history.restore(v.id);
      this.back();
      this.say(`Restored “${labelOf(v)}”.`);
    });
  }

  saveVersion(title, description) {
    return this.load(async () => {
      const v = await this.history.name(title, description || null);
      this.list.apply({ type: 'version', event: 'saved', version: v }); // the socket says so too
      this.say(`Saved “${labelOf(v)}”.`);
    });
  }

  rename(v, title) {
    return this.load(async () => {
      const nv = await this.history.rename(v.id, { title });
      this.renaming = null;
      this.list.apply({ type: 'version', event: 'renamed', version: nv });
    });
  }

  remove(v) {
    if (!confirm(`Delete the version “${labelOf(v)}”?`)) return undefined;
    return this.load(async () => {
      await this.history.remove(v.id);
      this.list.apply({ type: 'version', event: 'deleted', version: v });
      if (this.inspect?.version.id === v.id) this.back();
    });
  }

  renderBanner() {
    const i = this.inspect;
    this.banner.replaceChildren(i ? inspectBanner(i, {
      canRestore: this.may.restore,
      onBack: () => this.back(),
      onRestore: () => this.restore(i.version),
    }) : '');
  }

  render() {
    if (!this.isOpen) return;
    const may = this.may;
    const groups = groupByDay(this.list.versions).map((g) => h('section', { class: 'day', 'data-day': g.day },
      h('h4', {}, g.label), g.versions.map((v) => this.row(v, may))));
    const empty = this.list.loaded && groups.length === 0 ? h('p', { class: 'muted' }, 'No versions yet: one is saved while the file is edited, or name the current state.') : null;
    const more = this.list.loaded && this.list.hasMore
      ? h('button', { 'data-testid': 'history-more', onclick: () => this.load(() => this.list.more()) }, 'Load older versions') : null;
    const loading = !this.list.loaded ? h('p', { class: 'muted' }, 'Loading…') : null;
    this.body.replaceChildren(...groups, empty ?? '', more ?? '', loading ?? '');
    if (!this.el.firstChild) {
      this.el.append(h('div', { class: 'head' }, h('h3', {}, 'History'), h('button', { 'data-testid': 'history-close', onclick: () => this.close() }, '×')),
        this.nameForm, this.notice, this.error, this.body);
    }
    this.nameForm.hidden = !may.name;
  }

  get nameForm() {
    if (this._nameForm) return this._nameForm;
    const title = h('input', { type: 'text', placeholder: 'Name this version', maxlength: 200, 'data-testid': 'history-title', required: true });
    const desc = h('input', { type: 'text', placeholder: 'Description (optional)', maxlength: 2000, 'data-testid': 'history-description' });
    const save = h('button', { class: 'primary', type: 'submit', 'data-testid': 'history-save' }, 'Save version');
    this._nameForm = h('form', {
      class: 'name-form',
      onsubmit: async (e) => {
        e.preventDefault();
        if (!title.value.trim()) return;
        save.disabled = true;
        await this.saveVersion(title.value.trim(), desc.value.trim());
        save.disabled = false;
        if (!this.error.textContent) title.value = desc.value = '';
      },
    }, title, desc, save);
    return this._nameForm;
  }

  row(v, may) {
    const shown = this.inspect?.version.id === v.id ? this.inspect.mode : null;
    const label = this.renaming === v.id ? this.renameInput(v) : h('span', { class: 'label', 'data-testid': 'version-label' }, labelOf(v));
    const act = (text, testid, fn, cls) => h('button', { 'data-testid': testid, class: cls, onclick: fn }, text);
    return h('div', { class: `version kind-${v.kind}${shown ? ' shown' : ''}`, 'data-version-id': v.id, 'data-kind': v.kind },
      h('div', { class: 'line' }, label, h('span', { class: 'time muted' }, timeOf(v.created_at))),
      v.description ? h('div', { class: 'description' }, v.description) : null,
      h('div', { class: 'editors muted', 'data-testid': 'version-editors' }, editorsText(v.editors)),
      h('div', { class: 'actions' },
        act('Preview', 'version-preview', () => this.preview(v), shown === 'preview' ? 'on' : ''),
        may.compare ? act('Compare', 'version-compare', () => this.compare(v), shown === 'compare' ? 'on' : '') : null,
        may.restore ? act('Restore', 'version-restore', () => this.restore(v)) : null,
        may.rename && this.renaming !== v.id ? act(v.kind === 'named' ? 'Rename' : 'Name', 'version-rename', () => { this.renaming = v.id; this.render(); }) : null,
        may.remove && v.kind === 'named' ? act('Delete', 'version-delete', () => this.remove(v), 'danger') : null));
  }

  renameInput(v) {
    const input = h('input', { type: 'text', value: v.title ?? '', maxlength: 200, 'data-testid': 'version-rename-input' });
    const save = () => (input.value.trim() ? this.rename(v, input.value.trim()) : undefined);
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') save();
      if (e.key === 'Escape') { this.renaming = null; this.render(); }
    });
    queueMicrotask(() => input.focus());
    return h('span', { class: 'rename' }, input, h('button', { 'data-testid': 'version-rename-save', onclick: save }, 'Save'));
  }
}
