// The search page (`/search?q=`): full-text search over the transcripts
// (`/api/search`), snippets with their matches marked, paged by cursor; a hit opens its
// session at its line.
'use strict';

// A snippet with its marks (code point ranges) as text nodes inside <mark> elements.
function snippet(text, marks) {
  const chars = Array.from(text || '');
  const out = [];
  let at = 0;
  for (const [start, end] of marks || []) {
    if (start > at) out.push(chars.slice(at, start).join(''));
    out.push(AL.el('mark', {}, chars.slice(start, end).join('')));
    at = end;
  }
  if (at < chars.length) out.push(chars.slice(at).join(''));
  return AL.el('p', { class: 'snippet' }, out);
}

function hitNode(hit) {
  const href = hit.id ? `/sessions/${encodeURIComponent(hit.id)}?offset=${hit.offset}` : null;
  return AL.el('li', { class: 'hit' },
    AL.el('div', { class: 'head' },
      href ? AL.el('a', { href, class: 'hit-link' }, hit.session) : AL.el('span', {}, hit.session),
      AL.el('span', { class: 'muted' }, ` ${hit.format} · line ${AL.num(hit.line)} · ${hit.role || hit.type}${hit.time ? ` · ${AL.time(new Date(hit.time).toISOString())}` : ''}`)),
    snippet(hit.snippet, hit.marks));
}

async function load() {
  AL.nav('/search');
  const params = AL.params();
  const q = params.get('q') || '';
  const form = AL.el('form', { id: 'search', method: 'get', action: '/search' },
    AL.field('Find', AL.input('q', q, 'search')),
    AL.field('Match', AL.select('mode', [['phrase', 'the phrase'], ['all', 'every word']], params.get('mode'))),
    AL.el('button', { type: 'submit' }, 'Search'));
  if (!q) {
    AL.main(AL.el('h1', {}, 'Search'), form);
    return;
  }
  try {
    const page = await AL.api(`/api/search${AL.query({ q, mode: params.get('mode'), cursor: params.get('cursor') })}`);
    const next = new URLSearchParams(params);
    next.set('cursor', page.nextCursor || '');
    AL.main(AL.el('h1', {}, 'Search'), form,
      page.hits.length ? AL.el('ol', { id: 'hits' }, page.hits.map(hitNode)) : AL.el('p', { id: 'no-hits' }, 'No matches.'),
      AL.el('nav', { class: 'pager' },
        page.nextCursor ? AL.el('a', { href: `/search?${next}`, id: 'next-page' }, 'Next page') : null));
  } catch (e) {
    AL.main(AL.el('h1', {}, 'Search'), form, AL.failure(e));
  }
}

document.addEventListener('DOMContentLoaded', load);
