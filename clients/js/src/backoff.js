// Reconnect backoff with jitter, as the wire contract asks: the first retry after a
// random 0.25-0.5 s, each later range doubling, capped at 7.5-15 s. Every wait is drawn
// uniformly within its range, so clients dropped together do not come back together.
//
// Pure: no timers, no DOM. `random` can be injected for tests.

/** @type {[number, number]} */
export const FIRST_MS = [250, 500];
/** @type {[number, number]} */
export const CAP_MS = [7500, 15000];

export class Backoff {
  /**
   * @param {{first?: [number, number], cap?: [number, number], random?: () => number}} [opts]
   */
  constructor({ first = FIRST_MS, cap = CAP_MS, random = Math.random } = {}) {
    this.first = first;
    this.cap = cap;
    this.random = random;
    this.attempt = 0;
  }

  /** The range [lo, hi] in ms of the wait before retry number `n` (0-based). */
  range(n = this.attempt) {
    const f = 2 ** Math.min(n, 30);
    return [Math.min(this.first[0] * f, this.cap[0]), Math.min(this.first[1] * f, this.cap[1])];
  }

  /** The next wait in ms; each call moves one step along the doubling. */
  next() {
    const [lo, hi] = this.range();
    this.attempt += 1;
    return lo + this.random() * (hi - lo);
  }

  /** Back to the first range: call once a connection has been welcomed. */
  reset() {
    this.attempt = 0;
  }
}
