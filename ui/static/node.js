// One node: its status and flags, what it has reserved against what it
// can allocate (a chart: capacity and memory split by assignment, every core, every
// GPU and capability), its labels and taints, its assignments, and the
// cordon, uncordon and drain actions. Node and assignments are followed
// with blocking queries.
import { api, attempt, h, chip, num, ago, idLink, badge, statusKind, confirmAction, watch } from './app.js';
import { flags } from './nodes.js';

export const title = 'Node';

const SVG = 'http://www.w3.org/2000/svg';
const W = 560; // chart width of a bar
const ROW = 26;
const LABEL = 130;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// chartRow is one resource: a track of `total`, with segments of used.
function chartRow(y, label, total, segments, unit = '') {
  const used = segments.reduce((s, x) => s + x.value, 0);
  const g = svg('g', { class: 'chart-row', 'data-resource': label });
  g.append(svg('text', { x: 0, y: y + 16, class: 'chart-label' }, label));
  g.append(svg('rect', { x: LABEL, y: y + 4, width: W, height: 16, rx: 3, class: 'chart-track' }));
  let x = LABEL;
  segments.forEach((s, i) => {
    const w = total > 0 ? Math.max(1, (s.value / total) * W) : 0;
    const seg = svg('rect', { x, y: y + 4, width: Math.min(w, LABEL + W - x), height: 16, class: `chart-seg c${i % 6}` });
    seg.append(svg('title', {}, s.title));
    g.append(seg);
    x += w;
  });
  g.append(svg('text', { x: LABEL + W + 10, y: y + 16, class: 'chart-value' }, `${num(used)} / ${num(total)}${unit}`));
  return g;
}

// chart draws reserved against allocatable for every resource of n; the
// capacity and memory rows split what is reserved by assignment.
function chart(n, assignments) {
  const r = n.reserved || {};
  const running = assignments.filter((a) => a.desired === 'run');
  const rows = [];
  const bySelf = running.map((a) => ({ value: a.capacity, title: `${a.bundleId || a.serviceId} / ${a.job}: ${num(a.capacity)}` }));
  const rest = (r.capacity || 0) - bySelf.reduce((s, x) => s + x.value, 0);
  if (rest > 0.0005) bySelf.push({ value: rest, title: `other reservations: ${num(rest)}` });
  rows.push(['capacity', n.allocatable, bySelf, ` (of ${num(n.totalCapacity)})`]);
  if (n.totalMemoryMiB > 0) {
    const mem = running.filter((a) => a.memoryMiB > 0)
      .map((a) => ({ value: a.memoryMiB, title: `${a.bundleId || a.serviceId} / ${a.job}: ${a.memoryMiB} MiB` }));
    const other = (r.memoryMiB || 0) - mem.reduce((s, x) => s + x.value, 0);
    if (other > 0) mem.push({ value: other, title: `other reservations: ${other} MiB` });
    rows.push(['memory', n.totalMemoryMiB, mem, ' MiB']);
  }
  if (n.totalCores > 0) {
    rows.push(['cores', n.totalCores, (r.coreSet || []).map((c) => ({ value: 1, title: `core ${c}` }))]);
  }
  for (const g of n.gpus || []) {
    const held = (r.gpus || []).find((x) => x.index === g.index);
    rows.push([`GPU ${g.index}${g.model ? ` ${g.model}` : ''}`, g.totalCapacity,
      held ? [{ value: held.capacity, title: held.exclusive ? 'held exclusively' : `shared: ${num(held.capacity)}` }] : []]);
  }
  for (const c of n.capabilities || []) {
    const held = (r.capabilities || []).find((x) => x.name === c.name);
    rows.push([c.name, c.count, held ? [{ value: held.count, title: `${held.count} held` }] : []]);
  }
  const el = svg('svg', { viewBox: `0 0 ${LABEL + W + 150} ${rows.length * ROW + 6}`, class: 'chart', id: 'node-chart',
    role: 'img', 'aria-label': 'reserved against allocatable' });
  rows.forEach(([label, total, segs, unit], i) => el.append(chartRow(i * ROW, label, total, segs, unit)));
  return el;
}

async function act(n, action) {
  const text = {
    cordon: `Cordon ${n.id}? No new jobs will be placed on it; running jobs stay.`,
    uncordon: `Uncordon ${n.id}? It becomes placeable again${n.draining ? ' and stops draining' : ''}.`,
    drain: `Drain ${n.id}? Every job moves off it (backups are promoted first), and no new jobs are placed on it.`,
  }[action];
  const label = action[0].toUpperCase() + action.slice(1);
  if (!(await confirmAction(`${label} ${n.id}`, text, label))) return;
  await attempt(`${label} ${n.id}`, () => api('POST', `/v1/nodes/${encodeURIComponent(n.id)}/${action}`));
}

