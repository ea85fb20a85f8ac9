// The usage page (`/usage`): tokens and cost per day stacked by model, tokens by project
// stacked by model, and the 5-hour billing blocks, each from `/api/usage` (the library's usage
// report, as `usage --json`; `split=model` adds each row's model rows). The page only draws:
// every figure is the library's, stacking is the running sum of its model rows.
'use strict';

const PALETTE = ['#3465a4', '#cc0000', '#73d216', '#f57900', '#75507b', '#c4a000',
  '#06989a', '#8f5902', '#ef2929', '#729fcf', '#ad7fa8', '#4e9a06'];

const state = { charts: [] };

// The models of a split report, in the order of the by-model report (so colours hold across
// charts), each with its colour.
function modelColours(models) {
  const colours = new Map();
  models.rows.forEach((r, i) => colours.set(r.model, PALETTE[i % PALETTE.length]));
  return colours;
}

// The options of a chart whose x values are the indexes of `labels` (a day, a project, a
// block's start): one bar slot per label, only labels with usage.
function categories(labels, xLabel, short) {
  const name = (v) => (Number.isInteger(v) && labels[v] !== undefined ? short(labels[v]) : '');
  return {
    scales: { x: { time: false, range: (u, min, max) => [min - 0.5, max + 0.5] } },
    axes: [{ space: 70, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500], values: (u, vs) => vs.map(name) },
      { size: 80, values: (u, vs) => vs.map(AL.num) }],
    first: { label: xLabel, value: (u, v) => (v === null || v === undefined ? '' : String(labels[v] ?? '')) },
  };
}

// A stacked bar chart: one bar per key (labelled), one series per model of
// `report.by_model`, each bar the running sum of the models below it (drawn tallest first, so
// each model shows as its own band). The legend shows each model's own value.
function stacked(id, title, report, keys, field, colours, opts) {
  const box = AL.el('div', { id, class: 'chart' });
  const byModel = report.by_model || {};
  const models = [...colours.keys()].filter((m) => keys.some(
    (k) => (byModel[k] || []).some((r) => r.model === m)));
  const own = models.map((m) => keys.map((k) => {
    const row = (byModel[k] || []).find((r) => r.model === m);
    return row ? field(row) : 0;
  }));
  const sums = [];
  own.forEach((values, i) => sums.push(values.map((v, j) => v + (i ? sums[i - 1][j] : 0))));
  const order = models.map((_, i) => models.length - 1 - i);
  const data = [keys.map((_, i) => i), ...order.map((i) => sums[i])];
  const frame = categories(keys, opts.xLabel, opts.short || String);
  if (opts.axis) frame.axes[1].values = (u, vs) => vs.map(opts.axis);
  const series = [frame.first, ...order.map((i) => ({
    label: models[i],
    stroke: colours.get(models[i]),
    fill: colours.get(models[i]),
    paths: uPlot.paths.bars({ size: [0.7, 48] }),
    points: { show: false },
    value: (u, v, si, idx) => (idx === null || idx === undefined ? '' : opts.format(own[i][idx])),
  }))];
  requestAnimationFrame(() => {
    state.charts.push(new uPlot({
      width: Math.min(900, box.clientWidth || 900), height: 300, title,
      scales: frame.scales, axes: frame.axes, series,
    }, data, box));
  });
  return box;
}

function tokensOf(row) {
  return row.total_tokens || 0;
}

function costOf(row) {
  return typeof row.cost_usd === 'number' ? row.cost_usd : 0;
}

function dayCharts(days, colours) {
  const keys = days.rows.map((r) => r.day).filter((d) => d !== 'unknown');
  if (!keys.length) return [AL.el('p', { class: 'muted' }, 'No usage with a date.')];
  const zone = days.timezone ? ` (${days.timezone})` : '';
  const charts = [stacked('tokens-by-day', `Tokens per day with usage, by model${zone}`, days,
    keys, tokensOf, colours, { format: AL.num, xLabel: 'Day' })];
  if (days.rows.some((r) => costOf(r) > 0)) {
    charts.push(stacked('cost-by-day', `Cost per day with usage, by model (USD)${zone}`, days,
      keys, costOf, colours, {
        format: (v) => AL.money(v) || '$0.00',
        axis: (v) => `$${Number(v).toFixed(2)}`,
        xLabel: 'Day',
      }));
  }
  return charts;
}

// The largest projects (by tokens) as a stacked chart; every project is in the table below.
const TOP_PROJECTS = 20;

function projectChart(projects, colours) {
  const top = [...projects.rows].sort((a, b) => tokensOf(b) - tokensOf(a)).slice(0, TOP_PROJECTS);
  if (!top.length) return AL.el('p', { class: 'muted' }, 'No usage.');
  const keys = top.map((r) => r.project);
  const short = (p) => {
    const name = String(p).split(/[\\/]/).filter(Boolean).pop() || String(p);
    return name.length > 18 ? `${name.slice(0, 17)}…` : name;
  };
  const more = projects.rows.length > top.length ? `, the ${top.length} largest` : '';
  return stacked('tokens-by-project', `Tokens by project and model${more}`, projects, keys,
    tokensOf, colours, { format: AL.num, xLabel: 'Project', short });
}

