/**
 * The share link of a file: the key rides in the fragment, never sent to a server.
 * @param {string} origin @param {string} fileId @param {string} key
 */
export function shareLink(origin: string, fileId: string, key: string): string;
/** @import { Doc } from './messages.js' */
/**
 * @typedef {object} Account
 * @property {string} id
 * @property {string} email
 * @property {string} name
 * @property {boolean} admin
 */
/** @typedef {{token: string, account: Account}} Session */
/** @typedef {'none' | 'view' | 'edit'} Link */
/**
 * A file as the API gives it (`view_key` and `edit_key` for its owner only).
 * @typedef {object} FileInfo
 * @property {string} id
 * @property {string} name
 * @property {Link} link
 * @property {number} version
 * @property {number} [updated_at]
 * @property {string} [owner]
 * @property {string} [view_key]
 * @property {string} [edit_key]
 * @property {boolean} [viewers_see_history]
 */
export class ApiError extends Error {
    /** @param {number} status @param {string} code @param {string} message */
    constructor(status: number, code: string, message: string);
    status: number;
    code: string;
}
export class Api {
    /**
     * @param {{base?: string, token?: string|null, fetch?: typeof fetch, getToken?: () => Promise<string>}} [o]
     *   base: '' for the page's own origin, or e.g. 'http://127.0.0.1:8080'; getToken: an app
     *   token for each request (instead of `token`)
     */
    constructor({ base, token, fetch: f, getToken }?: {
        base?: string;
        token?: string | null;
        fetch?: typeof fetch;
        getToken?: () => Promise<string>;
    });
    base: string;
    /** @type {string | null} */
    token: string | null;
    getToken: (() => Promise<string>) | null;
    fetch: typeof fetch;
    /** @type {{etag: string, files: FileInfo[]} | null} */
    listCache: {
        etag: string;
        files: FileInfo[];
    } | null;
    /**
     * One request; the body of a 2xx answer, or a thrown ApiError.
     * @param {string} method @param {string} path
     * @param {{body?: unknown, key?: string | null, headers?: Record<string, string>, anonymous?: boolean}} [o]
     *   anonymous: send no token (sign-up and sign-in)
     * @returns {Promise<{status: number, body: any, res: Response}>}
     */
    req(method: string, path: string, { body, key, headers, anonymous }?: {
        body?: unknown;
        key?: string | null;
        headers?: Record<string, string>;
        anonymous?: boolean;
    }): Promise<{
        status: number;
        body: any;
        res: Response;
    }>;
    /** @param {string} email @param {string} password @param {string} name @returns {Promise<Session>} */
    signup(email: string, password: string, name: string): Promise<Session>;
    /** @param {string} email @param {string} password @returns {Promise<Session>} */
    signin(email: string, password: string): Promise<Session>;
    signout(): Promise<void>;
    /** @returns {Promise<Account>} */
    me(): Promise<Account>;
    /** The caller's files; revalidated with the ETag of the last answer. @returns {Promise<FileInfo[]>} */
    files(): Promise<FileInfo[]>;
    /**
     * Creates a file (201): `doc` is its first document; `id` names it (app tokens only).
     * @param {string} [name] @param {Doc} [doc] @param {{id?: string}} [o]
     * @returns {Promise<FileInfo>}
     */
    createFile(name?: string, doc?: Doc, { id }?: {
        id?: string;
    }): Promise<FileInfo>;
    /** @param {string} id @param {string | null} [key] @returns {Promise<FileInfo>} */
    file(id: string, key?: string | null): Promise<FileInfo>;
    /** @param {string} id @param {{name?: string, link?: Link, viewers_see_history?: boolean}} changes @returns {Promise<FileInfo>} */
    updateFile(id: string, changes: {
        name?: string;
        link?: Link;
        viewers_see_history?: boolean;
    }): Promise<FileInfo>;
    /** @param {string} id @returns {Promise<{view_key: string, edit_key: string}>} */
    rotateKeys(id: string): Promise<{
        view_key: string;
        edit_key: string;
    }>;
    /** @param {string} id */
    deleteFile(id: string): Promise<void>;
    /** The document as the server holds it. @param {string} id @param {string | null} [key] @returns {Promise<{version: number, doc: Doc}>} */
    doc(id: string, key?: string | null): Promise<{
        version: number;
        doc: Doc;
    }>;
    /** The socket URL of a file, on the API's origin. @param {string} id @param {string} [origin] */
    wsUrl(id: string, origin?: string): string;
}
export type Account = {
    id: string;
    email: string;
    name: string;
    admin: boolean;
};
export type Session = {
    token: string;
    account: Account;
};
export type Link = "none" | "view" | "edit";
/**
 * A file as the API gives it (`view_key` and `edit_key` for its owner only).
 */
export type FileInfo = {
    id: string;
    name: string;
    link: Link;
    version: number;
    updated_at?: number | undefined;
    owner?: string | undefined;
    view_key?: string | undefined;
    edit_key?: string | undefined;
    viewers_see_history?: boolean | undefined;
};
import type { Doc } from './messages.js';
