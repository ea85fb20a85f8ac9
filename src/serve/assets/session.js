// A session page (`/sessions/{id}`): the conversation in windows of lines
// (`/api/sessions/{id}/lines`), compaction dividers with each generation's tokens, thinking and
// tool calls collapsed, a chart of tokens per generation, and new lines followed live
// (`/api/sessions/{id}/follow`, server-sent events). Every transcript string is a text node.
'use strict';

const WINDOW = 100;
const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const base = `/api/sessions/${encodeURIComponent(id)}`;
// `opencode`: an OpenCode session, whose `lines` are its messages by place (no byte offsets,
// nothing to follow: the API answers `not_line_addressable`).
const state = { first: 0, next: 0, end: 0, boundaries: new Map(), generations: [], source: null, opencode: false };

// Text of a content value: a string, or the text parts of an array.
function textOf(value) {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    return value.map((p) => (typeof p === 'string' ? p : (p && (p.text || p.content)) || '')).filter(Boolean).join('\n');
  }
  if (value && typeof value === 'object') return JSON.stringify(value, null, 2);
  return value === undefined || value === null ? '' : String(value);
}

function pre(text, cls) {
  return AL.el('pre', { class: cls || 'text' }, text);
}

function collapsed(label, cls, ...body) {
  return AL.el('details', { class: cls }, AL.el('summary', {}, label), ...body);
}

// An edit's old and new text as a diff of lines.
function diff(oldText, newText) {
  const lines = [];
  for (const l of String(oldText || '').split('\n')) lines.push(AL.el('span', { class: 'del' }, `- ${l}\n`));
  for (const l of String(newText || '').split('\n')) lines.push(AL.el('span', { class: 'add' }, `+ ${l}\n`));
  return AL.el('pre', { class: 'diff' }, lines);
}

function toolInput(name, input) {
  if (input && typeof input === 'object') {
    if (typeof input.old_string === 'string' && typeof input.new_string === 'string') {
      return [AL.el('div', { class: 'muted' }, input.file_path || ''), diff(input.old_string, input.new_string)];
    }
    if (Array.isArray(input.edits)) {
      return [AL.el('div', { class: 'muted' }, input.file_path || ''),
        ...input.edits.map((e) => diff(e.old_string, e.new_string))];
    }
  }
  let shown = input;
  if (typeof input === 'string') {
    try { shown = JSON.parse(input); } catch (e) { shown = input; }
  }
  return [pre(typeof shown === 'string' ? shown : JSON.stringify(shown, null, 2), 'code')];
}

// The parts of a message's content (Claude Code, Codex and pi blocks).
function parts(content) {
  if (typeof content === 'string') return [pre(content)];
  if (!Array.isArray(content)) return content ? [pre(textOf(content), 'code')] : [];
  return content.map((p) => {
    if (typeof p === 'string') return pre(p);
    switch (p && p.type) {
      case 'text': case 'input_text': case 'output_text':
        return pre(p.text || '');
      case 'thinking': case 'reasoning':
        return collapsed('thinking', 'thinking', pre(p.thinking || p.text || ''));
      case 'redacted_thinking':
        return AL.el('div', { class: 'muted' }, '(redacted thinking)');
      case 'tool_use': case 'toolCall':
        return collapsed(`tool: ${p.name || ''}`, 'tool', ...toolInput(p.name, p.input || p.arguments));
      case 'tool_result':
        return collapsed(`result${p.is_error ? ' (error)' : ''}`, 'result', pre(textOf(p.content)));
      case 'image': case 'input_image':
        return AL.el('div', { class: 'muted' }, '[image]');
      default:
        return collapsed(String((p && p.type) || 'part'), 'other', pre(JSON.stringify(p, null, 2), 'code'));
    }
  });
}

