// @ts-nocheck: a test helper (only the messages test is type-checked)
// The real atrium-node for integration tests: spawned on a loopback port with its own data
// folder, behind a small TCP proxy whose address stays the same when the node is killed
// and started again (on a new port), and which can cut the network ("offline").
//
// The binary: ATRIUM_NODE_BIN, else target/debug/atrium-node of this repository.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
export const BIN = process.env.ATRIUM_NODE_BIN ?? path.join(ROOT, 'target/debug/atrium-node');

// The app-token settings every test node gets (docs/auth.md).
export const APP = { issuer: 'https://app.test', audience: 'atrium', secret: 'an-hs256-secret-of-at-least-32-bytes!!' };

/**
 * Signs an HS256 app token (docs/auth.md, "What a token holds").
 * @param {Record<string, unknown>} claims
 */
export function appToken(claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = { iss: APP.issuer, aud: APP.audience, iat: now, exp: now + 600, ...claims };
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(body)}`;
  const sig = crypto.createHmac('sha256', APP.secret).update(head).digest('base64url');
  return `${head}.${sig}`;
}

export class TestNode {
  /** @param {Record<string, string>} [env] extra ATRIUM_* settings */
  constructor(env = {}) {
    this.env = env;
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-client-it-'));
    this.proc = null;
    this.addr = null; // the node's own host:port
    this.offline = false;
    this.conns = new Set();
    this.proxy = net.createServer((c) => this.pipe(c));
  }

  /** Starts the proxy and the node; resolves with the base URL clients use. */
  async start() {
    if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: cargo build -p atrium-node`);
    await new Promise((r) => this.proxy.listen(0, '127.0.0.1', r));
    this.baseUrl = `http://127.0.0.1:${this.proxy.address().port}`;
    await this.spawn();
    return this.baseUrl;
  }

  spawn() {
    return new Promise((resolve, reject) => {
      const env = {
        ...process.env,
        ATRIUM_LOG: process.env.ATRIUM_LOG ?? 'warn',
        ATRIUM_APP_TOKEN_ISSUER: APP.issuer,
        ATRIUM_APP_TOKEN_AUDIENCE: APP.audience,
        ATRIUM_APP_TOKEN_HS256_SECRET: APP.secret,
        ...this.env,
      };
      const p = spawn(BIN, ['--bind', '127.0.0.1:0', '--data', this.dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env });
      this.proc = p;
      let buf = '';
      const timer = setTimeout(() => reject(new Error('the node did not start in 30 s')), 30_000);
      p.stdout.on('data', (d) => {
        buf += d;
        const m = /listening on http:\/\/([0-9.]+:\d+)/.exec(buf);
        if (m && this.proc === p && !this.addr) {
          clearTimeout(timer);
          this.addr = m[1];
          resolve(m[1]);
        }
      });
      p.stderr.on('data', (d) => { if (process.env.IT_VERBOSE) process.stderr.write(d); });
      p.on('exit', (code) => { if (!this.addr && this.proc === p) reject(new Error(`the node exited with ${code}`)); });
    });
  }

  /** kill -9, and every connection through the proxy with it. */
  kill() {
    if (this.proc && this.proc.exitCode === null) this.proc.kill('SIGKILL');
    this.addr = null;
    for (const c of this.conns) c.destroy();
  }

  /** kill -9 and start again on the same data (a crash and a restart). */
  async restart() {
    const old = this.proc;
    this.kill();
    if (old && old.exitCode === null) await new Promise((r) => old.once('exit', r));
    await this.spawn();
  }

  /** The network goes (every connection drops, new ones are refused) or comes back. */
  setOffline(off) {
    this.offline = off;
    if (off) for (const c of this.conns) c.destroy();
  }

  pipe(c) {
    if (this.offline || !this.addr) {
      c.destroy();
      return;
    }
    const [host, port] = this.addr.split(':');
    const up = net.connect(Number(port), host);
    this.conns.add(c);
    this.conns.add(up);
    const kill = () => {
      c.destroy();
      up.destroy();
      this.conns.delete(c);
      this.conns.delete(up);
    };
    c.on('error', kill);
    up.on('error', kill);
    c.on('close', kill);
    up.on('close', kill);
    c.pipe(up).pipe(c);
  }

  /** A request to the node's HTTP API (throws on an error status). */
  async api(method, p, { token, key, body } = {}) {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (key) headers['X-Atrium-Key'] = key;
    const r = await fetch(`${this.baseUrl}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async stop() {
    const old = this.proc;
    this.kill();
    if (old && old.exitCode === null) await new Promise((r) => old.once('exit', r));
    await new Promise((r) => this.proxy.close(r));
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something truthy (or throws after `timeout` ms). */
export async function until(what, fn, timeout = 20_000) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(50);
  }
}

/** A document as a canonical string (keys sorted), to compare two. */
export function canonical(doc) {
  return JSON.stringify(Object.keys(doc).sort().map((k) => [k, Object.keys(doc[k]).sort().map((p) => [p, doc[k][p]])]));
}
