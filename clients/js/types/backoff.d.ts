/** @type {[number, number]} */
export const FIRST_MS: [number, number];
/** @type {[number, number]} */
export const CAP_MS: [number, number];
export class Backoff {
    /**
     * @param {{first?: [number, number], cap?: [number, number], random?: () => number}} [opts]
     */
    constructor({ first, cap, random }?: {
        first?: [number, number];
        cap?: [number, number];
        random?: () => number;
    });
    first: [number, number];
    cap: [number, number];
    random: () => number;
    attempt: number;
    /** The range [lo, hi] in ms of the wait before retry number `n` (0-based). */
    range(n?: number): number[];
    /** The next wait in ms; each call moves one step along the doubling. */
    next(): number;
    /** Back to the first range: call once a connection has been welcomed. */
    reset(): void;
}
