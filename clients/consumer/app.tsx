// Code written as docs/client.md says, type-checked against the packed packages.
import { createClient, ApiError, type Doc, type Op, type Status, type WelcomeMessage, type Room } from '@atrium/client';
import { ClientProvider, RoomProvider, useDoc, useMyPresence, useNode, useOthersCursors, usePatch, usePeople, useStatus } from '@atrium/react';

// Sign-in with the app's own users: a function that returns an app token.
const client = createClient({
  baseUrl: 'https://atrium.example.com',
  auth: async () => (await fetch('/api/atrium-token')).text(),
});

// Or Atrium's own accounts.
const withAccount = createClient({ baseUrl: 'https://atrium.example.com', auth: { email: 'ann@example.com', password: 'correct horse' } });

async function plain(): Promise<void> {
  const file = await withAccount.api.createFile('Poster', { page1: { type: 'page', name: 'Page 1' } });
  const room: Room = withAccount.open(file.id);
  const off = room.subscribe('doc', (doc: Doc) => console.log(Object.keys(doc).length));
  room.subscribe('status', (s: Status) => console.log(s.state, s.reason, s.waiting, s.retryAt));
  room.subscribe('welcome', (w: WelcomeMessage) => console.log(w.you, w.role, w.version));
  room.subscribe('reject', (r) => console.warn(r.code, r.message, r.id));
  room.subscribe('closed', (c) => console.log(c.code, c.action, c.reason));
  await room.ready;
  const ops: Op[] = [{ op: 'put', id: 'r1', props: { type: 'rect', page: 'page1', x: 10, y: 10, w: 100, h: 80, fill: '#4dabf7' } }];
  const ok: boolean = room.patch(ops);
  room.setPresence({ page: 'page1', cursor: [10, 20], sel: ['r1'] });
  await room.flushed();
  console.log(ok, room.doc.r1?.x, room.people.map((p) => p.name), room.status.state);
  off();
  room.close();
  try {
    await withAccount.api.doc('missing');
  } catch (e) {
    if (e instanceof ApiError) console.log(e.status, e.code);
  }
}
void plain;

function Shape({ id }: { id: string }) {
  const node = useNode(id);
  const patch = usePatch();
  if (!node) return null;
  const x = Number(node.x ?? 0);
  return <rect x={x} y={Number(node.y ?? 0)} width={Number(node.w)} height={Number(node.h)} fill={String(node.fill)}
    onClick={() => patch([{ op: 'set', id, props: { x: x + 10 } }])} />;
}

function Canvas() {
  const ids = useDoc((doc) => Object.keys(doc).filter((id) => doc[id].type === 'rect'));
  const cursors = useOthersCursors();
  const [presence, setPresence] = useMyPresence();
  return (
    <svg onPointerMove={(e) => setPresence({ cursor: [e.clientX, e.clientY] })} data-page={presence.page ?? ''}>
      {ids.map((id) => <Shape key={id} id={id} />)}
      {cursors.map((c) => <text key={c.id} x={c.x} y={c.y} fill={c.color ?? '#333'}>{c.name}</text>)}
    </svg>
  );
}

function StatusBar() {
  const { state, waiting } = useStatus();
  const people = usePeople();
  return <p>{state} · {waiting} waiting · {people.length} here</p>;
}

export function App() {
  return (
    <ClientProvider client={client}>
      <RoomProvider fileId="doc_123" options={{ key: null, name: 'Guest' }} fallback={<p>Opening…</p>}>
        <StatusBar />
        <Canvas />
      </RoomProvider>
    </ClientProvider>
  );
}
