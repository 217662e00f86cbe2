// Looking at the past on the canvas: a preview draws a version's document instead of the
// current one (read-only), a comparison draws the current one with every changed shape
// marked (added, removed, changed in their own styles) and lists the props that changed.
// The editor asks `inspectDoc` what to draw and `drawMarks` for the marks; the banner says
// what is shown and how to get back.

import { labelOf, timeOf } from './history.js';
import { h, s } from './ui.js';

/**
 * What the canvas is showing instead of the live document, or null:
 *   {mode: 'preview', version, doc}
 *   {mode: 'compare', version, before: <the version's doc>, marks: Map id -> {kind, props}}
 */

/** The document the canvas draws: the version's for a preview, else the live one. */
export function inspectDoc(inspect, live) {
  return inspect?.mode === 'preview' ? inspect.doc : live;
}

/** Outlines of added and changed shapes on `page`, and ghosts of removed ones (from `before`). */
export function drawMarks(g, inspect, doc, page, zoom) {
  const nodes = [];
  for (const [id, m] of inspect?.mode === 'compare' ? inspect.marks : []) {
    const n = m.kind === 'removed' ? inspect.before?.[id] : doc[id];
    if (!n || n.type === 'page' || n.page !== page) continue;
    const pad = 4 / zoom;
    nodes.push(s('rect', {
      class: `mark mark-${m.kind}`, 'data-mark': id, 'data-kind': m.kind,
      x: (n.x ?? 0) - pad, y: (n.y ?? 0) - pad, width: Math.max(1, n.w ?? 100) + 2 * pad, height: Math.max(1, n.h ?? 80) + 2 * pad,
      'stroke-width': 3 / zoom, 'pointer-events': 'none',
    }));
  }
  g.replaceChildren(...nodes);
}

const KIND_TEXT = { added: 'added', removed: 'removed', changed: 'changed' };

/** The changes of a comparison as lines: "r-1 changed: x, fill". */
function changeLines(marks) {
  return [...marks].map(([id, m]) => h('li', { class: `change change-${m.kind}`, 'data-testid': 'compare-change', 'data-id': id, 'data-kind': m.kind },
    h('span', { class: 'swatch' }), `${id} ${KIND_TEXT[m.kind]}`, m.props.length ? `: ${m.props.join(', ')}` : ''));
}

/**
 * The banner over the canvas while inspecting: what is shown, and "Back to current" and
 * (for those who may) "Restore this version".
 */
export function inspectBanner(inspect, { canRestore, onBack, onRestore }) {
  const v = inspect.version;
  const when = `${new Date(v.created_at).toLocaleDateString('en-GB', { day: 'numeric', month: 'short' })} ${timeOf(v.created_at)}`;
  const buttons = h('span', { class: 'actions' },
    h('button', { 'data-testid': 'history-back', onclick: onBack }, 'Back to current'),
    canRestore ? h('button', { class: 'primary', 'data-testid': 'history-restore-shown', onclick: onRestore }, 'Restore this version') : null);
  if (inspect.mode === 'preview') {
    return h('div', { class: 'history-banner', 'data-testid': 'history-banner', 'data-mode': 'preview', 'data-version': v.id },
      h('span', {}, 'Previewing ', h('strong', {}, `“${labelOf(v)}”`), ` from ${when}. `, h('span', { class: 'muted' }, 'Editing is off while you look.')), buttons);
  }
  const counts = { added: 0, removed: 0, changed: 0 };
  for (const m of inspect.marks.values()) counts[m.kind]++;
  const total = inspect.marks.size;
  return h('div', { class: 'history-banner', 'data-testid': 'history-banner', 'data-mode': 'compare', 'data-version': v.id },
    h('div', { class: 'row' },
      h('span', {}, 'Comparing ', h('strong', {}, `“${labelOf(v)}”`), ` (${when}) with the current state: `,
        total === 0 ? 'no changes.' : `${counts.added} added, ${counts.removed} removed, ${counts.changed} changed.`),
      buttons),
    total ? h('ul', { class: 'changes', 'data-testid': 'compare-changes' }, changeLines(inspect.marks)) : null);
}
