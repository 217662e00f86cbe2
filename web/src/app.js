// The Atrium page: accounts, the file list, sharing, and the editor. Everything that talks
// to the server is the client package, @atrium/client (clients/js, mapped by the page's
// import map to /assets/client/); this file is the UI.
//
// URLs: `/` (sign in, or your files), `/?file=<id>` (open a file you own),
// `/?file=<id>#key=<link key>` (a share link: the key never leaves the browser).
// `?api=<origin>` points the page at another API origin (only useful where that origin
// allows it; by default the page talks to the server that served it).

import { ApiError, createClient, pagesOf, randomId, shapesOn, shareLink } from '@atrium/client';
import { drawMarks, inspectDoc } from './history_inspect.js';
import { HistoryPanel } from './history_ui.js';
import { colourOf, h, s, setAttrs } from './ui.js';

const root = document.getElementById('app');
const apiBase = new URLSearchParams(location.search).get('api') ?? '';
let session = readSession();
const client = createClient({ baseUrl: apiBase || location.origin, auth: session ? { token: session.token } : null });
const api = client.api;
let leave = null; // cleanup of the current view

function readSession() {
  try {
    return JSON.parse(localStorage.getItem('atrium:session'));
  } catch {
    return null;
  }
}

function setSession(s) {
  session = s;
  api.token = s?.token ?? null;
  if (s) localStorage.setItem('atrium:session', JSON.stringify(s));
  else localStorage.removeItem('atrium:session');
}

function show(...nodes) {
  root.replaceChildren(...nodes);
}

export function navigate(url) {
  history.pushState(null, '', url);
  route();
}

