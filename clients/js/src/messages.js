// The wire contract's messages as types (docs/protocol.md, "The socket"). This module has
// no code: it exists so that `tsc` emits the types into the package's declarations and so
// that the client's own code is checked against them.

/** @typedef {string} Id a file, node, person or client id: `[A-Za-z0-9_-]{1,64}` */
/** @typedef {'editor' | 'viewer'} Role */
/** @typedef {null | boolean | number | string | JsonArray | JsonObject} JsonValue */
/** @typedef {JsonValue[]} JsonArray */
/** @typedef {{[key: string]: JsonValue}} JsonObject */

/** @typedef {{[prop: string]: JsonValue}} Props a node's props */
/** @typedef {{[nodeId: string]: Props}} Doc a document: a map of nodes */

/** @typedef {{op: 'put', id: Id, props: Props}} PutOp creates the node with exactly these props */
/** @typedef {{op: 'set', id: Id, props: Props}} SetOp sets each prop of an existing node (null removes it) */
/** @typedef {{op: 'delete', id: Id}} DeleteOp removes the node */
/** @typedef {PutOp | SetOp | DeleteOp} Op */

/**
 * A person in the file, as `welcome.people` and `join` give them.
 * @typedef {object} Person
 * @property {Id} id
 * @property {string} name
 * @property {string | null} account null for guests
 * @property {Role} role
 * @property {Id | null} page
 * @property {string} [sub] people an app token let in: the token's `sub`
 * @property {string} [color] from the app token, `#rrggbb`
 * @property {string} [avatar] from the app token, an `https://` URL
 */

/**
 * A person's presence, as `presences` gives it. People on the receiver's page come whole;
 * people elsewhere as `{id, page}` only.
 * @typedef {object} PresenceEntry
 * @property {Id} id
 * @property {Id | null} page
 * @property {[number, number] | null} [cursor]
 * @property {Id[] | null} [sel]
 * @property {[number, number, number] | null} [camera]
 * @property {number | null} [t]
 */

/**
 * What a client says about itself (every field optional: left out keeps its value).
 * @typedef {object} Presence
 * @property {Id | null} [page]
 * @property {[number, number] | null} [cursor]
 * @property {Id[] | null} [sel] at most 100 ids
 * @property {[number, number, number] | null} [camera] x, y, zoom
 */

/**
 * A saved version of a file (docs/protocol.md, "Version history").
 * @typedef {object} Version
 * @property {number} id
 * @property {number} version
 * @property {number} created_at
 * @property {'auto' | 'named' | 'restore'} kind
 * @property {string | null} title
 * @property {string | null} description
 * @property {string[]} editors
 * @property {number | null} restored_from
 * @property {number} bytes
 */

// ---------------------------------------------------------------- client → server

/**
 * @typedef {object} HelloMessage
 * @property {'hello'} type
 * @property {string | null} token a session token or an app token
 * @property {string | null} key a link key
 * @property {Id} client this tab's secret client id (at least 22 random characters)
 * @property {number | null} since the version the client holds
 * @property {string} [name] display name (guests)
 */
/**
 * @typedef {object} PatchMessage
 * @property {'patch'} type
 * @property {number} id the op id: positive, increasing for this client
 * @property {Op[]} ops at most 1,000
 * @property {number | null} [t] echoed verbatim
 */
/**
 * @typedef {object} PresenceMessage
 * @property {'presence'} type
 * @property {Id | null} [page]
 * @property {[number, number] | null} [cursor]
 * @property {Id[] | null} [sel]
 * @property {[number, number, number] | null} [camera]
 * @property {number | null} [t]
 */
/**
 * @typedef {object} RefreshMessage
 * @property {'refresh'} type
 * @property {string} token a new app token with the same `sub`
 */
/**
 * An ephemeral message for everyone else in the file ("someone reacted"): never stored.
 * @typedef {object} EventMessage
 * @property {'event'} type
 * @property {JsonValue} data at most 4,096 bytes as compact JSON (by default)
 */
