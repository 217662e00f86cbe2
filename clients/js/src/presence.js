// Presence out: the latest state wins. `update()` records what the person is doing;
// the throttle sends at most `hz` messages a second (20, or less when the server says
// `presence-rate`), each carrying only the fields that changed since the last one (the
// server keeps the rest), the camera at most `cameraHz` (5) times a second, nothing at
// all while the tab is hidden or when nothing changed.
//
// Pure: timers and clock are injected; `send(msg)` is called with the message object.

export const FIELDS = ['page', 'cursor', 'sel', 'camera'];

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

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
  constructor({ send, hz = 20, cameraHz = 5, now = () => performance.now(), setTimeout: st = setTimeout, clearTimeout: ct = clearTimeout }) {
    this.send = send;
    this.maxHz = hz; // our own ceiling
    this.hz = hz; // in force: min(ours, the server's presence-rate)
    this.cameraHz = cameraHz;
    this.now = now;
    this.st = st;
    this.ct = ct;
    this.state = { page: null, cursor: null, sel: null, camera: null };
    this.touched = new Set(); // fields ever set: only those are sent
    this.sent = {}; // what the server has from us (field -> value); empty after a reconnect
    this.lastAt = -Infinity;
    this.lastCameraAt = -Infinity;
    this.timer = null;
    this.hidden = false;
    this.enabled = false; // true while a socket is welcomed
  }

  /** Records new state (any subset of page, cursor, sel, camera) and schedules a send. */
  update(partial) {
    for (const k of FIELDS) {
      if (k in partial) {
        this.state[k] = partial[k];
        this.touched.add(k);
      }
    }
    this.schedule();
  }

  /** The server's `presence-rate`: at most `hz` a second from now on (up or down). */
  setRate(hz) {
    this.hz = Math.max(0.1, Math.min(this.maxHz, hz));
    this.reschedule();
  }

  /** Tab hidden: send nothing. Visible again: send what changed meanwhile. */
  setHidden(hidden) {
    this.hidden = hidden;
    if (hidden) this.cancel();
    else this.schedule();
  }

  /** Connected and welcomed (the server knows nothing of us yet), or disconnected. */
  setEnabled(on) {
    this.enabled = on;
    this.sent = {};
    if (on) this.schedule();
    else this.cancel();
  }

  /** The fields that differ from what the server has, with the camera held back by its own rate. */
  diff(now) {
    const msg = {};
    for (const k of FIELDS) {
      if (!this.touched.has(k)) continue;
      if (k in this.sent && same(this.sent[k], this.state[k])) continue;
      if (k === 'camera' && now - this.lastCameraAt < 1000 / this.cameraHz) continue;
      msg[k] = this.state[k];
    }
    return msg;
  }

  /** True when something changed that can't go yet only because of the camera rate. */
  cameraWaiting() {
    return this.touched.has('camera') && !('camera' in this.sent && same(this.sent.camera, this.state.camera));
  }

  schedule() {
    if (!this.enabled || this.hidden || this.timer !== null) return;
    const now = this.now();
    const wait = Math.max(this.lastAt + 1000 / this.hz - now, 0);
    if (wait === 0) this.flush();
    else this.timer = this.st(() => { this.timer = null; this.flush(); }, wait);
  }

  reschedule() {
    this.cancel();
    this.schedule();
  }

  cancel() {
    if (this.timer !== null) this.ct(this.timer);
    this.timer = null;
  }

  flush() {
    if (!this.enabled || this.hidden) return;
    const now = this.now();
    const msg = this.diff(now);
    if (Object.keys(msg).length > 0) {
      for (const k of Object.keys(msg)) this.sent[k] = msg[k];
      if ('camera' in msg) this.lastCameraAt = now;
      this.lastAt = now;
      this.send({ type: 'presence', ...msg });
    }
    if (this.cameraWaiting()) {
      // Only the camera is held back: come back when it may go.
      const wait = Math.max(this.lastCameraAt + 1000 / this.cameraHz - now, this.lastAt + 1000 / this.hz - now, 0);
      this.timer = this.st(() => { this.timer = null; this.flush(); }, wait);
    }
  }
}
