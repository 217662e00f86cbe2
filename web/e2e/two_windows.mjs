// End-to-end: the real atrium-node, the real page, headless Chromium.
//
//   node e2e/two_windows.mjs        (web/run-tests.sh builds and installs what is missing)
//
// Two people open one file: the owner signs up, creates a file and shares an edit link;
// a guest opens it. One drags a rectangle and the other sees it move, and sees the other's
// cursor. The owner goes offline, edits, reloads (edits survive in localStorage), comes
// back, and both converge to the server's document. The node is killed with -9 mid-edit
// and restarted: the page reconnects, resumes, and its edits arrive. A view link is
// read-only. A screenshot of the editor with two people is kept in web/artifacts/.
//
// Each page gets its own little front server (e2e/server.mjs: static web/ plus a proxy to
// the node), so one page's network can be cut without the other's.
// With E2E_PAGE_FROM_NODE=1 the front servers pass everything through, so the page and its
// assets come from the node itself (node/src/http/assets.rs), and the test also checks
// their caching headers.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = path.resolve(WEB, '..');
const BIN = process.env.ATRIUM_NODE_BIN ?? path.join(ROOT, 'target/debug/atrium-node');
const ARTIFACTS = path.join(WEB, 'artifacts');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PAGE_FROM_NODE = ['1', 'true', 'yes'].includes(process.env.E2E_PAGE_FROM_NODE ?? '');

let passed = 0;
let failed = 0;
const results = [];
// Uncaught errors in any page ('pageerror'): each fails the step it happened in (or, if
// it came after the last step, the run), named in the report.
const pageErrors = []; // { text, reported }
function takePageErrors() {
  const fresh = pageErrors.filter((e) => !e.reported);
  for (const e of fresh) e.reported = true;
  return fresh.map((e) => e.text).join('; ');
}
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    const errors = takePageErrors();
    if (errors) throw new Error(`uncaught page error: ${errors}`);
    passed++;
    results.push(`ok   ${name} (${Date.now() - t0} ms)`);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    const errors = takePageErrors(); // a page error may be why the step failed
    const also = errors ? ` (uncaught page error: ${errors})` : '';
    results.push(`FAIL ${name}: ${e.message}${also}`);
    console.log(`FAIL ${name}: ${e.stack ?? e}${errors ? `\n     uncaught page error: ${errors}` : ''}`);
    throw e;
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, timeout = 15_000) {
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

// ---------------------------------------------------------------- the node

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-e2e-'));
let nodeProc = null;
let nodeAddr = null;

function startNode() {
  return new Promise((resolve, reject) => {
    const p = spawn(BIN, ['--bind', '127.0.0.1:0', '--data', dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ATRIUM_LOG: process.env.ATRIUM_LOG ?? 'warn' } });
    nodeProc = p;
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the node did not start in 30 s')), 30_000);
    p.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on http:\/\/([0-9.]+:\d+)/.exec(buf);
      if (m && !nodeAddr) {
        clearTimeout(timer);
        nodeAddr = m[1];
        resolve(m[1]);
      }
    });
    p.stderr.on('data', (d) => { if (process.env.E2E_VERBOSE) process.stderr.write(d); });
    p.on('exit', (code) => { if (!nodeAddr) reject(new Error(`the node exited with ${code}`)); });
  });
}

function killNode() {
  if (nodeProc && nodeProc.exitCode === null) nodeProc.kill('SIGKILL');
  nodeAddr = null;
}

