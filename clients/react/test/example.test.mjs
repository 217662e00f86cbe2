// examples/react-canvas as a person runs it (`npm ci`, `npm start`), in headless Chromium:
// start a canvas, add a rectangle, open the share link in a second browser, see the
// rectangle and the first person's cursor there, drag it and see it move in the first.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../examples/react-canvas');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

test('the example canvas: two people, a rectangle, a cursor, a drag', async (t) => {
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-example-'));
  t.after(() => fs.rmSync(data, { recursive: true, force: true }));
  const app = spawn(process.execPath, ['serve.mjs'], { cwd: EXAMPLE, env: { ...process.env, PORT: '0', ATRIUM_LOG: 'warn', ATRIUM_DATA: data }, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => app.kill());
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    app.stdout.on('data', (d) => {
      buf += d;
      const m = /on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(buf);
      if (m) resolve(m[1]);
    });
    app.on('exit', (code) => reject(new Error(`serve.mjs exited with ${code}`)));
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  t.after(() => browser.close());
  const errors = [];
  const a = await (await browser.newContext({ viewport: { width: 1000, height: 700 } })).newPage();
  a.on('pageerror', (e) => errors.push(e.message));
  await a.goto(url);
  await a.fill('input', 'Ann');
  await a.click('text=New canvas');
  await a.waitForSelector('.status.online', { timeout: 20_000 });
  await a.click('text=+ Rectangle');
  await a.waitForSelector('svg rect');
  await a.waitForFunction(() => !document.querySelector('.status').textContent.includes('waiting'));

  const b = await (await browser.newContext({ viewport: { width: 1000, height: 700 } })).newPage();
  b.on('pageerror', (e) => errors.push(e.message));
  await b.goto(a.url());
  await b.waitForSelector('.status.online', { timeout: 20_000 });
  await b.waitForSelector('svg rect');
  assert.equal(await b.locator('.people span').count(), 2);

  await a.mouse.move(200, 300);
  await a.mouse.move(210, 310);
  await b.waitForSelector('svg text:has-text("Ann")', { timeout: 10_000 });

  const box = await b.locator('svg rect').first().boundingBox();
  const xBefore = Number(await a.locator('svg rect').first().getAttribute('x'));
  await b.mouse.move(box.x + 10, box.y + 10);
  await b.mouse.down();
  for (let i = 1; i <= 10; i++) await b.mouse.move(box.x + 10 + i * 5, box.y + 10);
  await b.mouse.up();
  await a.waitForFunction((x0) => Number(document.querySelector('svg rect').getAttribute('x')) >= x0 + 45, xBefore, { timeout: 10_000 });
  assert.deepEqual(errors, []);
});
