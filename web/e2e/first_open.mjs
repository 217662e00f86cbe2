// End-to-end: a file made through the API with its own page opens on that page, as a new
// person opening it in Chromium sees it. (It used to get a second, empty "Page 1" on its
// first open, shown instead of its own: the page was made before the welcome's document
// was applied.)
//
//   node e2e/first_open.mjs        (web/run-tests.sh e2e runs it; E2E_PAGE_FROM_NODE=1 as there)

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = process.env.ATRIUM_NODE_BIN ?? path.join(WEB, '../target/debug/atrium-node');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PAGE_FROM_NODE = ['1', 'true', 'yes'].includes(process.env.E2E_PAGE_FROM_NODE ?? '');

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-e2e-first-'));
const node = spawn(BIN, ['--bind', '127.0.0.1:0', '--data', dataDir], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ATRIUM_LOG: 'warn' } });
let browser;
let front;
try {
  const addr = await new Promise((resolve, reject) => {
    let buf = '';
    node.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on http:\/\/([0-9.]+:\d+)/.exec(buf);
      if (m) resolve(m[1]);
    });
    node.on('exit', (code) => reject(new Error(`the node exited with ${code}`)));
  });
  const api = async (method, p, { token, body } = {}) => {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const r = await fetch(`http://${addr}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const session = await api('POST', '/api/signup', { body: { email: `first-${Date.now()}@example.com`, password: 'correct horse battery', name: 'Fay' } });
  const file = await api('POST', '/api/files', {
    token: session.token,
    body: {
      name: 'Made by an app',
      doc: {
        page1: { type: 'page', name: 'Cover', order: 0 },
        r1: { type: 'rect', page: 'page1', x: 40, y: 60, w: 120, h: 80, fill: '#e8590c', z: 1 },
        r2: { type: 'rect', page: 'page1', x: 220, y: 60, w: 120, h: 80, fill: '#4dabf7', z: 2 },
      },
    },
  });
  front = await startServer({ node: () => addr, pageFromNode: PAGE_FROM_NODE });
  const base = `http://127.0.0.1:${front.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 760 } })).newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Signed in, as after the sign-in form, and never in this file before.
  await page.addInitScript((s) => localStorage.setItem('atrium:session', JSON.stringify(s)), { token: session.token, account: session.account });
  await page.goto(`${base}/?file=${file.id}`);
  await page.waitForSelector('[data-testid=status][data-state=online]', { timeout: 20_000 });
  await page.waitForSelector('[data-shape=r1]', { timeout: 10_000 });
  await page.waitForSelector('[data-shape=r2]');
  const pages = await page.$$eval('[data-testid=pages] [data-page]', (els) => els.map((e) => [e.dataset.page, e.textContent, e.className]));
  assert(JSON.stringify(pages) === JSON.stringify([['page1', 'Cover', 'on']]), `one page, its own, shown: ${JSON.stringify(pages)}`);
  await new Promise((r) => setTimeout(r, 500));
  const doc = await api('GET', `/api/files/${file.id}/doc`, { token: session.token });
  assert(!('page-1' in doc.doc) && doc.version === 0, `the file was not changed by opening it: ${JSON.stringify(doc)}`);
  assert(errors.length === 0, `page errors: ${errors.join('; ')}`);
  console.log('ok   a file made through the API with its own page opens on it, shapes shown, nothing added');
} catch (e) {
  console.log(`FAIL first open: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  front?.close();
  node.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
}