function keyFromFragment() {
  const m = /(?:^|[#&])key=([^&]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function route() {
  if (leave) leave();
  leave = null;
  const file = new URLSearchParams(location.search).get('file');
  if (file) return openFile(file, keyFromFragment());
  if (session) return filesView();
  return authView();
}

window.addEventListener('popstate', route);

// ---------------------------------------------------------------- accounts

function authView(note = '') {
  let mode = 'signin';
  const err = h('p', { class: 'error', 'data-testid': 'auth-error' }, note);
  const name = h('input', { type: 'text', name: 'name', placeholder: 'Your name', autocomplete: 'name' });
  const email = h('input', { type: 'email', name: 'email', placeholder: 'Email', required: true, autocomplete: 'email' });
  const password = h('input', { type: 'password', name: 'password', placeholder: 'Password (8 or more characters)', required: true, minlength: 8 });
  const submit = h('button', { class: 'primary', type: 'submit' }, 'Sign in');
  const tabIn = h('button', { type: 'button', class: 'on', onclick: () => setMode('signin') }, 'Sign in');
  const tabUp = h('button', { type: 'button', 'data-testid': 'tab-signup', onclick: () => setMode('signup') }, 'Sign up');
  function setMode(m) {
    mode = m;
    tabIn.classList.toggle('on', m === 'signin');
    tabUp.classList.toggle('on', m === 'signup');
    name.hidden = m !== 'signup';
    name.required = m === 'signup';
    submit.textContent = m === 'signup' ? 'Create account' : 'Sign in';
  }
  const form = h('form', {
    onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = '';
      submit.disabled = true;
      try {
        const r = mode === 'signup'
          ? await api.signup(email.value, password.value, name.value)
          : await api.signin(email.value, password.value);
        setSession({ token: r.token, account: r.account });
        route();
      } catch (x) {
        err.textContent = x.message;
      } finally {
        submit.disabled = false;
      }
    },
  }, name, email, password, submit, err);
  setMode('signin');
  show(h('div', { class: 'auth' }, h('h1', {}, 'Atrium'), h('div', { class: 'tabs' }, tabIn, tabUp), form));
}

async function signOut() {
  try {
    await api.signout();
  } catch {
    // signed out locally all the same
  }
  setSession(null);
  navigate('/');
}

function topbar(...middle) {
  return h('div', { class: 'topbar' },
    h('span', { class: 'title' }, 'Atrium'), ...middle, h('span', { class: 'spacer' }),
    session ? h('span', { class: 'muted', 'data-testid': 'me' }, session.account.name) : null,
    session ? h('button', { onclick: signOut }, 'Sign out') : null);
}

// ---------------------------------------------------------------- files

function filesView() {
  const list = h('div', { 'data-testid': 'file-list' });
  const err = h('p', { class: 'error' });
  const newName = h('input', { type: 'text', placeholder: 'New file name', 'data-testid': 'new-file-name' });
  const form = h('form', {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api.createFile(newName.value.trim() || 'Untitled');
        newName.value = '';
        await refresh();
      } catch (x) {
        err.textContent = x.message;
      }
    },
  }, newName, h('button', { class: 'primary', type: 'submit', 'data-testid': 'create-file' }, 'New file'));
  const open = new Set(); // files whose share panel is open

  async function refresh() {
    let files;
    try {
      files = await api.files();
    } catch (x) {
      if (x instanceof ApiError && x.status === 401) {
        setSession(null);
        return authView('Your session ended: sign in again.');
      }
      err.textContent = x.message;
      return;
    }
    err.textContent = '';
    list.replaceChildren(...(files.length ? files.map(fileRow) : [h('p', { class: 'muted' }, 'No files yet.')]));
  }

  function fileRow(f) {
    const row = h('div', { class: 'file', 'data-file-id': f.id });
    const nameEl = h('span', { class: 'name', 'data-testid': 'file-name', onclick: () => navigate(`/?file=${encodeURIComponent(f.id)}`) }, f.name);
    const meta = h('span', { class: 'muted' }, `link: ${f.link} · v${f.version} · ${new Date(f.updated_at).toLocaleString()}`);
    const rename = h('button', {
      onclick: () => {
        const input = h('input', { type: 'text', value: f.name, 'data-testid': 'rename-input' });
        const save = async () => {
          try {
            await api.updateFile(f.id, { name: input.value.trim() || f.name });
            await refresh();
          } catch (x) {
            err.textContent = x.message;
          }
        };
        input.addEventListener('keydown', (e) => {
          if (e.key === 'Enter') save();
          if (e.key === 'Escape') refresh();
        });
        nameEl.replaceWith(input, h('button', { onclick: save, 'data-testid': 'rename-save' }, 'Save'));
        input.focus();
      },
    }, 'Rename');
    const share = h('button', { 'data-testid': 'share', onclick: () => { if (open.has(f.id)) open.delete(f.id); else open.add(f.id); refresh(); } }, 'Share');
    const del = h('button', {
      class: 'danger',
      onclick: async () => {
        if (!confirm(`Delete “${f.name}”? Everyone in it is disconnected.`)) return;
        try {
          await api.deleteFile(f.id);
          await refresh();
        } catch (x) {
          err.textContent = x.message;
        }
      },
    }, 'Delete');
    row.append(h('div', { class: 'row' }, nameEl, meta, rename, share, del));
    if (open.has(f.id)) row.append(sharePanel(f, (link) => { meta.textContent = meta.textContent.replace(/^link: \w+/, `link: ${link}`); }));
    return row;
  }

  function sharePanel(f, onLink) {
    const panel = h('div', { class: 'share', 'data-testid': 'share-panel' }, h('span', { class: 'muted' }, 'Loading…'));
    (async () => {
      const full = await api.file(f.id);
      const link = h('select', { 'data-testid': 'link-setting' },
        ...['none', 'view', 'edit'].map((v) => h('option', { value: v, selected: full.link === v }, v === 'none' ? 'No link access' : v === 'view' ? 'Anyone with a link can view' : 'Anyone with the edit link can edit')));
      const viewUrl = h('input', { type: 'text', readonly: true, 'data-testid': 'view-link' });
      const editUrl = h('input', { type: 'text', readonly: true, 'data-testid': 'edit-link' });
      const setKeys = (k) => {
        viewUrl.value = shareLink(location.origin, f.id, k.view_key);
        editUrl.value = shareLink(location.origin, f.id, k.edit_key);
      };
      setKeys(full);
      const copy = (input) => h('button', {
        onclick: async (e) => {
          try {
            await navigator.clipboard.writeText(input.value);
            e.target.textContent = 'Copied';
          } catch {
            input.select();
            document.execCommand?.('copy');
            e.target.textContent = 'Copied';
          }
          setTimeout(() => { e.target.textContent = 'Copy'; }, 1500);
        },
      }, 'Copy');
      const note = h('span', { class: 'muted' });
      link.addEventListener('change', async () => {
        try {
          await api.updateFile(f.id, { link: link.value });
          onLink(link.value);
          note.textContent = 'Saved.';
        } catch (x) {
          note.textContent = x.message;
        }
      });
      const rotate = h('button', {
        'data-testid': 'rotate-keys',
        onclick: async () => {
          if (!confirm('Make new links? The old links stop working and their people are disconnected.')) return;
          try {
            setKeys(await api.rotateKeys(f.id));
            note.textContent = 'New links made.';
          } catch (x) {
            note.textContent = x.message;
          }
        },
      }, 'New links');
      panel.replaceChildren(
        h('span', {}, 'Access'), link, rotate,
        h('span', {}, 'View link'), viewUrl, copy(viewUrl),
        h('span', {}, 'Edit link'), editUrl, copy(editUrl),
        h('span', {}), note, h('span', {}),
      );
    })().catch((x) => { panel.textContent = x.message; });
    return panel;
  }

  show(topbar(), h('div', { class: 'files' }, h('h2', {}, 'Your files'), form, err, list));
  refresh();
  const timer = setInterval(() => { if (!document.hidden && open.size === 0) refresh(); }, 15_000);
  leave = () => clearInterval(timer);
}

