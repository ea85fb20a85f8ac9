// The sessions page (`/`): every session, filtered, sorted and paged by the server
// (`/api/sessions` with this page's own query parameters).
'use strict';

const FILTERS = ['agent', 'project', 'since', 'until', 'q', 'sort', 'order', 'limit'];

function sessionLink(row) {
  return `/sessions/${encodeURIComponent(row.id)}`;
}

function filterForm(params, page) {
  const agents = [['', 'every agent'], ...page.agents.map((a) => [a, a])];
  const projects = [['', 'every project'], ...page.projects.map((p) => [p, p])];
  const sorts = [['end', 'last active'], ['start', 'started'], ['tokens', 'tokens'],
    ['messages', 'messages'], ['project', 'project']];
  return AL.el('form', { id: 'filters', method: 'get', action: '/' },
    AL.field('Agent', AL.select('agent', agents, params.get('agent'))),
    AL.field('Project', AL.select('project', projects, params.get('project'))),
    AL.field('Since', AL.input('since', params.get('since'), 'date')),
    AL.field('Until', AL.input('until', params.get('until'), 'date')),
    AL.field('Text', AL.input('q', params.get('q'))),
    AL.field('Sort', AL.select('sort', sorts, params.get('sort'))),
    AL.field('Order', AL.select('order', [['desc', 'descending'], ['asc', 'ascending']], params.get('order'))),
    AL.el('button', { type: 'submit' }, 'Apply'));
}

function table(page) {
  const costs = page.sessions.some((r) => AL.cost(r) > 0);
  const head = ['Agent', 'Project', 'Session', 'Start', 'End', 'Messages', 'Tokens'];
  if (costs) head.push('Cost');
  const rows = page.sessions.map((r) => {
    const cells = [
      AL.el('td', {}, r.agent),
      AL.el('td', {}, r.project || ''),
      AL.el('td', { class: 'title' },
        AL.el('a', { href: sessionLink(r), class: 'session-link' }, r.title || r.id),
        r.error ? AL.el('span', { class: 'error' }, ` (${r.error})`) : null),
      AL.el('td', { class: 'nowrap' }, AL.time(r.start)),
      AL.el('td', { class: 'nowrap' }, AL.time(r.end)),
      AL.el('td', { class: 'num' }, AL.num(r.messages)),
      AL.el('td', { class: 'num' }, AL.num(r.total_tokens)),
    ];
    if (costs) cells.push(AL.el('td', { class: 'num' }, AL.money(AL.cost(r))));
    return AL.el('tr', {}, cells);
  });
  return AL.el('table', { id: 'sessions' },
    AL.el('thead', {}, AL.el('tr', {}, head.map((h) => AL.el('th', {}, h)))),
    AL.el('tbody', {}, rows));
}

function pager(params, page) {
  const links = [];
  if (params.get('cursor')) {
    const first = new URLSearchParams(params);
    first.delete('cursor');
    links.push(AL.el('a', { href: `/?${first}`, id: 'first-page' }, 'First page'));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams(params);
    next.set('cursor', page.next_cursor);
    links.push(AL.el('a', { href: `/?${next}`, id: 'next-page' }, 'Next page'));
  }
  return AL.el('nav', { class: 'pager' }, links);
}

async function load() {
  AL.nav('/');
  const params = AL.params();
  const query = {};
  for (const k of [...FILTERS, 'cursor']) query[k] = params.get(k);
  try {
    const page = await AL.api(`/api/sessions${AL.query(query)}`);
    const shown = page.sessions.length;
    AL.main(
      AL.el('h1', {}, 'Sessions'),
      filterForm(params, page),
      AL.el('p', { class: 'muted', id: 'count' }, `${AL.num(page.total)} sessions, ${shown} shown`),
      table(page),
      pager(params, page),
      page.skipped.length
        ? AL.el('details', { class: 'skipped' },
          AL.el('summary', {}, `${page.skipped.length} unreadable`),
          AL.el('ul', {}, page.skipped.map((s) => AL.el('li', {}, `${s.path}: ${s.error}`))))
        : null,
    );
  } catch (e) {
    AL.main(AL.el('h1', {}, 'Sessions'), AL.failure(e));
  }
}

document.addEventListener('DOMContentLoaded', load);