// The billing blocks: a chart of each block's tokens (the active one's projection beside it)
// and a table of every block, newest first.
function blockSection(blocks) {
  const rows = blocks.rows.filter((r) => r.start);
  if (!rows.length) return [AL.el('p', { class: 'muted' }, 'No billing blocks.')];
  const active = rows.find((r) => r.is_active);
  const summary = active
    ? AL.el('p', { id: 'active-block' },
      `Active block ${AL.time(active.start)} to ${AL.time(active.end)}: ${AL.num(active.total_tokens)} tokens`,
      costOf(active) ? `, ${AL.money(costOf(active))}` : '',
      active.burn_rate ? `; burning ${AL.num(Math.round(active.burn_rate.tokens_per_minute))} tokens/min` : '',
      active.burn_rate && active.burn_rate.cost_usd_per_hour !== null
        ? ` (${AL.money(active.burn_rate.cost_usd_per_hour) || '$0.00'}/h)` : '',
      active.projection ? `; projected ${AL.num(active.projection.total_tokens)} tokens` : '',
      active.projection && active.projection.cost_usd !== null
        ? `, ${AL.money(active.projection.cost_usd) || '$0.00'}` : '',
      active.projection ? ` by its end, ${AL.num(active.projection.remaining_minutes)} min left` : '')
    : AL.el('p', { id: 'active-block', class: 'muted' }, 'No active block.');
  const used = rows.filter((r) => !r.is_gap);
  const box = AL.el('div', { id: 'blocks-chart', class: 'chart' });
  const frame = categories(used.map((r) => AL.time(r.start)), 'Block start (UTC)', (t) => t.slice(0, 10));
  const data = [used.map((_, i) => i), used.map(tokensOf),
    used.map((r) => (r.is_active && r.projection ? r.projection.total_tokens : null))];
  requestAnimationFrame(() => {
    state.charts.push(new uPlot({
      width: Math.min(900, box.clientWidth || 900), height: 240, title: 'Tokens per 5-hour block',
      scales: frame.scales, axes: frame.axes,
      series: [frame.first,
        { label: 'tokens', stroke: '#3465a4', fill: 'rgba(52,101,164,0.6)', paths: uPlot.paths.bars({ size: [0.6, 48] }), points: { show: false }, value: (u, v) => AL.num(v) },
        { label: 'projected (active)', stroke: '#f57900', dash: [4, 4], paths: uPlot.paths.bars({ size: [0.6, 48] }), points: { show: false }, value: (u, v) => AL.num(v) }],
    }, data, box));
  });
  const costs = rows.some((r) => costOf(r) > 0);
  const head = ['Start (UTC)', 'End (UTC)', 'State', 'Tokens'];
  if (costs) head.push('Cost');
  head.push('Burn rate', 'Projected');
  const body = [...rows].reverse().map((r) => {
    const stateName = r.is_gap ? 'gap' : r.is_active ? 'active' : 'ended';
    const cells = [AL.time(r.start), AL.time(r.end), stateName, r.is_gap ? '' : AL.num(r.total_tokens)];
    if (costs) cells.push(r.is_gap ? '' : AL.money(costOf(r)));
    cells.push(r.burn_rate ? `${AL.num(Math.round(r.burn_rate.tokens_per_minute))}/min` : '',
      r.projection ? AL.num(r.projection.total_tokens) : '');
    return AL.el('tr', { class: r.is_gap ? 'gap' : r.is_active ? 'active' : null, 'data-start': r.start },
      cells.map((c, i) => AL.el('td', { class: i >= 3 ? 'num' : null }, c)));
  });
  const table = AL.el('table', { id: 'blocks' },
    AL.el('thead', {}, AL.el('tr', {}, head.map((h) => AL.el('th', {}, h)))),
    AL.el('tbody', {}, body));
  return [summary, box, table];
}

function table(report, key, label) {
  const costs = report.rows.some((r) => costOf(r) > 0);
  const head = [label, 'Messages', 'Input', 'Output', 'Cache writes', 'Cache reads', 'Total'];
  if (costs) head.push('Cost');
  const rows = report.rows.map((r) => {
    const cells = [r[key], AL.num(r.messages), AL.num(r.input_tokens), AL.num(r.output_tokens),
      AL.num(r.cache_creation_tokens), AL.num(r.cache_read_tokens), AL.num(r.total_tokens)];
    if (costs) cells.push(AL.money(costOf(r)));
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
    const [days, models, projects, blocks] = await Promise.all([
      { by: 'day', split: 'model' }, { by: 'model' }, { by: 'project', split: 'model' },
      { by: 'block' },
    ].map((q) => AL.api(`/api/usage${AL.query({ ...q, ...range })}`)));
    const t = days.totals;
    const cost = costOf(days);
    const colours = modelColours(models);
    AL.main(AL.el('h1', {}, 'Usage'), form,
      AL.el('p', { id: 'totals' }, `${AL.num(t.total_tokens)} tokens in ${AL.num(t.messages)} messages${cost ? `, ${AL.money(cost)}` : ''}`),
      ...dayCharts(days, colours),
      AL.el('h2', {}, 'By project'), projectChart(projects, colours),
      AL.el('h2', {}, 'Billing blocks (5 hours)'), ...blockSection(blocks),
      AL.el('h2', {}, 'Models'), table(models, 'model', 'Model'),
      AL.el('h2', {}, 'Projects'), table(projects, 'project', 'Project'),
      AL.el('h2', {}, 'Days'), table(days, 'day', 'Day'));
  } catch (e) {
    AL.main(AL.el('h1', {}, 'Usage'), form, AL.failure(e));
  }
}

document.addEventListener('DOMContentLoaded', load);
