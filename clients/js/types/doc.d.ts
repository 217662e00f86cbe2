/** Applies one op to `doc` in place. */
export function applyOp(doc: any, op: any): any;
/** Applies ops in order to `doc` in place. */
export function applyOps(doc: any, ops: any): any;
/** A shallow copy of the map (nodes are copied on write by applyOp). */
export function copyDoc(doc: any): any;
/**
 * Merges a sequence of ops into the fewest ops with the same effect: at most one op per
 * node. Ops on different nodes commute, so each node's ops reduce on their own:
 *   ... delete            -> delete   (a set after a delete does nothing)
 *   ... put P, set S...   -> put P+S  (null in a set removes the prop from P)
 *   set S1, set S2 ...    -> set S1+S2 (later wins; null kept, it removes on the server)
 * Nodes come out in the order of their first op.
 */
export function compactOps(ops: any): any[];
/**
 * Splits ops into chunks of at most `maxOps` ops and about `maxBytes` of JSON each (an
 * op bigger than maxBytes on its own goes alone; the server will judge it).
 */
export function chunkOps(ops: any, { maxOps, maxBytes }?: {
    maxOps?: number | undefined;
    maxBytes?: number | undefined;
}): any[][];
/** Pages of a document, in their `order` (then id). */
export function pagesOf(doc: any): any[];
/** Shapes on a page, bottom to top (by `z`, then id). */
export function shapesOn(doc: any, pageId: any): any[];
/**
 * The server's document plus this client's pending edits.
 *
 * `server` holds the document at `version` exactly as the server ordered it. Remote
 * patches and acks of our own patches are applied to it in version order. `view` is
 * `server` with every pending local op (sent but unacknowledged, then never sent)
 * re-applied on top: optimistic edits rebased over whatever the server did meanwhile.
 */
export class DocState {
    /** @param {{version?: number | null, doc?: object}} [o] */
    constructor({ version, doc }?: {
        version?: number | null;
        doc?: object;
    });
    version: number | null;
    server: any;
    view: any;
    /** Replaces the server state (a welcome with `doc`). */
    reset(version: any, doc: any): void;
    /**
     * Applies a versioned change to the server state. Returns 'applied', 'old' (v at or
     * below the current version: already included) or 'gap' (a version was skipped: a
     * message was lost, the caller must resync).
     */
    applyServer(v: any, ops: any): "old" | "gap" | "applied";
    /** Recomputes `view` from the server state and the pending ops (in order). */
    rebase(pendingOps: any): any;
}