function actions(n) {
  const button = (action, cls) => {
    const b = h('button', { type: 'button', class: `small ${cls}`, data: { action } }, action[0].toUpperCase() + action.slice(1));
    b.addEventListener('click', () => act(n, action));
    return b;
  };
  return h('div', { class: 'node-actions' },
    n.cordoned || n.draining ? button('uncordon', 'ghost') : button('cordon', 'ghost'),
    n.draining ? null : button('drain', 'warn'));
}

function head(n) {
  const labels = Object.keys(n.labels || {}).sort().map((k) => chip(`${k}=${n.labels[k]}`));
  return h('div', { class: 'panel' },
    h('div', { class: 'view-head' }, h('h1', { class: 'mono', id: 'node-id' }, n.id),
      h('span', { class: 'node-head', id: 'node-flags' }, flags(n)), h('span', { class: 'spacer' }), actions(n)),
    h('dl', { class: 'kv' },
      h('dt', {}, 'pool · tier'), h('dd', {}, `${n.pool}${n.tier ? ` · ${n.tier}` : ''}`),
      h('dt', {}, 'labels'), h('dd', { id: 'node-labels' }, labels.length ? labels : '–'),
      h('dt', {}, 'taints'), h('dd', {}, (n.taints || []).length ? n.taints.map((t) => chip(t)) : '–'),
      h('dt', {}, 'last seen'), h('dd', {}, ago(n.lastSeen)),
      h('dt', {}, 'indexes'), h('dd', {}, `created ${n.createIndex}, modified ${n.modifyIndex}`)));
}

function assignmentTable(list) {
  if (!list.length) return h('p', { class: 'empty' }, 'No assignments.');
  return h('table', { id: 'node-assignments' },
    h('thead', {}, h('tr', {}, ['Owner', 'Job', 'Role', 'Epoch', 'Desired', 'Status', 'Capacity', 'Cores', 'GPU'].map((c) => h('th', {}, c)))),
    h('tbody', {}, list.map((a) => h('tr', { data: { assignment: a.id } },
      h('td', {}, a.bundleId ? idLink('bundles', a.bundleId) : `service ${a.serviceId}`),
      h('td', { class: 'mono' }, a.job), h('td', {}, a.role || '–'), h('td', { class: 'num' }, a.epoch),
      h('td', {}, a.desired), h('td', {}, a.status ? badge(a.status, statusKind(a.status)) : '–'),
      h('td', { class: 'num' }, num(a.capacity)),
      h('td', { class: 'mono' }, (a.cores || []).join(',') || '–'),
      h('td', { class: 'mono' }, a.gpu ? `#${a.gpu.index} × ${num(a.gpu.capacity)}` : (a.gpus || []).length ? `#${a.gpus.join(',#')}` : '–')))));
}

export function mount(root, id) {
  const top = h('div', { id: 'node-page' }, h('p', { class: 'muted' }, 'Loading…'));
  const usagePanel = h('div', { class: 'panel' }, h('h2', {}, 'Reserved against allocatable'), h('div', { id: 'node-usage' }));
  const work = h('div', { class: 'panel' }, h('h2', {}, 'Assignments'), h('div', { id: 'node-work' }));
  root.append(h('p', { class: 'crumbs' }, h('a', { href: '#/nodes' }, 'Nodes'), ` / ${id}`), top, usagePanel, work);
  const path = `/v1/nodes/${encodeURIComponent(id)}`;
  let node = null;
  let assigned = [];
  const draw = () => {
    if (!node) return;
    top.replaceChildren(head(node));
    usagePanel.querySelector('#node-usage').replaceChildren(chart(node, assigned));
    work.querySelector('#node-work').replaceChildren(assignmentTable(assigned));
  };
  const missing = (e) => top.replaceChildren(h('p', { class: 'empty', id: 'node-missing' },
    e.code === 'notFound' ? `Node ${id} is not registered.` : `Could not load node ${id}: ${e.message}`));
  const stops = [
    watch('Node', path, ({ body }) => { node = body; draw(); }, { onError: missing }),
    watch('Assignments', `${path}/assignments`, ({ body }) => { assigned = body || []; draw(); }),
  ];
  return () => stops.forEach((s) => s());
}
