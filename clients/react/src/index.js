// @atrium/react: React bindings for @atrium/client. A <RoomProvider> opens one file for
// the components under it; hooks read from the room with useSyncExternalStore, so a
// component re-renders only when what it reads changes (a selector's result, compared
// shallowly by default; a node, by identity: the room keeps unchanged nodes as they were).
//
//   <ClientProvider client={client}>
//     <RoomProvider fileId="doc_123">
//       <Canvas />
//     </RoomProvider>
//   </ClientProvider>
//
// Written without JSX so it needs no build step; types come from the JSDoc (tsc).

import { createContext, createElement, useCallback, useContext, useEffect, useRef, useState, useSyncExternalStore } from 'react';

/** @typedef {import('@atrium/client').Client} Client */
/** @typedef {import('@atrium/client').Room} Room */
/** @typedef {import('@atrium/client').Doc} Doc */
/** @typedef {import('@atrium/client').Props} Props */
/** @typedef {import('@atrium/client').Op} Op */
/** @typedef {import('@atrium/client').Person} Person */
/** @typedef {import('@atrium/client').Presence} Presence */
/** @typedef {import('@atrium/client').Status} Status */
/** @typedef {import('@atrium/client').Other} Other */
/** @typedef {import('@atrium/client').Cursor} Cursor */
/** @typedef {import('@atrium/client').OpenOptions} OpenOptions */

const ClientContext = createContext(/** @type {Client | null} */ (null));
const RoomContext = createContext(/** @type {Room | null} */ (null));

/**
 * Makes `client` the one RoomProviders below use.
 * @param {{client: Client, children?: import('react').ReactNode}} props
 * @returns {import('react').ReactNode}
 */
export function ClientProvider({ client, children }) {
  return createElement(ClientContext.Provider, { value: client }, children);
}

/**
 * @typedef {object} RoomProviderProps
 * @property {string} fileId the file to open
 * @property {Client} [client] the client (default: the nearest ClientProvider's)
 * @property {OpenOptions} [options] a link key, a guest name, a client id
 * @property {import('react').ReactNode} [fallback] shown until the room exists (one effect)
 * @property {import('react').ReactNode} [children]
 */

/**
 * Opens `fileId` for the components below, and closes it when unmounted (or when `fileId`
 * changes). The room is usable at once, before it is online: edits queue, and a document
 * kept from last time shows.
 * @param {RoomProviderProps} props
 * @returns {import('react').ReactNode}
 */
export function RoomProvider({ fileId, client, options, fallback = null, children }) {
  const fromContext = useContext(ClientContext);
  const c = client ?? fromContext;
  if (!c) throw new Error('RoomProvider needs a client: pass `client` or wrap it in <ClientProvider>');
  const [room, setRoom] = useState(/** @type {Room | null} */ (null));
  const key = options?.key ?? null;
  const name = options?.name;
  const clientId = options?.clientId;
  useEffect(() => {
    const r = c.open(fileId, { key, name, clientId });
    setRoom(r);
    return () => {
      r.close();
      setRoom(null);
    };
  }, [c, fileId, key, name, clientId]);
  if (!room || room.fileId !== fileId) return fallback;
  return createElement(RoomContext.Provider, { value: room }, children);
}

/** The room of the nearest RoomProvider. @returns {Room} */
export function useRoom() {
  const room = useContext(RoomContext);
  if (!room) throw new Error('this hook must be used inside a <RoomProvider>');
  return room;
}

/**
 * True when a and b are the same, or are arrays or plain objects whose items are the same
 * (Object.is, one level deep).
 * @param {unknown} a @param {unknown} b
 */
export function shallow(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k) || !Object.is(/** @type {any} */ (a)[k], /** @type {any} */ (b)[k])) return false;
  }
  return true;
}

/**
 * Subscribes to one of the room's events and reads a value derived from the room, keeping
 * the previous result while `isEqual` says nothing changed.
 * @template T
 * @param {Room} room
 * @param {'doc' | 'people' | 'others' | 'status'} event
 * @param {() => T} read
 * @param {(a: T, b: T) => boolean} isEqual
 * @returns {T}
 */
function useRoomValue(room, event, read, isEqual) {
  const last = useRef(/** @type {{value: T} | null} */ (null));
  const readRef = useRef(read);
  readRef.current = read;
  const subscribe = useCallback((/** @type {() => void} */ onChange) => room.subscribe(event, onChange), [room, event]);
  const getSnapshot = () => {
    const next = readRef.current();
    if (last.current && isEqual(last.current.value, next)) return last.current.value;
    last.current = { value: next };
    return next;
  };
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}