// ---------------------------------------------------------------- opening a file

async function openFile(id, key) {
  if (!session && !key) return authView('Sign in to open this file, or use a share link.');
  if (!session) {
    // A guest: ask for a name first.
    const nameInput = h('input', { type: 'text', 'data-testid': 'guest-name', value: localStorage.getItem('atrium:guest-name') ?? '', placeholder: 'Your name', maxlength: 64 });
    const form = h('form', {
      onsubmit: (e) => {
        e.preventDefault();
        const name = nameInput.value.trim() || 'Guest';
        localStorage.setItem('atrium:guest-name', name);
        startEditor(id, key, name);
      },
    }, nameInput, h('button', { class: 'primary', type: 'submit', 'data-testid': 'join' }, 'Open file'));
    show(h('div', { class: 'auth' }, h('h1', {}, 'Join a file'), h('p', { class: 'muted' }, 'You were sent a link to an Atrium file. Pick the name others will see.'), form,
      h('p', { class: 'muted' }, 'Have an account? ', h('a', { href: '/' }, 'Sign in'))));
    return;
  }
  startEditor(id, key, session.account.name);
}

async function startEditor(id, key, name) {
  const cacheKey = `atrium:file:${id}`;
  let info = { id, name: 'File' };
  try {
    info = JSON.parse(localStorage.getItem(cacheKey)) ?? info;
  } catch {
    // not kept
  }
  try {
    info = await api.file(id, key);
    localStorage.setItem(cacheKey, JSON.stringify({ id: info.id, name: info.name }));
  } catch (x) {
    // 0: no network; 5xx: the server (or a proxy before it) cannot answer now. Either way
    // open what this tab kept, and let the connection retry.
    if (x instanceof ApiError && x.status !== 0 && x.status < 500) {
      if (x.status === 401 && session && !key) {
        setSession(null);
        return authView('Your session ended: sign in again.');
      }
      return show(topbar(), h('div', { class: 'files' }, h('h2', {}, 'Cannot open this file'), h('p', { class: 'error', 'data-testid': 'open-error' }, x.message),
        session ? h('button', { onclick: () => navigate('/') }, 'Back to your files') : null));
    }
    // offline: open what this tab kept
  }
  leave = editor(info, key, name);
}

// ---------------------------------------------------------------- the editor

const READONLY_TEXT = {
  'view-link': 'This link gives view access only: you can look and point, not edit.',
  'editors-full': 'This file has as many editors as it can take: you can watch, and you will be able to edit when a seat frees.',
};

