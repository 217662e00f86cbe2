// @atrium/client: Atrium's client for browsers and Node 20+. The front door is
// `createClient`; the building blocks below it are exported too, for apps that want the
// connection without the room, or only the document model. Every message of the wire
// contract is a type (messages.js).

export * from './client.js';
export * from './room.js';
export * from './api.js';
export * from './messages.js';
export { Connection } from './connection.js';
export { DocState, applyOp, applyOps, chunkOps, compactOps, copyDoc, pagesOf, shapesOn } from './doc.js';
export { Outbox } from './outbox.js';
export { PresenceThrottle } from './presence.js';
export { Backoff } from './backoff.js';
export { closeAction, restartDelay, retryHint } from './closes.js';
export { Glide } from './glide.js';
export { MemoryStorage, chooseClient, holdClient, randomId } from './tabstore.js';

/** @typedef {import('./tabstore.js').StorageLike} StorageLike */
