export namespace DEFAULTS {
    let maxOps: number;
    let maxBytes: number;
    let mergeAbove: number;
    let maxInFlight: number;
    let burstMs: number;
}
export class Outbox {
    /**
     * @param {object} [o]
     * @param {import('./tabstore.js').StorageLike|null} [o.storage] something with getItem/setItem/removeItem, or null
     * @param {string} [o.key] the storage key of this queue
     * @param {() => number} [o.now]
     * @param {number} [o.maxOps] @param {number} [o.maxBytes] @param {number} [o.mergeAbove]
     * @param {number} [o.maxInFlight] @param {number} [o.burstMs]
     */
    constructor({ storage, key, now, ...limits }?: {
        storage?: import("./tabstore.js").StorageLike | null | undefined;
        key?: string | undefined;
        now?: (() => number) | undefined;
        maxOps?: number | undefined;
        maxBytes?: number | undefined;
        mergeAbove?: number | undefined;
        maxInFlight?: number | undefined;
        burstMs?: number | undefined;
    });
    storage: import("./tabstore.js").StorageLike | null;
    key: string;
    now: () => number;
    limits: {
        maxOps: number;
        maxBytes: number;
        mergeAbove: number;
        maxInFlight: number;
        burstMs: number;
    };
    nextId: number;
    sent: any[];
    unsent: any[];
    onSocket: Set<any>;
    load(): void;
    save(): boolean;
    /** Number of patches or groups that the server has not confirmed. */
    get waiting(): number;
    get inFlight(): number;
    /** Records a local edit (ops already applied to the local view). */
    edit(ops: any): void;
    /** Every op not yet confirmed, in the order it was made (for rebasing the view). */
    pendingOps(): any[];
    /** A new socket was welcomed: nothing is on it yet, everything unacked goes again. */
    newSocket(): void;
    /**
     * The patches to send now, in order, each `{id, ops, resend}`; call again after acks.
     * Resends (original ids) come first, one by one; only once all of them are on the
     * socket do never-sent edits get ids, so ids reach the server in increasing order.
     */
    take(): {
        id: any;
        ops: any;
        resend: boolean;
    }[];
    /** The server acknowledged `id`: returns its entry (to apply its ops), or null. */
    ack(id: any): any;
    /** The server refused `id` (final): the patch is dropped. Returns it, or null. */
    reject(id: any): any;
    /** Forgets everything (the file was deleted, or access is gone). */
    clear(): void;
}
