// The offline queue: every local edit waits here until the server acknowledges it, and
// everything here is kept in storage (localStorage in a browser), so edits survive a
// lost connection and a reload.
//
// Two lists, in op-id order:
//   sent:   patches that have an op id and may have reached the server; after a
//           reconnect they are resent one by one with their ORIGINAL ids (the server
//           answers a repeated id with an ack and never applies it twice).
//   unsent: groups of ops never sent. When more than `mergeAbove` (20) groups wait, they
//           go up merged into as few patches as the limits allow (compactOps + chunkOps);
//           otherwise each group is one patch. Edits made within `burstMs` of each other
//           (a drag) join one group.
// At most `maxInFlight` (30) patches are sent and unacknowledged on a socket at once.
// A patch's id is assigned, and stored, before it is sent.
//
// Pure: storage, clock and limits are injected; no DOM.

import { chunkOps, compactOps } from './doc.js';

export const DEFAULTS = { maxOps: 1000, maxBytes: 900 * 1024, mergeAbove: 20, maxInFlight: 30, burstMs: 50 };

export class Outbox {
  /**
   * @param {object} [o]
   * @param {import('./tabstore.js').StorageLike|null} [o.storage] something with getItem/setItem/removeItem, or null
   * @param {string} [o.key] the storage key of this queue
   * @param {() => number} [o.now]
   * @param {number} [o.maxOps] @param {number} [o.maxBytes] @param {number} [o.mergeAbove]
   * @param {number} [o.maxInFlight] @param {number} [o.burstMs]
   */
  constructor({ storage = null, key = 'atrium:outbox', now = Date.now, ...limits } = {}) {
    this.storage = storage;
    this.key = key;
    this.now = now;
    this.limits = { ...DEFAULTS, ...limits };
    this.nextId = 1;
    this.sent = []; // [{id, ops}]
    this.unsent = []; // [{ops, at}]
    this.onSocket = new Set(); // ids sent on the current socket and not yet acked
    this.load();
  }

  load() {
    if (!this.storage) return;
    let raw = null;
    try {
      raw = this.storage.getItem(this.key);
    } catch {
      return;
    }
    if (!raw) return;
    try {
      const s = JSON.parse(raw);
      this.nextId = Number.isSafeInteger(s.nextId) && s.nextId > 0 ? s.nextId : 1;
      this.sent = Array.isArray(s.sent) ? s.sent : [];
      this.unsent = Array.isArray(s.unsent) ? s.unsent : [];
    } catch {
      // A damaged record is dropped rather than crashing the page.
    }
  }

  save() {
    if (!this.storage) return true;
    try {
      if (this.sent.length === 0 && this.unsent.length === 0 && this.nextId === 1) {
        this.storage.removeItem(this.key);
      } else {
        this.storage.setItem(this.key, JSON.stringify({ nextId: this.nextId, sent: this.sent, unsent: this.unsent }));
      }
      return true;
    } catch {
      return false; // quota: edits still live in memory and go up when connected
    }
  }

  /** Number of patches or groups that the server has not confirmed. */
  get waiting() {
    return this.sent.length + this.unsent.length;
  }

  get inFlight() {
    return this.onSocket.size;
  }

  /** Records a local edit (ops already applied to the local view). */
  edit(ops) {
    if (ops.length === 0) return;
    const now = this.now();
    const last = this.unsent[this.unsent.length - 1];
    if (last && now - last.at < this.limits.burstMs) {
      last.ops = compactOps(last.ops.concat(ops));
      last.at = now;
    } else {
      this.unsent.push({ ops: [...ops], at: now });
    }
    this.save();
  }

  /** Every op not yet confirmed, in the order it was made (for rebasing the view). */
  pendingOps() {
    const out = [];
    for (const p of this.sent) out.push(...p.ops);
    for (const g of this.unsent) out.push(...g.ops);
    return out;
  }

  /** A new socket was welcomed: nothing is on it yet, everything unacked goes again. */
  newSocket() {
    this.onSocket.clear();
  }

  /**
   * The patches to send now, in order, each `{id, ops, resend}`; call again after acks.
   * Resends (original ids) come first, one by one; only once all of them are on the
   * socket do never-sent edits get ids, so ids reach the server in increasing order.
   */
  take() {
    const out = [];
    const room = () => this.onSocket.size < this.limits.maxInFlight;
    for (const p of this.sent) {
      if (!room()) return out;
      if (this.onSocket.has(p.id)) continue;
      this.onSocket.add(p.id);
      out.push({ id: p.id, ops: p.ops, resend: (p.tries ?? 0) > 0 });
      p.tries = (p.tries ?? 0) + 1;
    }
    if (this.unsent.length === 0 || !room()) return out;
    const { maxOps, maxBytes, mergeAbove } = this.limits;
    let planned = [];
    if (this.unsent.length > mergeAbove) {
      const all = [];
      for (const g of this.unsent) all.push(...g.ops);
      planned = chunkOps(compactOps(all), { maxOps, maxBytes });
      this.unsent = [];
    } else {
      // Take groups while there is room; each may split over several patches.
      while (this.unsent.length > 0 && planned.length + this.onSocket.size < this.limits.maxInFlight) {
        const g = this.unsent.shift();
        planned.push(...chunkOps(g.ops, { maxOps, maxBytes }));
      }
    }
    for (const ops of planned) {
      const p = { id: this.nextId++, ops };
      this.sent.push(p);
    }
    this.save(); // ids are stored before anything is sent
    for (const p of this.sent) {
      if (!room()) break;
      if (this.onSocket.has(p.id)) continue;
      this.onSocket.add(p.id);
      out.push({ id: p.id, ops: p.ops, resend: false });
      p.tries = 1;
    }
    return out;
  }

  /** The server acknowledged `id`: returns its entry (to apply its ops), or null. */
  ack(id) {
    const i = this.sent.findIndex((p) => p.id === id);
    this.onSocket.delete(id);
    if (i < 0) return null;
    const [p] = this.sent.splice(i, 1);
    this.save();
    return p;
  }

  /** The server refused `id` (final): the patch is dropped. Returns it, or null. */
  reject(id) {
    return this.ack(id);
  }

  /** Forgets everything (the file was deleted, or access is gone). */
  clear() {
    this.sent = [];
    this.unsent = [];
    this.onSocket.clear();
    this.save();
  }
}