async function nodeApi(method, p, { token, key, body } = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (key) headers['X-Atrium-Key'] = key;
  const r = await fetch(`http://${nodeAddr}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// ---------------------------------------------------------------- front servers with a network switch

async function front() {
  const f = { offline: false, sockets: new Set() };
  // Cut: the API and the socket are unreachable; the page itself still loads (as from a
  // browser's cache), so an offline reload can be tested.
  const isPage = (url) => url === '/' || url.startsWith('/?') || url.startsWith('/assets/');
  const dead = '127.0.0.1:1';
  f.server = await startServer({ node: (url) => (f.offline && !isPage(url) ? dead : nodeAddr ?? dead), pageFromNode: PAGE_FROM_NODE });
  f.server.on('upgrade', (_req, sock) => { f.sockets.add(sock); sock.on('close', () => f.sockets.delete(sock)); });
  f.base = `http://127.0.0.1:${f.server.address().port}`;
  f.cut = () => {
    f.offline = true;
    for (const s of f.sockets) s.destroy();
  };
  f.restore = () => { f.offline = false; };
  return f;
}

// ---------------------------------------------------------------- page helpers

const rectOf = (page, id) => page.evaluate((id) => {
  const el = document.querySelector(`[data-shape="${id}"]`);
  return el ? { x: +el.getAttribute('x'), y: +el.getAttribute('y'), w: +el.getAttribute('width'), h: +el.getAttribute('height'), fill: el.getAttribute('fill') } : null;
}, id);
const viewOf = (page) => page.evaluate(() => window.atrium && { version: window.atrium.conn.doc.version, view: window.atrium.conn.doc.view, waiting: window.atrium.conn.outbox.waiting, state: window.atrium.conn.state });
const stateOf = (page) => page.evaluate(() => window.atrium?.conn.state);

async function dragBy(page, selector, dx, dy, steps = 20) {
  const box = await page.locator(selector).boundingBox();
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  for (let i = 1; i <= steps; i++) {
    await page.mouse.move(x + (dx * i) / steps, y + (dy * i) / steps);
    await sleep(16);
  }
  await page.mouse.up();
}

function canonical(doc) {
  return JSON.stringify(Object.keys(doc).sort().map((k) => [k, Object.keys(doc[k]).sort().map((p) => [p, doc[k][p]])]));
}

// ---------------------------------------------------------------- the test

let browser;
const fronts = [];
async function main() {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: cargo build -p atrium-node`);
  await startNode();
  const fa = await front();
  const fb = await front();
  const fc = await front();
  fronts.push(fa, fb, fc);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  const ctxA = await browser.newContext({ viewport: { width: 1200, height: 760 } });
  const ctxB = await browser.newContext({ viewport: { width: 1200, height: 760 } });
  const ctxC = await browser.newContext({ viewport: { width: 1200, height: 760 } });
  const A = await ctxA.newPage();
  const B = await ctxB.newPage();
  const C = await ctxC.newPage();
  for (const [n, p] of [['A', A], ['B', B], ['C', C]]) {
    p.on('pageerror', (e) => {
      pageErrors.push({ text: `[${n}] ${e.name || 'Error'}: ${e.message}`, reported: false });
      console.log(`[${n} pageerror] ${e.stack || e.message}`);
    });
    p.on('dialog', (d) => d.accept());
    if (process.env.E2E_VERBOSE) p.on('console', (m) => console.log(`[${n}] ${m.text()}`));
  }

  const email = `ann-${Date.now()}@example.com`;
  let token;
  let fileId;
  let editLink;
  let viewLink;

  if (PAGE_FROM_NODE) {
    await step('the node serves the page (no-cache, ETag, 304) and hashed assets (immutable)', async () => {
      const page = await fetch(`http://${nodeAddr}/`);
      const html = await page.text();
      assert(page.status === 200 && page.headers.get('cache-control') === 'no-cache', `page: ${page.status} ${page.headers.get('cache-control')}`);
      const etag = page.headers.get('etag');
      assert(etag, 'the page has an ETag');
      const again = await fetch(`http://${nodeAddr}/`, { headers: { 'If-None-Match': etag } });
      assert(again.status === 304, `revalidation: ${again.status}`);
      const m = /"\/assets\/([0-9a-f]{16})\/src\/app\.js"/.exec(html);
      assert(m, 'the page points at hashed asset URLs');
      assert(html.includes(`"@atrium/client": "/assets/${m[1]}/client/index.js"`), 'the import map points at the client package of this build');
      const app = await fetch(`http://${nodeAddr}/assets/${m[1]}/client/connection.js`);
      assert(app.status === 200 && app.headers.get('cache-control') === 'public, max-age=31536000, immutable', `asset: ${app.status} ${app.headers.get('cache-control')}`);
      assert(/javascript/.test(app.headers.get('content-type')), 'served as JavaScript');
      const plain = await fetch(`http://${nodeAddr}/assets/client/connection.js`);
      assert(plain.status === 200 && plain.headers.get('cache-control') === 'no-cache', 'unhashed URLs are revalidated');
      const missing = await fetch(`http://${nodeAddr}/assets/${m[1]}/../../Cargo.toml`);
      assert(missing.status === 404 || missing.status === 400, `no escaping: ${missing.status}`);
    });
  }

  await step('sign up and see an empty file list', async () => {
    await A.goto(fa.base + '/');
    await A.click('[data-testid=tab-signup]');
    await A.fill('input[name=name]', 'Ann');
    await A.fill('input[name=email]', email);
    await A.fill('input[name=password]', 'correct horse battery');
    await A.click('button[type=submit]');
    await A.waitForSelector('[data-testid=file-list]');
    await A.waitForSelector('text=No files yet.');
    token = await A.evaluate(() => JSON.parse(localStorage.getItem('atrium:session')).token);
  });

  await step('create, rename, share a file with link edit, rotate its keys', async () => {
    await A.fill('[data-testid=new-file-name]', 'Poster');
    await A.click('[data-testid=create-file]');
    await A.waitForSelector('[data-file-id]');
    fileId = await A.getAttribute('[data-file-id]', 'data-file-id');
    await A.click('text=Rename');
    await A.fill('[data-testid=rename-input]', 'Spring poster');
    await A.click('[data-testid=rename-save]');
    await A.waitForSelector('text=Spring poster');
    await A.click('[data-testid=share]');
    await A.waitForSelector('[data-testid=link-setting]');
    await A.selectOption('[data-testid=link-setting]', 'edit');
    await until('link edit saved', async () => (await nodeApi('GET', `/api/files/${fileId}`, { token })).link === 'edit');
    const oldEdit = await A.inputValue('[data-testid=edit-link]');
    await A.click('[data-testid=rotate-keys]');
    editLink = await until('new links', async () => {
      const v = await A.inputValue('[data-testid=edit-link]');
      return v !== oldEdit && v;
    });
    viewLink = await A.inputValue('[data-testid=view-link]');
    const oldKey = decodeURIComponent(oldEdit.split('#key=')[1]);
    const stale = await fetch(`http://${nodeAddr}/api/files/${fileId}`, { headers: { 'X-Atrium-Key': oldKey } });
    assert(stale.status === 401, `the rotated-out key no longer works (${stale.status})`);
    assert(editLink.includes(`?file=${fileId}#key=`), `edit link ${editLink}`);
    assert(!editLink.split('#')[0].includes('key'), 'the key is only in the fragment');
    const f = await nodeApi('GET', `/api/files/${fileId}`, { token });
    assert(f.name === 'Spring poster', 'renamed');
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await A.screenshot({ path: path.join(ARTIFACTS, 'files-and-sharing.png') });
  });

  const onFront = (link, f) => f.base + link.slice(link.indexOf('/?'));

  await step('owner opens the file; a guest opens the edit link', async () => {
    await A.click('[data-testid=file-name]');
    await until('A online', async () => (await stateOf(A)) === 'online');
    await B.goto(onFront(editLink, fb));
    await B.fill('[data-testid=guest-name]', 'Bob');
    await B.click('[data-testid=join]');
    await until('B online', async () => (await stateOf(B)) === 'online');
    await until('A lists two people', async () => (await A.locator('[data-testid=people] .person').count()) === 2);
    await until('B lists two people', async () => (await B.locator('[data-testid=people] .person').count()) === 2);
    const text = await B.textContent('[data-testid=people]');
    assert(text.includes('Ann') && text.includes('Bob (you)') && text.includes('editor'), `people: ${text}`);
    assert(await B.isHidden('[data-testid=readonly-banner]'), 'the guest with an edit link can edit');
  });

  let rect;
  await step('A adds a rectangle; B sees it', async () => {
    await A.click('[data-testid=add-rect]');
    rect = await until('a shape on A', () => A.getAttribute('[data-shape]', 'data-shape'));
    await until('the shape on B', () => rectOf(B, rect));
  });

  await step('A drags it; B sees it move to the same place', async () => {
    const before = await rectOf(A, rect);
    await dragBy(A, `[data-shape="${rect}"]`, 150, 90);
    const after = await rectOf(A, rect);
    assert(Math.abs(after.x - before.x - 150) <= 2 && Math.abs(after.y - before.y - 90) <= 2, `moved on A: ${JSON.stringify({ before, after })}`);
    await until('B sees the move', async () => {
      const b = await rectOf(B, rect);
      return b.x === after.x && b.y === after.y;
    });
  });

  await step('A resizes and recolours; B sees both', async () => {
    await A.click(`[data-shape="${rect}"]`);
    await dragBy(A, '[data-testid=resize-handle]', 40, 30, 8);
    await A.evaluate(() => {
      const c = document.querySelector('[data-testid=fill]');
      c.value = '#e8590c';
      c.dispatchEvent(new Event('input', { bubbles: true }));
    });
    const a = await rectOf(A, rect);
    assert(a.fill === '#e8590c' && a.w >= 155, `A: ${JSON.stringify(a)}`);
    await until('B sees size and colour', async () => {
      const b = await rectOf(B, rect);
      return b.w === a.w && b.h === a.h && b.fill === '#e8590c';
    });
  });

  await step("A sees B's cursor, named, gliding to where B points", async () => {
    const box = await B.locator('[data-testid=canvas]').boundingBox();
    await B.mouse.move(box.x + 300, box.y + 200);
    for (let i = 1; i <= 10; i++) {
      await B.mouse.move(box.x + 300 + i * 10, box.y + 200 + i * 5);
      await sleep(30);
    }
    const bobId = await B.evaluate(() => window.atrium.conn.you);
    const target = await B.evaluate(() => window.atrium.conn.presenceOut.state.cursor);
    await until("B's cursor on A at B's position", async () => {
      const c = await A.evaluate((id) => {
        const el = document.querySelector(`[data-cursor="${id}"]`);
        return el && el.style.display !== 'none' ? { x: +el.dataset.x, y: +el.dataset.y, label: el.textContent } : null;
      }, bobId);
      return c && Math.abs(c.x - target[0]) <= 1 && Math.abs(c.y - target[1]) <= 1 && c.label === 'Bob' && c;
    });
    // B selects the rectangle: A draws B's selection
    await B.click(`[data-shape="${rect}"]`);
    await until("A sees B's selection", async () => (await A.evaluate((id) => window.atrium.ui.peers.get(id)?.sel, bobId))?.includes(rect));
  });

  await step('pages: A adds a page and a shape on it; B switches to it', async () => {
    await A.click('[data-testid=add-page]');
    await until('B lists two pages', async () => (await B.locator('[data-testid=pages] button').count()) === 2);
    await A.click('[data-testid=add-rect]');
    const page2 = await A.evaluate(() => window.atrium.ui.page);
    const onPage2 = await until('a shape on page 2', async () => A.evaluate(() => Object.keys(window.atrium.conn.doc.view).find((k) => window.atrium.conn.doc.view[k].page === window.atrium.ui.page)));
    await B.click(`[data-page="${page2}"]`);
    await until('B shows page 2 shape', () => rectOf(B, onPage2));
    assert(!(await rectOf(B, rect)), 'page 1 shapes are not drawn on page 2');
    await B.click('[data-testid=pages] button >> nth=0');
    await A.click('[data-testid=pages] button >> nth=0');
  });

  await step('screenshot of the editor with two people', async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await B.click(`[data-shape="${rect}"]`);
    const box = await B.locator('[data-testid=canvas]').boundingBox();
    await B.mouse.move(box.x + 500, box.y + 300);
    await sleep(300);
    await A.screenshot({ path: path.join(ARTIFACTS, 'editor-two-people.png') });
  });

  await step('A goes offline, keeps editing, reloads, comes back: both converge', async () => {
    fa.cut();
    await until('A offline', async () => ['offline', 'connecting'].includes(await stateOf(A)));
    const before = await rectOf(A, rect);
    await dragBy(A, `[data-shape="${rect}"]`, -60, 40);
    await A.click('[data-testid=add-rect]');
    // meanwhile B recolours the same rectangle and moves nothing
    await B.click(`[data-shape="${rect}"]`);
    await B.evaluate(() => {
      const c = document.querySelector('[data-testid=fill]');
      c.value = '#2f9e44';
      c.dispatchEvent(new Event('input', { bubbles: true }));
    });
    const offlineA = await viewOf(A);
    assert(offlineA.waiting > 0, 'edits wait in the outbox');
    const movedA = offlineA.view[rect];
    assert(movedA.x === before.x - 60 && movedA.y === before.y + 40, 'the offline drag shows at once');
    // reload while offline: the queue and the document come back from localStorage
    await A.reload();
    await until('A editor back', async () => (await viewOf(A))?.view?.[rect]);
    const reloaded = await viewOf(A);
    assert(reloaded.waiting === offlineA.waiting, `the queue survived the reload (${reloaded.waiting} vs ${offlineA.waiting})`);
    assert(reloaded.view[rect].x === movedA.x, 'the offline move survived the reload');
    assert(Object.keys(reloaded.view).length === Object.keys(offlineA.view).length, 'the offline rectangle survived the reload');
    fa.restore();
    await A.evaluate(() => window.atrium.conn.retry()); // as the browser's 'online' event does
    await until('A online with nothing waiting', async () => {
      const v = await viewOf(A);
      return v.state === 'online' && v.waiting === 0;
    }, 30_000);
    const server = await nodeApi('GET', `/api/files/${fileId}/doc`, { token });
    await until('A, B and the server agree', async () => {
      const a = await viewOf(A);
      const b = await viewOf(B);
      return a.version === server.version && b.version === server.version && canonical(a.view) === canonical(server.doc) && canonical(b.view) === canonical(server.doc);
    });
    const r = server.doc[rect];
    assert(r.x === movedA.x && r.y === movedA.y && r.fill === '#2f9e44', `merged: A's move and B's colour (${JSON.stringify(r)})`);
  });

  await step('the node is killed with -9 mid-edit and restarted: A resumes and its edits arrive', async () => {
    const moved = dragBy(A, `[data-shape="${rect}"]`, 30, 30, 30);
    await sleep(150);
    killNode();
    await moved;
    await A.click('[data-testid=add-rect]');
    const mine = await viewOf(A);
    assert(mine.waiting > 0, 'edits wait while the node is down');
    await sleep(500);
    await startNode(); // same data folder, a new port (the front servers follow it)
    await until('A and B back online, nothing waiting', async () => {
      const a = await viewOf(A);
      const b = await viewOf(B);
      return a.state === 'online' && a.waiting === 0 && b.state === 'online';
    }, 45_000);
    const server = await nodeApi('GET', `/api/files/${fileId}/doc`, { token });
    await until('everyone agrees after the restart', async () => {
      const a = await viewOf(A);
      const b = await viewOf(B);
      return canonical(a.view) === canonical(server.doc) && canonical(b.view) === canonical(server.doc) && a.version === server.version;
    });
    assert(canonical(server.doc) === canonical(mine.view), 'every edit made across the crash reached the server');
  });

  await step('a view link is read-only, with the reason shown', async () => {
    await C.goto(onFront(viewLink, fc));
    await C.fill('[data-testid=guest-name]', 'Cleo');
    await C.click('[data-testid=join]');
    await until('C online', async () => (await stateOf(C)) === 'online');
    await C.waitForSelector('[data-testid=readonly-banner]:not([hidden])');
    const text = await C.textContent('[data-testid=readonly-banner]');
    assert(/view/i.test(text), `banner: ${text}`);
    assert(await C.isDisabled('[data-testid=add-rect]'), 'no adding');
    const before = await rectOf(C, rect);
    await dragBy(C, `[data-shape="${rect}"]`, 100, 100);
    await sleep(500);
    const after = await rectOf(C, rect);
    assert(after.x === before.x && after.y === before.y, 'the viewer moved nothing');
    const server = await nodeApi('GET', `/api/files/${fileId}/doc`, { token });
    assert(server.doc[rect].x === before.x, 'nothing changed on the server');
    const people = await A.textContent('[data-testid=people]');
    assert(people.includes('Cleo') && people.includes('viewer'), `A sees the viewer: ${people}`);
  });

  await step('link none closes the guests; deleting the file closes the owner', async () => {
    await nodeApi('PATCH', `/api/files/${fileId}`, { token, body: { link: 'none' } });
    await until('B stopped (no access)', async () => (await stateOf(B)) === 'stopped');
    await until('C stopped (no access)', async () => (await stateOf(C)) === 'stopped');
    await nodeApi('DELETE', `/api/files/${fileId}`, { token });
    await until('A stopped (deleted)', async () => (await stateOf(A)) === 'stopped');
    const status = await A.textContent('[data-testid=status]');
    assert(/deleted/.test(status), `status: ${status}`);
  });
}

let code = 0;
try {
  await main();
} catch {
  code = 1;
} finally {
  await browser?.close().catch(() => {});
  for (const f of fronts) f.server.close();
  killNode();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
const lateErrors = takePageErrors(); // after the last step, or before main() gave up
if (lateErrors) {
  failed++;
  code = 1;
  results.push(`FAIL no uncaught page errors: ${lateErrors}`);
  console.log(`FAIL no uncaught page errors: ${lateErrors}`);
}
console.log(`\ne2e: ${results.length} steps`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(code);
