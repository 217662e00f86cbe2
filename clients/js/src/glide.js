// Peers' cursors glide: each new position from the server becomes a target, and the
// drawn position moves from where it is now to the target over about one presence tick
// (1000/presence_hz ms), so the room's tick is invisible. Pure: call `at(now)` from
// requestAnimationFrame.

export class Glide {
  constructor(durationMs = 50) {
    this.duration = durationMs;
    this.from = null;
    this.to = null;
    this.t0 = 0;
  }

  /** A new target at time `now`; the first one is jumped to. */
  target(point, now) {
    if (point === null) {
      this.from = this.to = null;
      return;
    }
    this.from = this.to === null ? point : this.at(now);
    this.to = point;
    this.t0 = now;
  }

  /** The position to draw at `now`, or null when there is none. */
  at(now) {
    if (this.to === null) return null;
    const k = this.duration <= 0 ? 1 : Math.min(1, Math.max(0, (now - this.t0) / this.duration));
    return [this.from[0] + (this.to[0] - this.from[0]) * k, this.from[1] + (this.to[1] - this.from[1]) * k];
  }

  /** True while moving (keep animating). */
  moving(now) {
    return this.to !== null && now - this.t0 < this.duration;
  }
}