// What a line shows: a role and its body.
function entry(json) {
  const type = json.type;
  const msg = json.message;
  if (msg && typeof msg === 'object') {
    const role = msg.role || type;
    if (role === 'toolResult') {
      return { role: 'tool', label: `result: ${msg.toolName || ''}`, body: [collapsed('result', 'result', pre(textOf(msg.content)))] };
    }
    return { role, label: role, body: parts(msg.content) };
  }
  // An OpenCode message row: its role, model and tokens at the top level.
  if (typeof json.role === 'string' && (json.tokens || json.modelID || json.time)) {
    const label = json.modelID ? `${json.role} · ${json.modelID}` : json.role;
    return { role: json.role, label, body: [collapsed('message', 'other', pre(JSON.stringify(json, null, 2), 'code'))] };
  }
  const p = json.payload;
  if (type === 'response_item' && p) {
    switch (p.type) {
      case 'message': return { role: p.role, label: p.role, body: parts(p.content) };
      case 'reasoning': return { role: 'assistant', label: 'reasoning', body: [collapsed('thinking', 'thinking', pre(textOf(p.summary)))] };
      case 'function_call': case 'custom_tool_call': case 'local_shell_call':
        return { role: 'assistant', label: 'tool', body: [collapsed(`tool: ${p.name || p.type}`, 'tool', ...toolInput(p.name, p.arguments || p.input || p.action))] };
      case 'function_call_output': case 'custom_tool_call_output':
        return { role: 'tool', label: 'result', body: [collapsed('result', 'result', pre(textOf(p.output)))] };
      default: break;
    }
  }
  if (type === 'summary' && json.summary) return { role: 'meta', label: 'summary', body: [pre(json.summary)] };
  const label = p && p.type ? `${type}: ${p.type}` : String(type || 'line');
  return { role: 'meta', label, body: [collapsed(label, 'other', pre(JSON.stringify(json, null, 2), 'code'))], meta: true };
}

function divider(offset) {
  const b = state.boundaries.get(offset);
  const g = state.generations[b.generation + 1];
  const tokens = g ? ` · generation ${b.generation + 2}: ${AL.num(g.usage.total_tokens)} tokens` : '';
  const before = b.pre_tokens ? ` · ${AL.num(b.pre_tokens)} tokens before` : '';
  return AL.el('div', { class: 'divider', role: 'separator' },
    `compaction (${b.kind}${b.trigger ? `, ${b.trigger}` : ''})${before}${tokens}`);
}

function lineNode(line) {
  const nodes = [];
  if (state.boundaries.has(line.offset)) nodes.push(divider(line.offset));
  let e;
  if (line.json && typeof line.json === 'object' && !Array.isArray(line.json)) {
    e = entry(line.json);
  } else if (line.json !== null && line.json !== undefined) {
    e = { role: 'meta', label: 'value', body: [pre(JSON.stringify(line.json), 'code')], meta: true };
  } else {
    e = { role: 'meta', label: line.type || 'text', body: [pre(line.text || ''), line.truncated ? AL.el('div', { class: 'muted' }, `(cut: the line has ${AL.num(line.bytes)} bytes)`) : null] };
  }
  const head = AL.el('div', { class: 'head' },
    AL.el('span', { class: 'role' }, e.label),
    AL.el('a', { class: 'time', href: `${location.pathname}?offset=${line.offset}` }, AL.time(line.time) || `@${line.offset}`));
  nodes.push(AL.el('article', { class: `line role-${String(e.role).replace(/[^a-z]/gi, '')}${e.meta ? ' meta' : ''}`, id: `L${line.offset}`, 'data-offset': line.offset }, head, e.body));
  return nodes;
}

function appendLines(lines) {
  const list = document.getElementById('lines');
  for (const line of lines) list.append(...lineNode(line));
}

function prependLines(lines) {
  const list = document.getElementById('lines');
  const nodes = lines.flatMap(lineNode);
  list.prepend(...nodes);
}

function updateButtons() {
  document.getElementById('earlier').hidden = state.first === 0;
  document.getElementById('more').hidden = state.next >= state.end;
}

async function loadMore() {
  const w = await AL.api(`${base}/lines${AL.query({ offset: state.next, limit: WINDOW })}`);
  appendLines(w.lines);
  state.next = w.next_offset;
  state.end = w.end;
  updateButtons();
  follow();
}

async function loadEarlier() {
  const w = await AL.api(`${base}/lines${AL.query({ before: state.first, limit: WINDOW })}`);
  prependLines(w.lines);
  state.first = w.first_offset;
  updateButtons();
}

// Follows the transcript once the window reaches its end.
function follow() {
  const on = document.getElementById('follow').checked && !state.opencode;
  if (!on || state.next < state.end) {
    if (state.source) { state.source.close(); state.source = null; }
    return;
  }
  if (state.source) return;
  state.source = new EventSource(`${base}/follow?offset=${state.next}`);
  state.source.addEventListener('lines', (event) => {
    const w = JSON.parse(event.data);
    appendLines(w.lines);
    state.next = w.next_offset;
    state.end = Math.max(w.end, state.next);
    updateButtons();
  });
  state.source.addEventListener('reset', (event) => {
    state.source.close();
    state.source = null;
    document.getElementById('notice').replaceChildren(`The transcript was rewritten (${event.data}): reload the page.`);
  });
}

