// The document model of the contract: a map of nodes, `{"<node id>": {props}}`. Pages
// are nodes with `type: "page"`; shapes carry `page: "<page id>"`. Three ops:
//   {op:"put", id, props}   create or replace the node with exactly these props
//   {op:"set", id, props}   set each prop of an existing node (null removes it);
//                           nothing when the node does not exist
//   {op:"delete", id}       remove the node; nothing when it does not exist
//
// Pure: no DOM, no timers.

const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

/** Applies one op to `doc` in place. */
export function applyOp(doc, op) {
  switch (op.op) {
    case 'put':
      doc[op.id] = { ...op.props };
      break;
    case 'set': {
      const node = own(doc, op.id) ? doc[op.id] : undefined;
      if (!node) break;
      // Copy on write, so snapshots that share nodes are never changed under them.
      const next = { ...node };
      for (const [k, v] of Object.entries(op.props)) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      doc[op.id] = next;
      break;
    }
    case 'delete':
      delete doc[op.id];
      break;
    default:
      throw new Error(`unknown op ${op.op}`);
  }
  return doc;
}

/** Applies ops in order to `doc` in place. */
export function applyOps(doc, ops) {
  for (const op of ops) applyOp(doc, op);
  return doc;
}

/** A shallow copy of the map (nodes are copied on write by applyOp). */
export function copyDoc(doc) {
  return { ...doc };
}

/**
 * Merges a sequence of ops into the fewest ops with the same effect: at most one op per
 * node. Ops on different nodes commute, so each node's ops reduce on their own:
 *   ... delete            -> delete   (a set after a delete does nothing)
 *   ... put P, set S...   -> put P+S  (null in a set removes the prop from P)
 *   set S1, set S2 ...    -> set S1+S2 (later wins; null kept, it removes on the server)
 * Nodes come out in the order of their first op.
 */
export function compactOps(ops) {
  const out = new Map();
  for (const op of ops) {
    const prev = out.get(op.id);
    if (op.op === 'put' || op.op === 'delete') {
      // Map.set keeps an existing key's place: nodes stay in first-seen order.
      out.set(op.id, op.op === 'put' ? { op: 'put', id: op.id, props: { ...op.props } } : { op: 'delete', id: op.id });
      continue;
    }
    // set
    if (!prev) {
      out.set(op.id, { op: 'set', id: op.id, props: { ...op.props } });
    } else if (prev.op === 'delete') {
      // nothing: the node is gone
    } else if (prev.op === 'put') {
      for (const [k, v] of Object.entries(op.props)) {
        if (v === null) delete prev.props[k];
        else prev.props[k] = v;
      }
    } else {
      Object.assign(prev.props, op.props);
    }
  }
  return [...out.values()];
}

/**
 * Splits ops into chunks of at most `maxOps` ops and about `maxBytes` of JSON each (an
 * op bigger than maxBytes on its own goes alone; the server will judge it).
 */
export function chunkOps(ops, { maxOps = 1000, maxBytes = 900 * 1024 } = {}) {
  const chunks = [];
  let cur = [];
  let bytes = 0;
  for (const op of ops) {
    const size = JSON.stringify(op).length + 1;
    if (cur.length > 0 && (cur.length >= maxOps || bytes + size > maxBytes)) {
      chunks.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(op);
    bytes += size;
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}

/** Pages of a document, in their `order` (then id). */
export function pagesOf(doc) {
  return Object.entries(doc)
    .filter(([, n]) => n && n.type === 'page')
    .map(([id, n]) => ({ id, ...n }))
    .sort((a, b) => (a.order ?? 0) - (b.order ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Shapes on a page, bottom to top (by `z`, then id). */
export function shapesOn(doc, pageId) {
  return Object.entries(doc)
    .filter(([, n]) => n && n.type !== 'page' && n.page === pageId)
    .map(([id, n]) => ({ id, ...n }))
    .sort((a, b) => (a.z ?? 0) - (b.z ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

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
  constructor({ version = null, doc = {} } = {}) {
    this.version = version;
    this.server = copyDoc(doc);
    this.view = copyDoc(doc);
  }

  /** Replaces the server state (a welcome with `doc`). */
  reset(version, doc) {
    this.version = version;
    this.server = copyDoc(doc);
  }

  /**
   * Applies a versioned change to the server state. Returns 'applied', 'old' (v at or
   * below the current version: already included) or 'gap' (a version was skipped: a
   * message was lost, the caller must resync).
   */
  applyServer(v, ops) {
    if (this.version !== null && v <= this.version) return 'old';
    if (this.version !== null && v !== this.version + 1) return 'gap';
    applyOps(this.server, ops);
    this.version = v;
    return 'applied';
  }

  /** Recomputes `view` from the server state and the pending ops (in order). */
  rebase(pendingOps) {
    this.view = applyOps(copyDoc(this.server), pendingOps);
    return this.view;
  }
}
