// The usage page (`/usage`): tokens (and cost, when the library gives it) per day, by model
// and by project, from `/api/usage` (the library's usage report, as `usage --json`).
'use strict';

const KINDS = [
  ['input_tokens', 'input', '#3465a4'],
  ['output_tokens', 'output', '#cc0000'],
  ['cache_creation_tokens', 'cache writes', '#73d216'],
  ['cache_read_tokens', 'cache reads', '#f57900'],
];

// Tokens per day, one line per kind of token (and their total as bars).
function dayChart(report) {
  const box = AL.el('div', { id: 'day-chart', class: 'chart' });
  const rows = report.rows.filter((r) => r.day !== 'unknown');
  if (!rows.length) return AL.el('p', { class: 'muted' }, 'No usage with a date.');
  const xs = rows.map((r) => Date.parse(`${r.day}T00:00:00Z`) / 1000);
  const data = [xs, rows.map((r) => r.total_tokens), ...KINDS.map(([k]) => rows.map((r) => r[k]))];
  const series = [{},
    { label: 'total', stroke: '#555', fill: 'rgba(85,85,85,0.15)', paths: uPlot.paths.bars({ size: [0.6, 40] }) },
    ...KINDS.map(([, label, stroke]) => ({ label, stroke, width: 2 }))];
  requestAnimationFrame(() => {
    state.day = new uPlot({
      width: Math.min(900, box.clientWidth || 900), height: 280, title: 'Tokens per day (UTC)',
      axes: [{}, { size: 80 }], series,
    }, data, box);
  });
  return box;
}

const state = {};

function table(report, key, label) {
  const costs = report.rows.some((r) => AL.cost(r) > 0);
  const head = [label, 'Messages', 'Input', 'Output', 'Cache writes', 'Cache reads', 'Total'];
  if (costs) head.push('Cost');
  const rows = report.rows.map((r) => {
    const cells = [r[key], AL.num(r.messages), AL.num(r.input_tokens), AL.num(r.output_tokens),
      AL.num(r.cache_creation_tokens), AL.num(r.cache_read_tokens), AL.num(r.total_tokens)];
    if (costs) cells.push(AL.money(AL.cost(r)));
    return AL.el('tr', {}, cells.map((c, i) => AL.el('td', { class: i ? 'num' : null }, c)));
  });
  return AL.el('table', { id: `by-${key}` },
    AL.el('thead', {}, AL.el('tr', {}, head.map((h) => AL.el('th', {}, h)))),
    AL.el('tbody', {}, rows));
}

async function load() {
  AL.nav('/usage');
  const params = AL.params();
  const range = { since: params.get('since'), until: params.get('until') };
  const form = AL.el('form', { id: 'range', method: 'get', action: '/usage' },
    AL.field('Since', AL.input('since', range.since, 'date')),
    AL.field('Until', AL.input('until', range.until, 'date')),
    AL.el('button', { type: 'submit' }, 'Apply'));
  try {
    const [days, models, projects] = await Promise.all(['day', 'model', 'project'].map(
      (by) => AL.api(`/api/usage${AL.query({ by, ...range })}`)));
    const t = days.totals;
    const cost = AL.cost(t);
    AL.main(AL.el('h1', {}, 'Usage'), form,
      AL.el('p', { id: 'totals' }, `${AL.num(t.total_tokens)} tokens in ${AL.num(t.messages)} messages${cost ? `, ${AL.money(cost)}` : ''}`),
      dayChart(days),
      AL.el('h2', {}, 'By model'), table(models, 'model', 'Model'),
      AL.el('h2', {}, 'By project'), table(projects, 'project', 'Project'),
      AL.el('h2', {}, 'By day'), table(days, 'day', 'Day'));
  } catch (e) {
    AL.main(AL.el('h1', {}, 'Usage'), form, AL.failure(e));
  }
}

document.addEventListener('DOMContentLoaded', load);
