export class Glide {
    constructor(durationMs?: number);
    duration: number;
    from: any;
    to: any;
    t0: number;
    /** A new target at time `now`; the first one is jumped to. */
    target(point: any, now: any): void;
    /** The position to draw at `now`, or null when there is none. */
    at(now: any): any;
    /** True while moving (keep animating). */
    moving(now: any): boolean;
}