/**
 * Reads from the document: `selector(doc)`, re-rendering only when its result changes
 * (compared with `isEqual`, shallow by default, so a selector may return a new array of the
 * same items). Without a selector, the whole document (re-renders on every change).
 * @template [T=Doc]
 * @param {(doc: Doc) => T} [selector]
 * @param {(a: T, b: T) => boolean} [isEqual]
 * @returns {T}
 */
export function useDoc(selector, isEqual = shallow) {
  const room = useRoom();
  const sel = selector ?? ((/** @type {Doc} */ d) => /** @type {T} */ (/** @type {unknown} */ (d)));
  // Same doc object, same result: the selector runs once per change of the document.
  const memo = useRef(/** @type {{doc: Doc, sel: Function, out: T} | null} */ (null));
  return useRoomValue(room, 'doc', () => {
    const doc = room.doc;
    const m = memo.current;
    if (m && m.doc === doc && m.sel === sel) return m.out;
    const out = sel(doc);
    memo.current = { doc, sel, out };
    return out;
  }, isEqual);
}

/**
 * One node of the document (undefined when there is none). Re-renders only when that node
 * changes: the room keeps nodes that did not change as the same objects.
 * @param {string} id
 * @returns {Props | undefined}
 */
export function useNode(id) {
  const room = useRoom();
  return useRoomValue(room, 'doc', () => room.doc[id], Object.is);
}

/** Everyone in the file, this person included. @returns {Person[]} */
export function usePeople() {
  const room = useRoom();
  return useRoomValue(room, 'people', () => room.people, Object.is);
}

/** Others' presence by person id (page, cursor, sel, camera). @returns {Map<string, Other>} */
export function useOthers() {
  const room = useRoom();
  return useRoomValue(room, 'others', () => room.others, Object.is);
}

/**
 * The cursors of others on this person's page (set with `setPresence({page})`), each
 * gliding between the room's presence ticks: while one moves, this re-renders once an
 * animation frame; otherwise only when presence changes.
 * @returns {Cursor[]}
 */
export function useOthersCursors() {
  const room = useRoom();
  const [cursors, setCursors] = useState(() => room.cursors());
  useEffect(() => {
    let frame = 0;
    const raf = globalThis.requestAnimationFrame ?? ((/** @type {() => void} */ f) => setTimeout(f, 16));
    const caf = globalThis.cancelAnimationFrame ?? clearTimeout;
    const tick = () => {
      frame = 0;
      setCursors((prev) => {
        const next = room.cursors();
        return sameCursors(prev, next) ? prev : next;
      });
      if (room.cursorsMoving()) frame = raf(tick);
    };
    const off1 = room.subscribe('others', () => { if (!frame) frame = raf(tick); });
    const off2 = room.subscribe('people', () => { if (!frame) frame = raf(tick); });
    tick();
    return () => {
      off1();
      off2();
      if (frame) caf(frame);
    };
  }, [room]);
  return cursors;
}

/** @param {Cursor[]} a @param {Cursor[]} b */
function sameCursors(a, b) {
  if (a.length !== b.length) return false;
  return a.every((c, i) => c.id === b[i].id && c.x === b[i].x && c.y === b[i].y && c.name === b[i].name && c.color === b[i].color);
}

/**
 * This person's presence and a function that changes it (merged: fields left out keep
 * their value), as React's useState does.
 * @returns {[Presence, (p: Presence) => void]}
 */
export function useMyPresence() {
  const room = useRoom();
  const [presence, setLocal] = useState(() => room.presence);
  const set = useCallback((/** @type {Presence} */ p) => {
    room.setPresence(p);
    setLocal(room.presence);
  }, [room]);
  return [presence, set];
}

/** The connection's status: state, reason, retryAt, waiting. @returns {Status} */
export function useStatus() {
  const room = useRoom();
  return useRoomValue(room, 'status', () => room.status, Object.is);
}

/**
 * A stable function that edits the document (`room.patch`): applied at once, sent when
 * online, kept while offline. Returns false for viewers.
 * @returns {(ops: Op[]) => boolean}
 */
export function usePatch() {
  const room = useRoom();
  return useCallback((/** @type {Op[]} */ ops) => room.patch(ops), [room]);
}
