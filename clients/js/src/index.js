// @atrium/client: Atrium's client for browsers and Node 20+. The front door is
// `createClient`; the building blocks below it are exported too, for apps that want the
// connection without the room, or only the document model.

export { Client, createClient, tokenExp } from './client.js';
export { Room } from './room.js';
export { Api, ApiError, shareLink } from './api.js';
export { Connection } from './connection.js';
export { DocState, applyOp, applyOps, chunkOps, compactOps, copyDoc, pagesOf, shapesOn } from './doc.js';
export { Outbox } from './outbox.js';
export { PresenceThrottle } from './presence.js';
export { Backoff } from './backoff.js';
export { closeAction, restartDelay, retryHint } from './closes.js';
export { Glide } from './glide.js';
export { MemoryStorage, chooseClient, holdClient, randomId } from './tabstore.js';
export { CloseCode } from './messages.js';

/**
 * @typedef {import('./messages.js').Id} Id
 * @typedef {import('./messages.js').Role} Role
 * @typedef {import('./messages.js').JsonValue} JsonValue
 * @typedef {import('./messages.js').Props} Props
 * @typedef {import('./messages.js').Doc} Doc
 * @typedef {import('./messages.js').Op} Op
 * @typedef {import('./messages.js').PutOp} PutOp
 * @typedef {import('./messages.js').SetOp} SetOp
 * @typedef {import('./messages.js').DeleteOp} DeleteOp
 * @typedef {import('./messages.js').Person} Person
 * @typedef {import('./messages.js').Presence} Presence
 * @typedef {import('./messages.js').PresenceEntry} PresenceEntry
 * @typedef {import('./messages.js').Version} Version
 * @typedef {import('./messages.js').ClientMessage} ClientMessage
 * @typedef {import('./messages.js').ServerMessage} ServerMessage
 * @typedef {import('./messages.js').HelloMessage} HelloMessage
 * @typedef {import('./messages.js').PatchMessage} PatchMessage
 * @typedef {import('./messages.js').PresenceMessage} PresenceMessage
 * @typedef {import('./messages.js').RefreshMessage} RefreshMessage
 * @typedef {import('./messages.js').WelcomeMessage} WelcomeMessage
 * @typedef {import('./messages.js').AckMessage} AckMessage
 * @typedef {import('./messages.js').RemotePatchMessage} RemotePatchMessage
 * @typedef {import('./messages.js').RejectMessage} RejectMessage
 * @typedef {import('./messages.js').PresencesMessage} PresencesMessage
 * @typedef {import('./messages.js').JoinMessage} JoinMessage
 * @typedef {import('./messages.js').LeaveMessage} LeaveMessage
 * @typedef {import('./messages.js').PresenceRateMessage} PresenceRateMessage
 * @typedef {import('./messages.js').RoleMessage} RoleMessage
 * @typedef {import('./messages.js').NoticeMessage} NoticeMessage
 * @typedef {import('./messages.js').RefreshedMessage} RefreshedMessage
 * @typedef {import('./messages.js').VersionMessage} VersionMessage
 * @typedef {import('./messages.js').RestoredMessage} RestoredMessage
 * @typedef {import('./client.js').Auth} Auth
 * @typedef {import('./client.js').ClientOptions} ClientOptions
 * @typedef {import('./client.js').OpenOptions} OpenOptions
 * @typedef {import('./room.js').Status} Status
 * @typedef {import('./room.js').State} State
 * @typedef {import('./room.js').Other} Other
 * @typedef {import('./room.js').Cursor} Cursor
 * @typedef {import('./room.js').RoomEvents} RoomEvents
 * @typedef {import('./api.js').Account} Account
 * @typedef {import('./api.js').Session} Session
 * @typedef {import('./api.js').FileInfo} FileInfo
 * @typedef {import('./api.js').Link} Link
 * @typedef {import('./tabstore.js').StorageLike} StorageLike
 */
