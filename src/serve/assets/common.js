// agentlog serve: helpers shared by every page. Every piece of transcript text reaches the page
// as a DOM text node (textContent, createTextNode): never as HTML.
'use strict';

const AL = {
  // An element: attrs set with setAttribute (href only to this origin's paths), children
  // appended (strings as text nodes).
  el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      // Only this origin's paths: `//host` and `/\\host` would leave it.
      if (name === 'href' && !/^\/(?![\/\\])/.test(String(value))) continue;
      if (name.startsWith('on')) continue;
      node.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  },

  // A JSON answer of the API; an error answer throws its message.
  async api(path) {
    const response = await fetch(path, { credentials: 'same-origin' });
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      throw new Error(`${response.status} ${response.statusText}`);
    }
    if (!response.ok) throw new Error(body && body.message ? body.message : response.statusText);
    return body;
  },

  params() {
    return new URLSearchParams(location.search);
  },

  // A query string from an object, without empty values.
  query(values) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(values)) {
      if (v !== null && v !== undefined && v !== '') q.set(k, v);
    }
    const s = q.toString();
    return s ? `?${s}` : '';
  },

  num(n) {
    return n === null || n === undefined ? '' : Number(n).toLocaleString('en-US');
  },

  money(dollars) {
    return dollars ? `$${Number(dollars).toFixed(2)}` : '';
  },

  // A timestamp as `YYYY-MM-DD HH:MM` (UTC), or as written if unreadable.
  time(t) {
    if (!t) return '';
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) return String(t);
    return d.toISOString().slice(0, 16).replace('T', ' ');
  },

  // A row's cost in dollars, when the library gives one.
  cost(row) {
    if (!row) return 0;
    if (typeof row.cost_usd === 'number') return row.cost_usd;
    if (typeof row.cost_total === 'number') return row.cost_total;
    if (typeof row.cost === 'number') return row.cost;
    return 0;
  },

  nav(current) {
    const header = document.getElementById('nav');
    const links = [['/', 'Sessions'], ['/search', 'Search'], ['/usage', 'Usage']];
    header.replaceChildren(
      AL.el('strong', { class: 'brand' }, 'agentlog'),
      ...links.map(([href, label]) =>
        AL.el('a', { href, class: href === current ? 'current' : null }, label)),
    );
  },

  main(...children) {
    document.getElementById('main').replaceChildren(...children);
  },

  failure(error) {
    return AL.el('p', { class: 'error', role: 'alert' }, `Error: ${error.message || error}`);
  },

  // A labelled form field.
  field(label, control) {
    return AL.el('label', {}, AL.el('span', {}, label), control);
  },

  input(name, value, type) {
    return AL.el('input', { name, value: value || '', type: type || 'text' });
  },

  select(name, options, value) {
    const select = AL.el('select', { name });
    for (const [v, label] of options) {
      select.append(AL.el('option', { value: v, selected: v === (value || '') ? 'selected' : null }, label));
    }
    return select;
  },
};
