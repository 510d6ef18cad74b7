// Nodes: the servers' pages of node summaries, filtered by id prefix or a
// CEL expression (node.labels["az"] == "az-1"), each linking to its node
// page, with capacity and memory used against what the node offers.
import { h, badge, num, ago, idLink, statusKind } from './app.js';
import { pagedList } from './listview.js';

export const title = 'Nodes';

const STATUSES = ['ready', 'suspect', 'down', 'left', 'unknown'];

// usage is a small bar of reserved against total.
export function usage(used, total, suffix = '') {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : used > 0 ? 100 : 0;
  const fill = h('div', { class: `fill ${pct >= 90 ? 'high' : pct >= 70 ? 'mid' : ''}`.trim() });
  fill.style.width = `${pct.toFixed(1)}%`; // CSSOM, allowed under the CSP
  return h('div', { class: 'usage' }, h('div', { class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': total,
    'aria-valuenow': used }, fill), h('span', { class: 'bar-value' }, `${num(used)} / ${num(total)}${suffix}`));
}

export function flags(n) {
  return [
    badge(n.status, statusKind(n.status)),
    n.cordoned && !n.draining ? [' ', badge('cordoned', 'warn')] : null,
    n.draining ? [' ', badge(n.assignments > 0 ? 'draining' : 'drained', 'warn')] : null,
  ];
}

function row(n) {
  const labels = n.labels || {};
  return h('tr', { data: { nodeId: n.id } },
    h('td', {}, idLink('nodes', n.id)),
    h('td', { class: 'small' }, n.pool, n.tier ? h('span', { class: 'muted' }, ` · ${n.tier}`) : ''),
    h('td', { class: 'flags' }, flags(n)),
    h('td', { class: 'az' }, labels.az || '–'),
    h('td', { class: 'small' }, labels.cloud || '–'),
    h('td', {}, usage(n.reservedCapacity, n.allocatable)),
    h('td', { class: 'num' }, `${n.reservedCores}/${n.totalCores}`),
    h('td', { class: 'memory' }, n.totalMemoryMiB ? usage(n.reservedMemoryMiB, n.totalMemoryMiB, ' MiB') : '–'),
    h('td', { class: 'num' }, n.gpuCapacity ? `${num(n.reservedGpu)}/${num(n.gpuCapacity)}` : '–'),
    h('td', { class: 'num' }, n.assignments),
    h('td', { class: 'muted small' }, ago(n.lastSeen)));
}

export function mount(root) {
  return pagedList(root, {
    name: 'nodes', title: 'Nodes', path: '/v1/nodes', variable: 'node', perPage: 50,
    placeholder: 'id prefix, or e.g. node.labels["az"] == "az-1"',
    columns: ['Node', 'Pool · tier', 'Status', 'AZ', 'Cloud', 'Capacity', 'Cores', 'Memory', 'GPU', 'Assignments', 'Last seen'],
    row,
    empty: 'No nodes are registered.',
    select: { param: 'status', label: 'Status', options: STATUSES },
  });
}
