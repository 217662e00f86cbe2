// What an end-to-end test needs around it: a real atrium-node on a loopback port with its
// own data folder, a front server per window (e2e/server.mjs), headless Chromium, named
// steps with a report, and waiting for a condition (never for a time).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

export const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = path.resolve(WEB, '..');
const BIN = process.env.ATRIUM_NODE_BIN ?? path.join(ROOT, 'target/debug/atrium-node');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PAGE_FROM_NODE = ['1', 'true', 'yes'].includes(process.env.E2E_PAGE_FROM_NODE ?? '');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

/** Polls `fn` until it returns something truthy; fails after `timeout` ms with the last answer. */
export async function until(what, fn, timeout = 15_000) {
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
    await sleep(100);
  }
}

/** A document as a canonical string: node ids and props sorted. */
export function canonical(doc) {
  return JSON.stringify(Object.keys(doc).sort().map((k) => [k, Object.keys(doc[k]).sort().map((p) => [p, doc[k][p]])]));
}

/** Named steps; the first failure stops the run. Uncaught page errors fail the step they came in. */
export class Steps {
  constructor() {
    this.passed = 0;
    this.failed = 0;
    this.pageErrors = [];
  }

  watch(name, page) {
    page.on('pageerror', (e) => {
      this.pageErrors.push(`[${name}] ${e.name || 'Error'}: ${e.message}`);
      console.log(`[${name} pageerror] ${e.stack || e.message}`);
    });
    page.on('dialog', (d) => d.accept());
    if (process.env.E2E_VERBOSE) page.on('console', (m) => console.log(`[${name}] ${m.text()}`));
  }

  async step(name, fn) {
    const t0 = Date.now();
    try {
      await fn();
      const errors = this.pageErrors.splice(0).join('; ');
      if (errors) throw new Error(`uncaught page error: ${errors}`);
      this.passed++;
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      this.failed++;
      const errors = this.pageErrors.splice(0).join('; ');
      console.log(`FAIL ${name}: ${e.stack ?? e}${errors ? `\n     uncaught page error: ${errors}` : ''}`);
      throw e;
    }
  }
}

/** The node, started on port 0 with its own data folder; `addr` is "host:port". */
export async function startNode(env = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-e2e-'));
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: cargo build -p atrium-node`);
  const proc = spawn(BIN, ['--bind', '127.0.0.1:0', '--data', dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ATRIUM_LOG: process.env.ATRIUM_LOG ?? 'warn', ...env } });
  const addr = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the node did not start in 30 s')), 30_000);
    proc.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on http:\/\/([0-9.]+:\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.stderr.on('data', (d) => { if (process.env.E2E_VERBOSE) process.stderr.write(d); });
    proc.on('exit', (code) => reject(new Error(`the node exited with ${code}`)));
  });
  const node = {
    addr,
    /** An HTTP call to the node; throws on a non-2xx answer unless `raw`. */
    async api(method, p, { token, key, body, raw = false } = {}) {
      const headers = { 'Content-Type': 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      if (key) headers['X-Atrium-Key'] = key;
      const r = await fetch(`http://${addr}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
      const text = await r.text();
      if (raw) return { status: r.status, body: text ? JSON.parse(text) : null };
      if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
      return text ? JSON.parse(text) : null;
    },
    stop() {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return node;
}

/** A front server for one window: the page (from web/ or the node) and a proxy to the node. */
export async function front(node) {
  const server = await startServer({ node: () => node.addr, pageFromNode: PAGE_FROM_NODE });
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}
