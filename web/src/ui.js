// Tiny DOM helpers for the page (no framework).

/** h('div', {class: 'x', onclick: fn}, 'text', child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

export function s(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

export function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    const str = String(v);
    if (el.getAttribute(k) !== str) el.setAttribute(k, str);
  }
}

/** A stable colour for a person id. */
export function colourOf(id) {
  let hsh = 2166136261;
  for (let i = 0; i < id.length; i++) hsh = Math.imul(hsh ^ id.charCodeAt(i), 16777619);
  return `hsl(${(hsh >>> 0) % 360} 70% 45%)`;
}