function chart(report) {
  const box = AL.el('div', { id: 'chart', class: 'chart' });
  if (!report || typeof uPlot === 'undefined') return box;
  const gens = report.generations;
  const xs = gens.map((_, i) => i + 1);
  const ys = gens.map((g) => g.usage.total_tokens);
  requestAnimationFrame(() => {
    const opts = {
      width: Math.min(640, box.clientWidth || 640),
      height: 160,
      title: 'Tokens per generation',
      scales: { x: { time: false } },
      axes: [{ label: 'generation' }, { size: 70 }],
      series: [{}, { label: 'tokens', stroke: '#3465a4', fill: 'rgba(52,101,164,0.3)', paths: uPlot.paths.bars({ size: [0.6, 60] }) }],
    };
    state.plot = new uPlot(opts, [xs, ys], box);
  });
  return box;
}

function header(meta) {
  const s = meta.session;
  const r = meta.report;
  const cost = AL.cost(s);
  const facts = [
    ['Agent', s.agent], ['Project', s.project], ['Start', AL.time(s.start)], ['End', AL.time(s.end)],
    ['Messages', AL.num(s.messages)], ['Tokens', AL.num(s.total_tokens)],
  ];
  if (cost) facts.push(['Cost', AL.money(cost)]);
  if (r) facts.push(['Generations', String(r.generations.length)]);
  facts.push(['File', meta.path]);
  const subs = s.subagents.length
    ? AL.el('p', { class: 'subagents' }, 'Subagents: ', s.subagents.map((a) =>
      AL.el('a', { href: `/sessions/${encodeURIComponent(a.id)}`, class: 'subagent' }, a.id.split('~').pop())))
    : null;
  const parent = meta.id !== s.id
    ? AL.el('p', {}, 'Subagent of ', AL.el('a', { href: `/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id))
    : null;
  return [
    AL.el('h1', { id: 'title' }, s.title || s.id),
    AL.el('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [AL.el('dt', {}, k), AL.el('dd', {}, v)])),
    parent, subs,
    meta.error ? AL.el('p', { class: 'error', role: 'alert' }, `This transcript could not be read: ${meta.error}`) : null,
    chart(r),
  ];
}

async function load() {
  AL.nav('');
  const params = AL.params();
  const offset = params.get('offset');
  try {
    const [meta, w] = await Promise.all([
      AL.api(base),
      offset !== null
        ? AL.api(`${base}/lines${AL.query({ offset, limit: WINDOW })}`)
        : AL.api(`${base}/lines${AL.query({ offset: 0, limit: WINDOW })}`),
    ]);
    document.title = `agentlog: ${meta.session.title || meta.id}`;
    state.opencode = meta.format === 'opencode';
    if (meta.report) {
      meta.report.boundaries.forEach((b, i) => state.boundaries.set(b.offset, { ...b, generation: i }));
      state.generations = meta.report.generations;
    }
    const controls = AL.el('div', { class: 'controls' },
      AL.el('label', {}, AL.el('input', { type: 'checkbox', id: 'follow', checked: 'checked' }), ' follow new lines'),
      AL.el('button', { type: 'button', id: 'to-end' }, 'Jump to end'));
    AL.main(...header(meta), controls,
      AL.el('p', { id: 'notice', class: 'notice' }),
      AL.el('button', { type: 'button', id: 'earlier', class: 'pager' }, 'Load earlier lines'),
      AL.el('section', { id: 'lines' }),
      AL.el('button', { type: 'button', id: 'more', class: 'pager' }, 'Load more lines'));
    state.first = w.first_offset;
    state.next = w.next_offset;
    state.end = w.end;
    appendLines(w.lines);
    updateButtons();
    if (state.opencode) {
      const box = document.getElementById('follow');
      box.checked = false;
      box.disabled = true;
    }
    document.getElementById('more').addEventListener('click', () => loadMore().catch(show));
    document.getElementById('earlier').addEventListener('click', () => loadEarlier().catch(show));
    document.getElementById('follow').addEventListener('change', follow);
    document.getElementById('to-end').addEventListener('click', () => jumpToEnd().catch(show));
    if (offset !== null) {
      const target = document.getElementById(`L${offset}`);
      if (target) { target.classList.add('target'); target.scrollIntoView({ block: 'center' }); }
    }
    follow();
  } catch (e) {
    AL.main(AL.el('h1', {}, id), AL.failure(e));
  }
}

async function jumpToEnd() {
  const w = await AL.api(`${base}/lines${AL.query({ before: 'end', limit: WINDOW })}`);
  document.getElementById('lines').replaceChildren();
  state.first = w.first_offset;
  state.next = w.next_offset;
  state.end = w.end;
  appendLines(w.lines);
  updateButtons();
  follow();
  const last = document.getElementById('lines').lastElementChild;
  if (last) last.scrollIntoView({ block: 'end' });
}

function show(e) {
  document.getElementById('notice').replaceChildren(`Error: ${e.message || e}`);
}

document.addEventListener('DOMContentLoaded', load);
