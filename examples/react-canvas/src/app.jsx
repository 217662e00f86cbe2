// A shared canvas in about 150 lines: open the page, give a name, and you get a file of
// your own with a share link; whoever opens the link edits with you. Rectangles can be
// added and dragged; everyone's cursor shows; edits made offline go up when the network
// comes back (they are kept in localStorage, so a reload does not lose them).
//
// Everything Atrium-specific is from @atrium/client and @atrium/react; see docs/client.md.

import { memo, useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient, randomId, shareLink } from '@atrium/client';
import { ClientProvider, RoomProvider, useDoc, useMyPresence, useNode, useOthersCursors, usePatch, usePeople, useRoom, useStatus } from '@atrium/react';

const PAGE = 'page1';
const colour = (id) => `hsl(${[...id].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 360, 0)} 65% 45%)`;

// The page and the API share an origin (serve.mjs proxies to the node), so no baseUrl.
const client = createClient({ auth: sessionFromStorage() });

function sessionFromStorage() {
  const token = localStorage.getItem('example:token');
  return token ? { token } : null;
}

/** No file in the URL: make an account and a file, then go to the file's share link. */
function Start() {
  const [name, setName] = useState(localStorage.getItem('example:name') ?? '');
  const [error, setError] = useState('');
  async function start(e) {
    e.preventDefault();
    try {
      localStorage.setItem('example:name', name);
      const session = await client.signUp(`${randomId()}@example.invalid`, randomId(), name || 'Someone');
      localStorage.setItem('example:token', session.token);
      const file = await client.api.createFile('Canvas', { [PAGE]: { type: 'page', name: 'Page 1', order: 0 } });
      await client.api.updateFile(file.id, { link: 'edit' });
      location.assign(shareLink(location.origin, file.id, file.edit_key));
    } catch (x) {
      setError(x.message);
    }
  }
  return (
    <form className="start" onSubmit={start}>
      <h2>Atrium canvas</h2>
      <input placeholder="Your name" value={name} onChange={(e) => setName(e.target.value)} />
      <button type="submit">New canvas</button>
      <p>{error}</p>
    </form>
  );
}

function StatusBar() {
  const { state, reason, waiting } = useStatus();
  const room = useRoom();
  const people = usePeople();
  const patch = usePatch();
  const addRect = () => {
    const id = `r-${randomId(9)}`;
    patch([{ op: 'put', id, props: { type: 'rect', page: PAGE, x: 40 + Math.random() * 400, y: 40 + Math.random() * 300, w: 120, h: 80, fill: colour(id) } }]);
  };
  return (
    <header>
      <strong>Atrium canvas</strong>
      <button onClick={addRect} disabled={room.role === 'viewer'}>+ Rectangle</button>
      <button onClick={() => navigator.clipboard?.writeText(location.href)}>Copy share link</button>
      <span className="people">{people.map((p) => <span key={p.id} style={{ background: colour(p.id) }}>{p.name}</span>)}</span>
      <span className="spacer" />
      <span className={`status ${state}`}>{state}{reason && state !== 'online' ? ` (${reason})` : ''}{waiting ? ` · ${waiting} waiting` : ''}</span>
      {(state === 'offline' || state === 'needs-user') && <button onClick={() => room.retry()}>Retry now</button>}
    </header>
  );
}

/** One rectangle: re-renders only when its own node changes. */
const Rect = memo(function Rect({ id, onGrab }) {
  const n = useNode(id);
  if (!n) return null;
  return <rect x={n.x} y={n.y} width={n.w} height={n.h} fill={n.fill} rx={4} onPointerDown={(e) => onGrab(e, id, n)} />;
});

function Canvas() {
  const ids = useDoc((doc) => Object.keys(doc).filter((id) => doc[id].type === 'rect' && doc[id].page === PAGE));
  const cursors = useOthersCursors();
  const [, setPresence] = useMyPresence();
  const patch = usePatch();
  const drag = useRef(null);
  const svg = useRef(null);
  useEffect(() => setPresence({ page: PAGE }), [setPresence]); // others' cursors: this page's
  const point = (e) => {
    const r = svg.current.getBoundingClientRect();
    return [Math.round(e.clientX - r.left), Math.round(e.clientY - r.top)];
  };
  const onGrab = (e, id, n) => {
    drag.current = { id, start: point(e), x: n.x, y: n.y };
    svg.current.setPointerCapture(e.pointerId);
    setPresence({ sel: [id] });
  };
  const onMove = (e) => {
    const [x, y] = point(e);
    setPresence({ page: PAGE, cursor: [x, y] });
    const d = drag.current;
    if (d) patch([{ op: 'set', id: d.id, props: { x: d.x + x - d.start[0], y: d.y + y - d.start[1] } }]);
  };
  return (
    <svg ref={svg} onPointerMove={onMove} onPointerUp={() => { drag.current = null; }} onPointerLeave={() => setPresence({ cursor: null })}>
      {ids.map((id) => <Rect key={id} id={id} onGrab={onGrab} />)}
      {cursors.map((c) => (
        <g key={c.id} transform={`translate(${c.x} ${c.y})`} pointerEvents="none">
          <path d="M0 0 L0 16 L4.5 12 L8 19 L10.5 18 L7 11 L12.5 11 Z" fill={c.color ?? colour(c.id)} stroke="#fff" />
          <text x={14} y={26} fill={c.color ?? colour(c.id)}>{c.name}</text>
        </g>
      ))}
    </svg>
  );
}

function App() {
  const fileId = new URLSearchParams(location.search).get('file');
  if (!fileId) return <Start />;
  const key = /key=([^&]+)/.exec(location.hash)?.[1] ?? null;
  const name = localStorage.getItem('example:name') || 'Guest';
  return (
    <ClientProvider client={client}>
      <RoomProvider fileId={fileId} options={{ key: key && decodeURIComponent(key), name }} fallback={<p>Opening…</p>}>
        <StatusBar />
        <Canvas />
      </RoomProvider>
    </ClientProvider>
  );
}

createRoot(document.getElementById('root')).render(<App />);
