// End-to-end: version history in the real page, on the real atrium-node, in headless
// Chromium (web/run-tests.sh runs it after two_windows.mjs).
//
// Ann (the owner) and Bob (a guest with the edit link) edit a file; Ann names a version,
// both edit more, Ann names another. Both history panels list the two, with who edited,
// Bob's without a reload (the socket's `version` messages). Ann previews the first (the
// canvas shows it, editing is off), compares it (the changed shapes are marked, the props
// listed), and restores it: both windows hold the restored document without a reload.
// Cleo, with the view link, is offered no history until the owner allows viewers to see it,
// and then no restore; a refusal by the server is shown as such.
//
// Assertions are on the DOM and on the documents the windows hold, never on timing.

import fs from 'node:fs';
import path from 'node:path';
import { assert, canonical, front, launch, startNode, Steps, until, WEB } from './harness.mjs';

const ARTIFACTS = path.join(WEB, 'artifacts');
const steps = new Steps();
const step = (name, fn) => steps.step(name, fn);

const viewOf = (page) => page.evaluate(() => window.atrium && { version: window.atrium.conn.doc.version, view: window.atrium.conn.doc.view, waiting: window.atrium.conn.outbox.waiting, state: window.atrium.conn.state });
const shapeOf = (page, id) => page.evaluate((id) => {
  const el = document.querySelector(`[data-shape="${id}"]`);
  return el ? { x: +el.getAttribute('x'), y: +el.getAttribute('y'), fill: el.getAttribute('fill') } : null;
}, id);
const rowOf = (page, title) => page.locator('[data-version-id]', { has: page.locator('[data-testid=version-label]', { hasText: new RegExp(`^${title}$`) }) });
/** The panel's rows as the page shows them: [{id, kind, label, editors, day}]. */
const rowsOf = (page) => page.evaluate(() => [...document.querySelectorAll('[data-version-id]')].map((el) => ({
  id: +el.dataset.versionId,
  kind: el.dataset.kind,
  label: el.querySelector('[data-testid=version-label]')?.textContent,
  editors: el.querySelector('[data-testid=version-editors]')?.textContent,
  day: el.closest('[data-day]')?.querySelector('h4')?.textContent,
})));

/** Adds a rectangle on `page`; its id once every window listed holds it. */
async function addRect(page, ...others) {
  const before = new Set(Object.keys((await viewOf(page)).view));
  await page.click('[data-testid=add-rect]');
  const id = await until('a new shape', async () => Object.keys((await viewOf(page)).view).find((k) => !before.has(k) && (k.startsWith('r-'))));
  for (const o of others) await until(`${id} on the other window`, () => shapeOf(o, id));
  return id;
}

/** Sets props of a shape through the page's own connection (as a drag or the fill picker does). */
const setProps = (page, id, props) => page.evaluate(([id, props]) => window.atrium.conn.edit([{ op: 'set', id, props }]), [id, props]);

async function converged(node, token, fileId, ...pages) {
  const server = await node.api('GET', `/api/files/${fileId}/doc`, { token });
  for (const p of pages) {
    const v = await viewOf(p);
    if (!(v.waiting === 0 && v.version === server.version && canonical(v.view) === canonical(server.doc))) return null;
  }
  return server;
}