/** @typedef {HelloMessage | PatchMessage | PresenceMessage | RefreshMessage | EventMessage} ClientMessage */

// ---------------------------------------------------------------- server → client

/**
 * @typedef {object} AckMessage
 * @property {'ack'} type
 * @property {number} id
 * @property {number} v
 * @property {number} [t]
 */
/**
 * @typedef {object} RemotePatchMessage
 * @property {'patch'} type
 * @property {number} v
 * @property {Id | 'restore'} by
 * @property {Op[]} ops
 * @property {number} [t]
 */
/**
 * @typedef {object} WelcomeMessage
 * @property {'welcome'} type
 * @property {Id} you
 * @property {Role} role
 * @property {'view-link' | 'editors-full' | string} [reason]
 * @property {number} version
 * @property {Doc} [doc] the whole document (exactly one of doc and resume)
 * @property {(AckMessage | RemotePatchMessage)[]} [resume]
 * @property {Person[]} people
 * @property {number} presence_hz
 */
/**
 * @typedef {object} RejectMessage
 * @property {'reject'} type
 * @property {number | null} id
 * @property {'viewer' | 'editors-full' | 'invalid' | 'too-large' | 'bad-token' | string} code
 * @property {string} message
 */
/**
 * @typedef {object} PresencesMessage
 * @property {'presences'} type
 * @property {PresenceEntry[]} people
 */
/**
 * @typedef {object} JoinMessage
 * @property {'join'} type
 * @property {Person[]} people
 */
/**
 * @typedef {object} LeaveMessage
 * @property {'leave'} type
 * @property {Id[]} ids
 */
/**
 * @typedef {object} PresenceRateMessage
 * @property {'presence-rate'} type
 * @property {number} hz
 */
/**
 * @typedef {object} RoleMessage
 * @property {'role'} type
 * @property {Id} id
 * @property {Role} role
 */
/**
 * @typedef {object} NoticeMessage
 * @property {'notice'} type
 * @property {number} code 429 (rate), 503 (cannot write), 4001 (token expiring)
 * @property {string} message
 * @property {'token-expiring' | string} [reason]
 * @property {number} [exp] with `token-expiring`: the token's exp (Unix seconds)
 */
/**
 * @typedef {object} RefreshedMessage
 * @property {'refreshed'} type
 * @property {number} exp the new token's exp (Unix seconds)
 */
/**
 * @typedef {object} VersionMessage
 * @property {'version'} type
 * @property {'saved' | 'renamed' | 'deleted'} event
 * @property {Version} version
 */
/**
 * @typedef {object} RestoredMessage
 * @property {'restored'} type
 * @property {number} v
 * @property {Version} from
 * @property {string} by
 */
/**
 * Someone else's event, or the app's server's (`by` is then its service person).
 * @typedef {object} RemoteEventMessage
 * @property {'event'} type
 * @property {Id} by
 * @property {JsonValue} data
 */
/**
 * @typedef {WelcomeMessage | AckMessage | RemotePatchMessage | RejectMessage | PresencesMessage |
 *   JoinMessage | LeaveMessage | PresenceRateMessage | RoleMessage | NoticeMessage |
 *   RefreshedMessage | VersionMessage | RestoredMessage | RemoteEventMessage} ServerMessage
 */

/** The close codes of the contract (docs/protocol.md, "Closes"). */
export const CloseCode = Object.freeze({
  Normal: 1000,
  PingTimeout: 1001,
  ProtocolError: 1002,
  Binary: 1003,
  InvalidUtf8: 1007,
  HalfSent: 1008,
  TooBig: 1009,
  Restarting: 1012,
  TryLater: 1013,
  NoHello: 4000,
  Unauthorized: 4001,
  Forbidden: 4003,
  NotFound: 4004,
  TooSlow: 4008,
  Moved: 4009,
  Replaced: 4010,
  Flooding: 4013,
  TooManySockets: 4029,
  Full: 4031,
});

export {};
