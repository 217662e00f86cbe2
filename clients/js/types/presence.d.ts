export const FIELDS: string[];
export class PresenceThrottle {
    /**
     * @param {object} o
     * @param {(msg: object) => void} o.send
     * @param {number} [o.hz] most messages a second
     * @param {number} [o.cameraHz] most camera changes a second
     * @param {() => number} [o.now]
     * @param {(f: Function, ms: number) => any} [o.setTimeout]
     * @param {(h: any) => void} [o.clearTimeout]
     */
    constructor({ send, hz, cameraHz, now, setTimeout: st, clearTimeout: ct }: {
        send: (msg: object) => void;
        hz?: number | undefined;
        cameraHz?: number | undefined;
        now?: (() => number) | undefined;
        setTimeout?: ((f: Function, ms: number) => any) | undefined;
        clearTimeout?: ((h: any) => void) | undefined;
    });
    send: (msg: object) => void;
    maxHz: number;
    hz: number;
    cameraHz: number;
    now: () => number;
    st: (f: Function, ms: number) => any;
    ct: (h: any) => void;
    state: {
        page: null;
        cursor: null;
        sel: null;
        camera: null;
    };
    touched: Set<any>;
    sent: {};
    lastAt: number;
    lastCameraAt: number;
    timer: any;
    hidden: boolean;
    enabled: boolean;
    /** Records new state (any subset of page, cursor, sel, camera) and schedules a send. */
    update(partial: any): void;
    /** The server's `presence-rate`: at most `hz` a second from now on (up or down). */
    setRate(hz: any): void;
    /** Tab hidden: send nothing. Visible again: send what changed meanwhile. */
    setHidden(hidden: any): void;
    /** Connected and welcomed (the server knows nothing of us yet), or disconnected. */
    setEnabled(on: any): void;
    /** The fields that differ from what the server has, with the camera held back by its own rate. */
    diff(now: any): {};
    /** True when something changed that can't go yet only because of the camera rate. */
    cameraWaiting(): boolean;
    schedule(): void;
    reschedule(): void;
    cancel(): void;
    flush(): void;
}