let browser;
let node;
const fronts = [];
async function main() {
  node = await startNode();
  browser = await launch();
  const windows = {};
  for (const name of ['A', 'B', 'C']) {
    const f = await front(node);
    fronts.push(f);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    steps.watch(name, page);
    windows[name] = { page, base: f.base };
  }
  const { A, B, C } = Object.fromEntries(Object.entries(windows).map(([k, w]) => [k, w.page]));

  let token;
  let fileId;
  let keys;
  await step('Ann opens a file shared with an edit link; Bob joins as a guest', async () => {
    const email = `ann-h-${Date.now()}@example.com`;
    const s = await node.api('POST', '/api/signup', { body: { email, password: 'correct horse battery', name: 'Ann' } });
    token = s.token;
    const f = await node.api('POST', '/api/files', { token, body: { name: 'History poster' } });
    fileId = f.id;
    keys = await node.api('PATCH', `/api/files/${fileId}`, { token, body: { link: 'edit' } });
    await A.goto(`${windows.A.base}/`);
    await A.evaluate((s) => localStorage.setItem('atrium:session', JSON.stringify(s)), { token: s.token, account: s.account });
    await A.goto(`${windows.A.base}/?file=${fileId}`);
    await until('A online', async () => (await viewOf(A))?.state === 'online');
    await B.goto(`${windows.B.base}/?file=${fileId}#key=${encodeURIComponent(keys.edit_key)}`);
    await B.fill('[data-testid=guest-name]', 'Bob');
    await B.click('[data-testid=join]');
    await until('B online', async () => (await viewOf(B))?.state === 'online');
    for (const p of [A, B]) await p.evaluate(() => { window.__sameDocument = true; }); // gone after a reload
  });

  let r1;
  let r2;
  let r3;
  let first; // the document named "First draft"
  await step('both edit; Ann names the current state; Bob sees it without a reload', async () => {
    await B.click('[data-testid=history-toggle]');
    await B.waitForSelector('[data-testid=history-panel]:not([hidden])');
    r1 = await addRect(A, B);
    r2 = await addRect(B, A);
    await setProps(A, r1, { x: 100, y: 100, fill: '#4dabf7' });
    await setProps(B, r2, { x: 400, y: 120, fill: '#e8590c' });
    first = await until('A and B agree', () => converged(node, token, fileId, A, B));
    assert(await A.isHidden('[data-testid=history-panel]'), 'the panel is closed until asked for');
    await A.click('[data-testid=history-toggle]');
    await A.fill('[data-testid=history-title]', 'First draft');
    await A.fill('[data-testid=history-description]', 'Two boxes');
    await A.click('[data-testid=history-save]');
    await until('A lists First draft', () => rowOf(A, 'First draft').count());
    await until('B lists First draft (a version message)', () => rowOf(B, 'First draft').count());
    assert(await A.textContent('[data-testid=history-notice]') === 'Saved “First draft”.', 'A is told it was saved');
  });

  await step('more edits, a second name: both panels list both versions, with who edited, under Today', async () => {
    await setProps(A, r1, { x: 220, y: 160 }); // moved
    r3 = await addRect(B, A); // added
    await B.evaluate((id) => window.atrium.conn.edit([{ op: 'delete', id }]), r2); // removed
    await until('A and B agree', () => converged(node, token, fileId, A, B));
    await B.fill('[data-testid=history-title]', 'Second draft');
    await B.click('[data-testid=history-save]');
    for (const [name, p] of [['A', A], ['B', B]]) {
      const rows = await until(`${name} lists both`, async () => {
        const r = (await rowsOf(p)).filter((x) => x.kind === 'named');
        return r.length === 2 && r;
      });
      assert(rows[0].label === 'Second draft' && rows[1].label === 'First draft', `${name}: newest first: ${JSON.stringify(rows)}`);
      for (const r of rows) {
        assert(/Ann/.test(r.editors) && /Bob/.test(r.editors), `${name}: who edited ${r.label}: ${r.editors}`);
        assert(r.day === 'Today', `${name}: grouped under Today: ${r.day}`);
      }
      assert(await rowOf(p, 'First draft').textContent().then((t) => t.includes('Two boxes')), `${name}: the description shows`);
    }
    // the guest editor may not delete (the owner's); the owner may
    assert(await rowOf(B, 'First draft').locator('[data-testid=version-delete]').count() === 0, 'Bob is not offered delete');
    assert(await rowOf(A, 'First draft').locator('[data-testid=version-delete]').count() === 1, 'Ann is offered delete');
  });

  await step('preview: the canvas shows the first version, editing is off, the file is untouched', async () => {
    const current = await viewOf(A);
    await rowOf(A, 'First draft').locator('[data-testid=version-preview]').click();
    await A.waitForSelector('[data-testid=history-banner][data-mode=preview]');
    assert(/First draft/.test(await A.textContent('[data-testid=history-banner]')), 'the banner names the version');
    await until('the old state drawn', async () => {
      const a = await shapeOf(A, r1);
      return a && a.x === 100 && a.y === 100 && (await shapeOf(A, r2)) && !(await shapeOf(A, r3));
    });
    assert(await A.isDisabled('[data-testid=add-rect]'), 'adding is off');
    assert(await A.isDisabled('[data-testid=delete-shape]'), 'deleting is off');
    const box = await A.locator(`[data-shape="${r1}"]`).boundingBox();
    await A.mouse.move(box.x + 10, box.y + 10);
    await A.mouse.down();
    await A.mouse.move(box.x + 90, box.y + 70, { steps: 8 });
    await A.mouse.up();
    const after = await viewOf(A);
    assert(after.waiting === 0 && canonical(after.view) === canonical(current.view), 'a drag in a preview edits nothing');
    assert((await shapeOf(B, r1)).x === 220, 'Bob still sees the current state');
    await A.screenshot({ path: path.join(ARTIFACTS, 'history-preview.png') });
    await A.click('[data-testid=history-back]');
    await until('the current state drawn again', async () => (await shapeOf(A, r1))?.x === 220 && !(await shapeOf(A, r2)) && (await shapeOf(A, r3)));
    assert(!(await A.isDisabled('[data-testid=add-rect]')), 'editing is back');
  });

  await step('compare: moved, added and removed shapes are marked, with the props that changed', async () => {
    await rowOf(A, 'First draft').locator('[data-testid=version-compare]').click();
    await A.waitForSelector('[data-testid=history-banner][data-mode=compare]');
    const marks = await until('marks on the canvas', async () => {
      const m = await A.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-mark]')].map((el) => [el.dataset.mark, el.dataset.kind])));
      return Object.keys(m).length >= 3 && m;
    });
    assert(marks[r1] === 'changed' && marks[r3] === 'added' && marks[r2] === 'removed', `marks: ${JSON.stringify(marks)}`);
    const changes = await A.$$eval('[data-testid=compare-change]', (els) => els.map((el) => [el.dataset.id, el.dataset.kind, el.textContent]));
    const moved = changes.find(([id]) => id === r1);
    assert(moved && /x/.test(moved[2]) && /y/.test(moved[2]) && !/fill/.test(moved[2]), `the changed props of ${r1}: ${JSON.stringify(changes)}`);
    const styles = await A.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-mark]')].map((el) => [el.dataset.kind, getComputedStyle(el).stroke])));
    assert(new Set(Object.values(styles)).size === 3, `three distinct styles: ${JSON.stringify(styles)}`);
    await A.screenshot({ path: path.join(ARTIFACTS, 'history-compare.png') });
  });

  await step('restore (confirmed): both windows hold the restored document, without a reload', async () => {
    await A.click('[data-testid=history-restore-shown]'); // the confirmation is accepted
    const server = await until('A and B converge on the first version', async () => {
      const s = await converged(node, token, fileId, A, B);
      return s && canonical(s.doc) === canonical(first.doc) && s;
    });
    assert(server.version > first.version, 'a restore is a new version, not a rewind');
    for (const p of [A, B]) assert(await p.evaluate(() => window.__sameDocument === true), 'no reload');
    await until('A back to the current state once the restore is answered', async () => (await A.locator('[data-testid=history-banner]').count()) === 0);
    assert((await shapeOf(B, r1)).x === 100 && (await shapeOf(B, r2)) && !(await shapeOf(B, r3)), "Bob's canvas shows it");
    await until('B lists the restore and is told who restored', async () => {
      const rows = await rowsOf(B);
      const notice = await B.textContent('[data-testid=history-notice]');
      return rows[0]?.kind === 'restore' && /First draft/.test(rows[0].label) && /Ann restored/.test(notice);
    });
    // still editable after: an edit lands on top of the restored document
    await setProps(B, r1, { fill: '#2f9e44' });
    const after = await until('an edit after the restore', async () => {
      const s = await converged(node, token, fileId, A, B);
      return s && s.doc[r1].fill === '#2f9e44' && s;
    });
    assert(after.doc[r1].x === 100, 'on top of the restored state');
  });

  await step('rename and delete a named version: the other window follows live', async () => {
    await rowOf(B, 'Second draft').locator('[data-testid=version-rename]').click();
    await B.fill('[data-testid=version-rename-input]', 'Blue variant');
    await B.click('[data-testid=version-rename-save]');
    await until('A sees the new name', () => rowOf(A, 'Blue variant').count());
    assert(await rowOf(A, 'Second draft').count() === 0, 'the old name is gone');
    await rowOf(A, 'Blue variant').locator('[data-testid=version-delete]').click(); // confirmed
    await until('B no longer lists it', async () => (await rowOf(B, 'Blue variant').count()) === 0 && (await rowOf(A, 'Blue variant').count()) === 0);
    const page = await node.api('GET', `/api/files/${fileId}/versions?limit=200`, { token });
    assert(!page.versions.some((v) => v.title === 'Blue variant'), 'deleted on the server');
    assert(page.versions.some((v) => v.title === 'First draft'), 'the others stay');
  });

  await step('a viewer is offered no history unless allowed, then no restore; a refusal is shown', async () => {
    await C.goto(`${windows.C.base}/?file=${fileId}#key=${encodeURIComponent(keys.view_key)}`);
    await C.fill('[data-testid=guest-name]', 'Cleo');
    await C.click('[data-testid=join]');
    await until('C online as a viewer', async () => (await C.evaluate(() => window.atrium?.conn.role)) === 'viewer');
    assert(await C.isHidden('[data-testid=history-toggle]'), 'no history for viewers by default');
    await node.api('PATCH', `/api/files/${fileId}`, { token, body: { viewers_see_history: true } });
    await C.reload();
    await C.click('[data-testid=join]'); // a guest is asked for a name again (kept, prefilled)
    await until('C online again', async () => (await viewOf(C))?.state === 'online' && (await C.evaluate(() => window.atrium.conn.role)) === 'viewer');
    await C.click('[data-testid=history-toggle]');
    await until('C lists the versions', async () => (await rowsOf(C)).some((r) => r.label === 'First draft'));
    // Older versions come a page at a time.
    const all = (await node.api('GET', `/api/files/${fileId}/versions?limit=200`, { token })).versions;
    assert(all.length >= 2, `versions so far: ${all.length}`);
    await C.evaluate(() => { window.atrium.history.list.pageSize = 1; window.atrium.history.open(); });
    await until('a first page of 1', async () => (await rowsOf(C)).length === 1 && (await C.isVisible('[data-testid=history-more]')));
    for (;;) {
      const shown = (await rowsOf(C)).length;
      if (!(await C.locator('[data-testid=history-more]').count())) break;
      await C.click('[data-testid=history-more]');
      await until('the next page', async () => (await rowsOf(C)).length > shown);
    }
    const rows = await rowsOf(C);
    assert(JSON.stringify(rows.map((r) => r.id)) === JSON.stringify(all.map((v) => v.id)), `every version, newest first: ${JSON.stringify(rows.map((r) => r.id))} vs ${JSON.stringify(all.map((v) => v.id))}`);
    for (const t of ['version-restore', 'version-compare', 'version-rename', 'version-delete']) {
      assert(await C.locator(`[data-testid=${t}]`).count() === 0, `${t} is not offered to a viewer`);
    }
    assert(await C.isHidden('[data-testid=history-title]'), 'naming is not offered to a viewer');
    await rowOf(C, 'First draft').locator('[data-testid=version-preview]').click();
    await C.waitForSelector('[data-testid=history-banner][data-mode=preview]');
    assert(await C.locator('[data-testid=history-restore-shown]').count() === 0, 'no restore in the preview banner');
    // Were it asked anyway (an old page, a role changed meanwhile), the server's 403 is shown.
    const before = await converged(node, token, fileId, A, B);
    await C.evaluate(() => {
      const p = window.atrium.history;
      return p.restore(p.list.versions.find((v) => v.title === 'First draft'));
    });
    const error = await C.textContent('[data-testid=history-error]');
    assert(/^Not allowed: /.test(error), `the refusal is shown: ${error}`);
    const still = await converged(node, token, fileId, A, B);
    assert(still && still.version === before.version, 'nothing changed');
  });
}

let code = 0;
try {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await main();
} catch (e) {
  if (!steps.failed) console.log(`FAIL setup: ${e.stack ?? e}`);
  code = 1;
} finally {
  await browser?.close().catch(() => {});
  for (const f of fronts) f.server.close();
  node?.stop();
}
console.log(`\ne2e history: ${steps.passed} passed, ${steps.failed} failed`);
process.exit(code);
