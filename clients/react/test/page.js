// The page the hooks' test renders in headless Chromium (bundled by esbuild): a room with
// one component per shape (useNode), a shape count (useDoc with a selector), the people,
// the others' cursors, the status, and a button that moves r1 (usePatch). Every component
// counts its renders in window.renders, which the test reads.

import { createElement as h, memo, StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient } from '@atrium/client';
import { ClientProvider, RoomProvider, useDoc, useMyPresence, useNode, useOthersCursors, usePatch, usePeople, useStatus } from '@atrium/react';

const cfg = window.ATRIUM_TEST;
window.renders = {};
const count = (name) => { window.renders[name] = (window.renders[name] ?? 0) + 1; };

// memo: a new list re-renders the list, not every shape in it (each reads its own node).
const Shape = memo(function Shape({ id }) {
  const n = useNode(id);
  count(id);
  if (!n) return null;
  return h('div', { 'data-shape': id, 'data-x': n.x, 'data-y': n.y, style: { position: 'absolute', left: n.x, top: n.y, width: n.w, height: n.h, background: n.fill } });
});

function ShapeList() {
  const ids = useDoc((d) => Object.keys(d).filter((k) => d[k].type === 'rect').sort());
  count('list');
  return h('div', { 'data-testid': 'shapes' }, ids.map((id) => h(Shape, { key: id, id })));
}

function PageName() {
  const name = useDoc((d) => d.page1?.name);
  count('page-name');
  return h('h1', { 'data-testid': 'page-name' }, name);
}

function People() {
  const people = usePeople();
  count('people');
  return h('ul', { 'data-testid': 'people' }, people.map((p) => h('li', { key: p.id }, p.name)));
}

function Cursors() {
  const cursors = useOthersCursors();
  return h('div', { 'data-testid': 'cursors' }, cursors.map((c) => h('span', { key: c.id, 'data-cursor': c.name, 'data-x': Math.round(c.x), 'data-y': Math.round(c.y) }, c.name)));
}

function Status() {
  const s = useStatus();
  count('status');
  return h('p', { 'data-testid': 'status', 'data-state': s.state, 'data-waiting': s.waiting }, s.state);
}

function Mover() {
  const patch = usePatch();
  const [presence, setPresence] = useMyPresence();
  count('mover');
  return h('div', {},
    h('button', { 'data-testid': 'move-r1', onClick: () => patch([{ op: 'set', id: 'r1', props: { x: 300 } }]) }, 'Move r1'),
    h('button', { 'data-testid': 'page', onClick: () => setPresence({ page: 'page1' }) }, `page: ${presence.page ?? 'none'}`));
}

const client = createClient({ baseUrl: cfg.baseUrl, auth: { token: cfg.token } });
createRoot(document.getElementById('root')).render(
  h(StrictMode, {},
    h(ClientProvider, { client },
      h(RoomProvider, { fileId: cfg.fileId, fallback: h('p', {}, 'opening') },
        h(Status), h(PageName), h(People), h(Mover), h(Cursors), h(ShapeList)))));
