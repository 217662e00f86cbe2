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
export const CloseCode: Readonly<{
    Normal: 1000;
    PingTimeout: 1001;
    ProtocolError: 1002;
    Binary: 1003;
    InvalidUtf8: 1007;
    HalfSent: 1008;
    TooBig: 1009;
    Restarting: 1012;
    TryLater: 1013;
    NoHello: 4000;
    Unauthorized: 4001;
    Forbidden: 4003;
    NotFound: 4004;
    TooSlow: 4008;
    Moved: 4009;
    Replaced: 4010;
    Flooding: 4013;
    TooManySockets: 4029;
    Full: 4031;
}>;
/**
 * a file, node, person or client id: `[A-Za-z0-9_-]{1,64}`
 */
export type Id = string;
export type Role = "editor" | "viewer";
export type JsonValue = null | boolean | number | string | JsonArray | JsonObject;
export type JsonArray = JsonValue[];
export type JsonObject = {
    [key: string]: JsonValue;
};
/**
 * a node's props
 */
export type Props = {
    [prop: string]: JsonValue;
};
/**
 * a document: a map of nodes
 */
export type Doc = {
    [nodeId: string]: Props;
};
/**
 * creates the node with exactly these props
 */
export type PutOp = {
    op: "put";
    id: Id;
    props: Props;
};
/**
 * sets each prop of an existing node (null removes it)
 */
export type SetOp = {
    op: "set";
    id: Id;
    props: Props;
};
/**
 * removes the node
 */
export type DeleteOp = {
    op: "delete";
    id: Id;
};
export type Op = PutOp | SetOp | DeleteOp;
/**
 * A person in the file, as `welcome.people` and `join` give them.
 */
export type Person = {
    id: Id;
    name: string;
    /**
     * null for guests
     */
    account: string | null;
    role: Role;
    page: Id | null;
    /**
     * people an app token let in: the token's `sub`
     */
    sub?: string | undefined;
    /**
     * from the app token, `#rrggbb`
     */
    color?: string | undefined;
    /**
     * from the app token, an `https://` URL
     */
    avatar?: string | undefined;
};
/**
 * A person's presence, as `presences` gives it. People on the receiver's page come whole;
 * people elsewhere as `{id, page}` only.
 */
export type PresenceEntry = {
    id: Id;
    page: Id | null;
    cursor?: [number, number] | null | undefined;
    sel?: string[] | null | undefined;
    camera?: [number, number, number] | null | undefined;
    t?: number | null | undefined;
};
/**
 * What a client says about itself (every field optional: left out keeps its value).
 */
export type Presence = {
    page?: string | null | undefined;
    cursor?: [number, number] | null | undefined;
    /**
     * at most 100 ids
     */
    sel?: string[] | null | undefined;
    /**
     * x, y, zoom
     */
    camera?: [number, number, number] | null | undefined;
};
/**
 * A saved version of a file (docs/protocol.md, "Version history").
 */
export type Version = {
    id: number;
    version: number;
    created_at: number;
    kind: "auto" | "named" | "restore";
    title: string | null;
    description: string | null;
    editors: string[];
    restored_from: number | null;
    bytes: number;
};
export type HelloMessage = {
    type: "hello";
    /**
     * a session token or an app token
     */
    token: string | null;
    /**
     * a link key
     */
    key: string | null;
    /**
     * this tab's secret client id (at least 22 random characters)
     */
    client: Id;
    /**
     * the version the client holds
     */
    since: number | null;
    /**
     * display name (guests)
     */
    name?: string | undefined;
};
export type PatchMessage = {
    type: "patch";
    /**
     * the op id: positive, increasing for this client
     */
    id: number;
    /**
     * at most 1,000
     */
    ops: Op[];
    /**
     * echoed verbatim
     */
    t?: number | null | undefined;
};
export type PresenceMessage = {
    type: "presence";
    page?: string | null | undefined;
    cursor?: [number, number] | null | undefined;
    sel?: string[] | null | undefined;
    camera?: [number, number, number] | null | undefined;
    t?: number | null | undefined;
};
export type RefreshMessage = {
    type: "refresh";
    /**
     * a new app token with the same `sub`
     */
    token: string;
};
/**
 * An ephemeral message for everyone else in the file ("someone reacted"): never stored.
 */
export type EventMessage = {
    type: "event";
    /**
     * at most 4,096 bytes as compact JSON (by default)
     */
    data: JsonValue;
};
export type ClientMessage = HelloMessage | PatchMessage | PresenceMessage | RefreshMessage | EventMessage;
export type AckMessage = {
    type: "ack";
    id: number;
    v: number;
    t?: number | undefined;
};
export type RemotePatchMessage = {
    type: "patch";
    v: number;
    by: Id | "restore";
    ops: Op[];
    t?: number | undefined;
};
export type WelcomeMessage = {
    type: "welcome";
    you: Id;
    role: Role;
    reason?: string | undefined;
    version: number;
    /**
     * the whole document (exactly one of doc and resume)
     */
    doc?: Doc | undefined;
    resume?: (AckMessage | RemotePatchMessage)[] | undefined;
    people: Person[];
    presence_hz: number;
};
export type RejectMessage = {
    type: "reject";
    id: number | null;
    code: "viewer" | "editors-full" | "invalid" | "too-large" | "bad-token" | string;
    message: string;
};
export type PresencesMessage = {
    type: "presences";
    people: PresenceEntry[];
};
export type JoinMessage = {
    type: "join";
    people: Person[];
};
export type LeaveMessage = {
    type: "leave";
    ids: Id[];
};
export type PresenceRateMessage = {
    type: "presence-rate";
    hz: number;
};
export type RoleMessage = {
    type: "role";
    id: Id;
    role: Role;
};
export type NoticeMessage = {
    type: "notice";
    /**
     * 429 (rate), 503 (cannot write), 4001 (token expiring)
     */
    code: number;
    message: string;
    reason?: string | undefined;
    /**
     * with `token-expiring`: the token's exp (Unix seconds)
     */
    exp?: number | undefined;
};
export type RefreshedMessage = {
    type: "refreshed";
    /**
     * the new token's exp (Unix seconds)
     */
    exp: number;
};
export type VersionMessage = {
    type: "version";
    event: "saved" | "renamed" | "deleted";
    version: Version;
};
export type RestoredMessage = {
    type: "restored";
    v: number;
    from: Version;
    by: string;
};
/**
 * Someone else's event, or the app's server's (`by` is then its service person).
 */
export type RemoteEventMessage = {
    type: "event";
    by: Id;
    data: JsonValue;
};
export type ServerMessage = WelcomeMessage | AckMessage | RemotePatchMessage | RejectMessage | PresencesMessage | JoinMessage | LeaveMessage | PresenceRateMessage | RoleMessage | NoticeMessage | RefreshedMessage | VersionMessage | RestoredMessage | RemoteEventMessage;
