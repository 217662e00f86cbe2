// The hooks in headless Chromium against a real atrium-node: the test page (page.js,
// bundled with esbuild) opens a file with three shapes; moving one shape, from another
// client or from the page itself, re-renders the component that reads that shape and no
// other; the page shows another person's cursor.
//
//   node test/render.test.mjs      (ATRIUM_NODE_BIN, CHROMIUM as for web/run-tests.sh)

import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { createClient, MemoryStorage } from '@atrium/client';
import { TestNode, until } from '../../js/test/integration/node.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

test('moving one shape re-renders only the components that read it', async (t) => {
  const node = new TestNode();
  await node.start();
  t.after(() => node.stop());
  const signup = await node.api('POST', '/api/signup', { body: { email: `r-${Date.now()}@example.com`, password: 'correct horse battery', name: 'Ray' } });
  const rect = (x) => ({ type: 'rect', page: 'page1', x, y: 40, w: 60, h: 40, fill: '#4dabf7' });
  const file = await node.api('POST', '/api/files', { token: signup.token, body: { name: 'Hooks', doc: { page1: { type: 'page', name: 'One' }, r1: rect(10), r2: rect(100), r3: rect(200) } } });

  const built = await esbuild.build({
    entryPoints: [path.join(HERE, 'page.js')],
    bundle: true,
    format: 'esm',
    write: false,
    define: { 'process.env.NODE_ENV': '"development"' },
    alias: { '@atrium/react': path.join(HERE, '../src/index.js') },
  });
  const bundle = built.outputFiles[0].text;
  const server = http.createServer((req, res) => {
    if (req.url === '/bundle.js') return res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(bundle);
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><div id="root"></div><script type="module" src="/bundle.js"></script>');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript((cfg) => { window.ATRIUM_TEST = cfg; }, { baseUrl: node.baseUrl, token: signup.token, fileId: file.id });
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForSelector('[data-testid=status][data-state=online]', { timeout: 20_000 });
  await page.waitForSelector('[data-shape=r3]');
  assert.equal(await page.textContent('[data-testid=page-name]'), 'One');

  const renders = () => page.evaluate(() => ({ ...window.renders }));
  const settle = async () => {
    // Quiet for 300 ms: no render anywhere.
    let last = JSON.stringify(await renders());
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      const now = JSON.stringify(await renders());
      if (now === last) return JSON.parse(now);
      last = now;
    }
  };

  // Another person moves r2.
  const other = createClient({ baseUrl: node.baseUrl, auth: { token: signup.token }, storage: new MemoryStorage(), sessionStorage: null, name: 'Other' });
  const room = other.open(file.id);
  t.after(() => room.close());
  await room.ready;
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=people] li').length === 2);
  const before = await settle();
  room.patch([{ op: 'set', id: 'r2', props: { x: 150 } }]);
  await page.waitForSelector('[data-shape=r2][data-x="150"]');
  const after = await settle();
  assert.ok(after.r2 > before.r2, 'r2 re-rendered');
  for (const k of ['r1', 'r3', 'list', 'page-name', 'people', 'mover']) assert.equal(after[k], before[k], `${k} did not re-render when r2 moved`);

  // This page moves r1 (usePatch): optimistic at once, then acked.
  await page.click('[data-testid=move-r1]');
  await page.waitForSelector('[data-shape=r1][data-x="300"]');
  await page.waitForSelector('[data-testid=status][data-waiting="0"]');
  const after2 = await settle();
  assert.ok(after2.r1 > after.r1, 'r1 re-rendered');
  for (const k of ['r2', 'r3', 'list', 'page-name', 'people']) assert.equal(after2[k], after[k], `${k} did not re-render when r1 moved`);
  await until('the other client sees r1 moved', () => room.doc.r1?.x === 300);

  // A new shape changes the list (and renders one new component), not the others.
  room.patch([{ op: 'put', id: 'r4', props: rect(400) }]);
  await page.waitForSelector('[data-shape=r4]');
  const after3 = await settle();
  assert.ok(after3.list > after2.list, 'the list re-rendered for a new shape');
  for (const k of ['r1', 'r2', 'r3', 'page-name']) assert.equal(after3[k], after2[k], `${k} did not re-render for a new shape`);

  // The other person's cursor shows on this page (both on page1), and glides to its place.
  await page.click('[data-testid=page]');
  room.setPresence({ page: 'page1', cursor: [120, 80] });
  await page.waitForSelector('[data-cursor=Ray][data-x="120"][data-y="80"]', { timeout: 10_000 });
  assert.deepEqual(errors, []);
});
