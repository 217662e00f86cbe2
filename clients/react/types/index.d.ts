/**
 * Makes `client` the one RoomProviders below use.
 * @param {{client: Client, children?: import('react').ReactNode}} props
 * @returns {import('react').ReactNode}
 */
export function ClientProvider({ client, children }: {
    client: Client;
    children?: import("react").ReactNode;
}): import("react").ReactNode;
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
export function RoomProvider({ fileId, client, options, fallback, children }: RoomProviderProps): import("react").ReactNode;
/** The room of the nearest RoomProvider. @returns {Room} */
export function useRoom(): Room;
/**
 * True when a and b are the same, or are arrays or plain objects whose items are the same
 * (Object.is, one level deep).
 * @param {unknown} a @param {unknown} b
 */
export function shallow(a: unknown, b: unknown): boolean;
/**
 * Reads from the document: `selector(doc)`, re-rendering only when its result changes
 * (compared with `isEqual`, shallow by default, so a selector may return a new array of the
 * same items). Without a selector, the whole document (re-renders on every change).
 * @template [T=Doc]
 * @param {(doc: Doc) => T} [selector]
 * @param {(a: T, b: T) => boolean} [isEqual]
 * @returns {T}
 */
export function useDoc<T = import("@atrium/client").Doc>(selector?: (doc: Doc) => T, isEqual?: (a: T, b: T) => boolean): T;
/**
 * One node of the document (undefined when there is none). Re-renders only when that node
 * changes: the room keeps nodes that did not change as the same objects.
 * @param {string} id
 * @returns {Props | undefined}
 */
export function useNode(id: string): Props | undefined;
/** Everyone in the file, this person included. @returns {Person[]} */
export function usePeople(): Person[];
/** Others' presence by person id (page, cursor, sel, camera). @returns {Map<string, Other>} */
export function useOthers(): Map<string, Other>;
/**
 * The cursors of others on this person's page (set with `setPresence({page})`), each
 * gliding between the room's presence ticks: while one moves, this re-renders once an
 * animation frame; otherwise only when presence changes.
 * @returns {Cursor[]}
 */
export function useOthersCursors(): Cursor[];
/**
 * This person's presence and a function that changes it (merged: fields left out keep
 * their value), as React's useState does.
 * @returns {[Presence, (p: Presence) => void]}
 */
export function useMyPresence(): [Presence, (p: Presence) => void];
/** The connection's status: state, reason, retryAt, waiting. @returns {Status} */
export function useStatus(): Status;
/**
 * A stable function that edits the document (`room.patch`): applied at once, sent when
 * online, kept while offline. Returns false for viewers.
 * @returns {(ops: Op[]) => boolean}
 */
export function usePatch(): (ops: Op[]) => boolean;
export type RoomProviderProps = {
    /**
     * the file to open
     */
    fileId: string;
    /**
     * the client (default: the nearest ClientProvider's)
     */
    client?: import("@atrium/client").Client | undefined;
    /**
     * a link key, a guest name, a client id
     */
    options?: import("@atrium/client").OpenOptions | undefined;
    /**
     * shown until the room exists (one effect)
     */
    fallback?: import("react").ReactNode;
    children?: import("react").ReactNode;
};
export type Client = import("@atrium/client").Client;
export type Room = import("@atrium/client").Room;
export type Doc = import("@atrium/client").Doc;
export type Props = import("@atrium/client").Props;
export type Op = import("@atrium/client").Op;
export type Person = import("@atrium/client").Person;
export type Presence = import("@atrium/client").Presence;
export type Status = import("@atrium/client").Status;
export type Other = import("@atrium/client").Other;
export type Cursor = import("@atrium/client").Cursor;
export type OpenOptions = import("@atrium/client").OpenOptions;