function editor(info, key, name) {
  const fileId = info.id;
  // The room: the server's document with this tab's pending edits, kept in localStorage
  // (with the tab's client id) so a reload offline loses nothing.
  const room = client.open(fileId, { key, name });

  const ui = {
    page: null, sel: new Set(), camera: { x: 0, y: 0, zoom: 1 }, drag: null,
    get peers() { return room.others; }, // person id -> {page, cursor, sel, camera}
    inspect: null, // a version shown instead of the live document (history_inspect.js)
  };
  const versions = new HistoryPanel({
    api, fileId, key,
    who: () => ({ role: room.role, owner: !!session && info.owner === session.account.id, viewersSeeHistory: !!info.viewers_see_history }),
    subscribe: (fn) => {
      const offs = [room.subscribe('version', fn), room.subscribe('restored', fn)];
      return () => offs.forEach((off) => off());
    },
    show: (inspect) => {
      ui.inspect = inspect;
      ui.sel.clear();
      renderRole();
      render();
    },
  });
  window.atrium = { room, conn: room.conn, ui, fileId, history: versions };

  // --- layout
  const status = h('span', { class: 'status', 'data-testid': 'status' });
  const statusAction = h('span');
  const peopleEl = h('div', { class: 'people', 'data-testid': 'people' });
  const pagesEl = h('div', { class: 'pages', 'data-testid': 'pages' });
  const addPage = h('button', { 'data-testid': 'add-page', onclick: () => addPageNode() }, '+ Page');
  const banner = h('div', { class: 'banner', 'data-testid': 'readonly-banner', hidden: true });
  const addRect = h('button', { 'data-testid': 'add-rect', onclick: () => addRectangle() }, '+ Rectangle');
  const colour = h('input', { type: 'color', 'data-testid': 'fill', value: '#4dabf7', title: 'Fill of the selection' });
  const del = h('button', { class: 'danger', 'data-testid': 'delete-shape', onclick: () => deleteSelection() }, 'Delete');
  const svg = s('svg', { 'data-testid': 'canvas' });
  const gShapes = s('g');
  const gMarks = s('g', { 'data-testid': 'compare-marks' });
  const gSel = s('g');
  const gCursors = s('g');
  svg.append(gShapes, gMarks, gSel, gCursors);
  const canvas = h('div', { class: 'canvas' }, svg);
  const back = session ? h('button', { onclick: () => navigate('/') }, '← Files') : null;
  show(
    topbar(back, h('span', { 'data-testid': 'file-title' }, info.name), status, statusAction),
    h('div', { class: 'editor' },
      h('div', { class: 'side' }, h('div', {}, h('h3', {}, 'Pages'), pagesEl, addPage), h('div', {}, h('h3', {}, 'People'), peopleEl)),
      h('div', { class: 'main' }, banner, versions.banner, h('div', { class: 'toolbar' }, addRect, h('label', {}, 'Fill ', colour), del, h('span', { class: 'spacer' }), versions.toggle), canvas),
      versions.el),
  );

  // While a version is shown (history), the canvas draws it and nothing is edited.
  const canEdit = () => room.role !== 'viewer' && !ui.inspect;
  const view = () => inspectDoc(ui.inspect, room.doc);

  // --- status
  let retryTick = null;
  function renderStatus() {
    const { state: st, waiting, retryAt, reason } = room.status;
    const edits = waiting ? ` · ${waiting} edit${waiting === 1 ? '' : 's'} waiting` : '';
    let text = { online: 'Online', connecting: 'Connecting…', offline: 'Offline', 'needs-user': 'Not connected', 'sign-in': 'Signed out', stopped: 'Disconnected' }[st] ?? st;
    if (st === 'offline' && retryAt) text += ` · retrying in ${Math.max(0, Math.ceil((retryAt - Date.now()) / 1000))} s`;
    if (st !== 'online' && reason) text += ` (${reason})`;
    status.textContent = text + edits;
    status.className = `status ${st}`;
    status.dataset.state = st;
    status.dataset.waiting = String(waiting);
    statusAction.replaceChildren();
    if (st === 'offline' || st === 'needs-user') statusAction.append(h('button', { 'data-testid': 'retry', onclick: () => room.retry() }, 'Retry now'));
    if (st === 'sign-in') statusAction.append(h('button', { onclick: () => { if (!key) setSession(null); navigate('/'); } }, 'Sign in'));
  }
  const offs = [room.subscribe('status', renderStatus)];
  retryTick = setInterval(() => { if (room.status.state === 'offline') renderStatus(); }, 1000);

  // --- read-only mode
  function renderRole() {
    const ro = !canEdit();
    const viewer = room.role === 'viewer';
    canvas.classList.toggle('readonly', ro);
    for (const b of [addRect, colour, del, addPage]) b.disabled = ro;
    banner.hidden = !viewer;
    if (viewer) {
      banner.textContent = READONLY_TEXT[room.roleReason] ?? (key ? 'You opened a view link: you can look and point, not edit.' : 'You can view this file but not edit it.');
      banner.dataset.reason = room.roleReason ?? (key ? 'view-link' : 'viewer');
    }
    if (ro) ui.drag = null;
    versions.refreshAccess();
  }

  // --- people
  function renderPeople() {
    const items = room.people.map((p) => h('div', { class: 'person', 'data-person': p.id },
      h('span', { class: 'dot', style: `background:${colourOf(p.id)}` }),
      h('span', {}, p.name + (p.id === room.you ? ' (you)' : '')),
      h('span', { class: 'role' }, p.role)));
    peopleEl.replaceChildren(...items);
  }

  // --- pages
  function ensurePage() {
    const pages = pagesOf(view());
    // A file with no page gets one, but only once the room holds the server's document
    // (online: the welcome is applied), never before: a file made with its own pages keeps them.
    if (pages.length === 0 && canEdit() && room.status.state === 'online') {
      room.patch([{ op: 'put', id: 'page-1', props: { type: 'page', name: 'Page 1', order: 0 } }]);
      return ensurePage();
    }
    if (!pages.some((p) => p.id === ui.page)) setPage(pages[0]?.id ?? null);
  }

  function setPage(id) {
    if (ui.page === id) return;
    ui.page = id;
    ui.sel.clear();
    room.setPresence({ page: id, sel: [] });
    render();
  }

  function addPageNode() {
    const pages = pagesOf(view());
    const id = `pg-${randomId(9)}`;
    const order = pages.reduce((m, p) => Math.max(m, p.order ?? 0), 0) + 1;
    room.patch([{ op: 'put', id, props: { type: 'page', name: `Page ${pages.length + 1}`, order } }]);
    setPage(id);
  }

  function renderPages() {
    pagesEl.replaceChildren(...pagesOf(view()).map((p) => h('button', { class: p.id === ui.page ? 'on' : '', 'data-page': p.id, onclick: () => setPage(p.id) }, p.name ?? p.id)));
  }

  // --- shapes
  const shapeEls = new Map();
  function renderShapes() {
    const shapes = ui.page ? shapesOn(view(), ui.page) : [];
    const seen = new Set();
    for (const sh of shapes) {
      seen.add(sh.id);
      let el = shapeEls.get(sh.id);
      if (!el) {
        el = s('rect', { class: 'shape', 'data-shape': sh.id });
        el.addEventListener('pointerdown', (e) => startDrag(e, sh.id, 'move'));
        shapeEls.set(sh.id, el);
      }
      setAttrs(el, { x: sh.x ?? 0, y: sh.y ?? 0, width: Math.max(1, sh.w ?? 100), height: Math.max(1, sh.h ?? 80), fill: sh.fill ?? '#ccc', rx: 2 });
      gShapes.append(el); // keeps z order
    }
    for (const [id, el] of shapeEls) if (!seen.has(id)) { el.remove(); shapeEls.delete(id); }
    for (const id of [...ui.sel]) if (!seen.has(id)) ui.sel.delete(id);
  }

  function renderSelections() {
    const nodes = [];
    const d = view();
    const outline = (id, colour, width) => {
      const n = d[id];
      if (!n || n.page !== ui.page) return;
      nodes.push(s('rect', { x: n.x ?? 0, y: n.y ?? 0, width: n.w ?? 100, height: n.h ?? 80, fill: 'none', stroke: colour, 'stroke-width': width / ui.camera.zoom, 'pointer-events': 'none' }));
    };
    for (const [pid, p] of ui.peers) if (p.page === ui.page) for (const id of p.sel ?? []) outline(id, colourOf(pid), 2);
    for (const id of ui.sel) outline(id, '#3b5bdb', 2);
    if (ui.sel.size === 1 && canEdit()) {
      const [id] = ui.sel;
      const n = d[id];
      if (n) {
        const size = 10 / ui.camera.zoom;
        const handle = s('rect', { class: 'handle', 'data-testid': 'resize-handle', x: (n.x ?? 0) + (n.w ?? 100) - size / 2, y: (n.y ?? 0) + (n.h ?? 80) - size / 2, width: size, height: size });
        handle.addEventListener('pointerdown', (e) => startDrag(e, id, 'resize'));
        nodes.push(handle);
      }
    }
    gSel.replaceChildren(...nodes);
    const [one] = ui.sel;
    if (one && d[one]?.fill && /^#[0-9a-f]{6}$/i.test(d[one].fill)) colour.value = d[one].fill;
  }

  function render() {
    ensurePage();
    renderPages();
    renderShapes();
    drawMarks(gMarks, ui.inspect, view(), ui.page, ui.camera.zoom);
    renderSelections();
  }

  // --- camera
  function applyCamera() {
    const r = svg.getBoundingClientRect();
    const { x, y, zoom } = ui.camera;
    svg.setAttribute('viewBox', `${x} ${y} ${Math.max(1, r.width) / zoom} ${Math.max(1, r.height) / zoom}`);
  }
  function toDoc(e) {
    const r = svg.getBoundingClientRect();
    return [(e.clientX - r.left) / ui.camera.zoom + ui.camera.x, (e.clientY - r.top) / ui.camera.zoom + ui.camera.y];
  }
  svg.addEventListener('wheel', (e) => {
    e.preventDefault();
    const c = ui.camera;
    if (e.ctrlKey || e.metaKey) {
      const [px, py] = toDoc(e);
      const zoom = Math.min(8, Math.max(0.1, c.zoom * Math.exp(-e.deltaY / 300)));
      c.x = px - (px - c.x) * (c.zoom / zoom);
      c.y = py - (py - c.y) * (c.zoom / zoom);
      c.zoom = zoom;
    } else {
      c.x += e.deltaX / c.zoom;
      c.y += e.deltaY / c.zoom;
    }
    applyCamera();
    renderSelections();
    room.setPresence({ camera: [c.x, c.y, c.zoom] });
  }, { passive: false });
  const resize = new ResizeObserver(applyCamera);
  resize.observe(svg);

  // --- editing
  function select(ids) {
    ui.sel = new Set(ids);
    room.setPresence({ sel: [...ui.sel].slice(0, 100) });
    renderSelections();
  }

  function addRectangle() {
    if (!canEdit() || !ui.page) return;
    const r = svg.getBoundingClientRect();
    const cx = ui.camera.x + r.width / ui.camera.zoom / 2;
    const cy = ui.camera.y + r.height / ui.camera.zoom / 2;
    const id = `r-${randomId(9)}`;
    const z = shapesOn(view(), ui.page).reduce((m, sh) => Math.max(m, sh.z ?? 0), 0) + 1;
    const jitter = () => Math.round((Math.random() - 0.5) * 80);
    room.patch([{ op: 'put', id, props: { type: 'rect', page: ui.page, x: Math.round(cx - 60) + jitter(), y: Math.round(cy - 40) + jitter(), w: 120, h: 80, fill: colour.value, z } }]);
    select([id]);
  }

  function deleteSelection() {
    if (!canEdit() || ui.sel.size === 0) return;
    room.patch([...ui.sel].map((id) => ({ op: 'delete', id })));
    select([]);
  }

  colour.addEventListener('input', () => {
    if (!canEdit() || ui.sel.size === 0) return;
    room.patch([...ui.sel].map((id) => ({ op: 'set', id, props: { fill: colour.value } })));
  });

  function startDrag(e, id, mode) {
    e.stopPropagation();
    if (e.button !== 0) return;
    if (mode === 'move' && !ui.sel.has(id)) select(e.shiftKey ? [...ui.sel, id] : [id]);
    else if (mode === 'move' && e.shiftKey) {
      ui.sel.delete(id);
      select([...ui.sel]);
      return;
    }
    if (!canEdit()) return;
    const d = view();
    const ids = mode === 'resize' ? [id] : [...ui.sel];
    ui.drag = { mode, start: toDoc(e), orig: new Map(ids.filter((i) => d[i]).map((i) => [i, { ...d[i] }])) };
    svg.setPointerCapture(e.pointerId);
  }

  svg.addEventListener('pointerdown', (e) => {
    if (e.target === svg) select([]);
  });
  svg.addEventListener('pointermove', (e) => {
    const p = toDoc(e);
    room.setPresence({ cursor: [Math.round(p[0] * 10) / 10, Math.round(p[1] * 10) / 10] });
    const drag = ui.drag;
    if (!drag || !canEdit()) return;
    const dx = Math.round(p[0] - drag.start[0]);
    const dy = Math.round(p[1] - drag.start[1]);
    const ops = [];
    for (const [id, o] of drag.orig) {
      if (drag.mode === 'move') ops.push({ op: 'set', id, props: { x: (o.x ?? 0) + dx, y: (o.y ?? 0) + dy } });
      else ops.push({ op: 'set', id, props: { w: Math.max(4, (o.w ?? 100) + dx), h: Math.max(4, (o.h ?? 80) + dy) } });
    }
    if (ops.length) room.patch(ops);
  });
  const endDrag = () => { ui.drag = null; };
  svg.addEventListener('pointerup', endDrag);
  svg.addEventListener('pointercancel', endDrag);
  svg.addEventListener('pointerleave', () => { if (!ui.drag) room.setPresence({ cursor: null }); });
  const onKey = (e) => {
    if ((e.key === 'Delete' || e.key === 'Backspace') && e.target === document.body) deleteSelection();
  };
  document.addEventListener('keydown', onKey);

  // --- peers: the room keeps their presence; their cursors glide between presence ticks
  const cursorEls = new Map();
  room.subscribe('others', () => renderSelections());
  function drawCursors() {
    const z = ui.camera.zoom;
    const shown = new Set();
    for (const c of room.cursors({ page: ui.page })) {
      shown.add(c.id);
      let el = cursorEls.get(c.id);
      if (!el) {
        const colourv = colourOf(c.id);
        el = s('g', { 'data-cursor': c.id, 'pointer-events': 'none' });
        const label = s('text', { x: 14, y: 26, class: 'cursor-label' });
        const bg = s('rect', { x: 10, y: 14, height: 16, rx: 3, fill: colourv });
        el.append(s('path', { d: 'M0 0 L0 16 L4.5 12 L8 19 L10.5 18 L7 11 L12.5 11 Z', fill: colourv, stroke: '#fff', 'stroke-width': 1 }), bg, label);
        gCursors.append(el);
        cursorEls.set(c.id, el);
      }
      const label = el.querySelector('text');
      if (label.textContent !== c.name) {
        label.textContent = c.name;
        el.querySelector('rect').setAttribute('width', String(8 + c.name.length * 6.5));
      }
      el.style.display = '';
      el.setAttribute('transform', `translate(${c.x} ${c.y}) scale(${1 / z})`);
      el.dataset.x = String(Math.round(c.x));
      el.dataset.y = String(Math.round(c.y));
    }
    for (const [id, el] of cursorEls) {
      if (!room.others.has(id)) {
        el.remove();
        cursorEls.delete(id);
      } else if (!shown.has(id)) {
        el.style.display = 'none';
      }
    }
  }
  let raf = 0;
  const frame = () => {
    drawCursors();
    raf = requestAnimationFrame(frame);
  };
  raf = requestAnimationFrame(frame);

  // --- room events
  offs.push(
    room.subscribe('doc', () => render()),
    room.subscribe('people', () => {
      renderPeople();
      renderSelections();
    }),
    room.subscribe('welcome', () => {
      versions.onWelcome();
      renderRole();
      room.setPresence({ page: ui.page, sel: [...ui.sel] });
      render();
    }),
    room.subscribe('role', (r) => { if (r.you) renderRole(); }),
    room.subscribe('reject', (m) => console.warn('atrium: patch refused', m)),
  );

  const onVis = () => room.setHidden(document.hidden);
  document.addEventListener('visibilitychange', onVis);
  const onOnline = () => { if (room.status.state === 'offline') room.retry(); };
  window.addEventListener('online', onOnline);
  const onHide = () => room.persist();
  window.addEventListener('pagehide', onHide);

  room.setHidden(document.hidden);
  renderStatus();
  renderRole();
  render();
  requestAnimationFrame(applyCamera);

  return () => {
    for (const off of offs) off();
    room.close();
    cancelAnimationFrame(raf);
    clearInterval(retryTick);
    resize.disconnect();
    document.removeEventListener('keydown', onKey);
    document.removeEventListener('visibilitychange', onVis);
    window.removeEventListener('online', onOnline);
    window.removeEventListener('pagehide', onHide);
    delete window.atrium;
  };
}

route();
