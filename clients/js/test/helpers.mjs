// Test doubles: a fake clock with timers, a fake localStorage, a fake WebSocket.

export class FakeClock {
  constructor() {
    this.t = 0;
    this.timers = new Map();
    this.seq = 0;
    this.setTimeout = (f, ms) => {
      const id = ++this.seq;
      this.timers.set(id, { at: this.t + Math.max(0, ms), f });
      return id;
    };
    this.clearTimeout = (id) => this.timers.delete(id);
    this.now = () => this.t;
  }

  /** Moves time forward by `ms`, running every timer that falls due, in order. */
  tick(ms) {
    const end = this.t + ms;
    for (;;) {
      let next = null;
      for (const [id, tm] of this.timers) if (tm.at <= end && (!next || tm.at < next[1].at || (tm.at === next[1].at && id < next[0]))) next = [id, tm];
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].f();
    }
    this.t = end;
  }

  /** The delay of the single pending timer (for asserting waits). */
  pending() {
    return [...this.timers.values()].map((tm) => tm.at - this.t);
  }
}

export class FakeStorage {
  constructor() {
    this.m = new Map();
  }
  getItem(k) {
    return this.m.has(k) ? this.m.get(k) : null;
  }
  setItem(k, v) {
    this.m.set(k, String(v));
  }
  removeItem(k) {
    this.m.delete(k);
  }
}

/** A WebSocket double: tests drive open/messages/close and read what was sent. */
export function fakeSocketClass() {
  const sockets = [];
  class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.sent = [];
      this.closed = null;
      sockets.push(this);
    }
    send(text) {
      this.sent.push(JSON.parse(text));
    }
    close(code) {
      this.closed = code ?? 1000;
    }
    // test side
    open() {
      this.onopen?.();
    }
    deliver(msg) {
      this.onmessage?.({ data: JSON.stringify(msg) });
    }
    drop(code, reason = '') {
      this.onclose?.({ code, reason });
    }
    patches() {
      return this.sent.filter((m) => m.type === 'patch');
    }
  }
  return { FakeWebSocket, sockets };
}
