// Nodes grouped by cloud and AZ, with capacity, core, GPU and capability
// usage, status and cordon/drain state; cordon, uncordon and drain actions.
import { api, attempt, h, badge, chip, bar, num, ago, statusKind, confirmAction, poll, unavailable } from './app.js';

export const title = 'Nodes';

const REFRESH_MS = 3000;
const NONE = '(none)';

// groups orders nodes by cloud, then AZ, then id.
function groups(nodes) {
  const byKey = new Map();
  for (const n of nodes) {
    const labels = n.labels || {};
    const az = labels.az || NONE;
    const cloud = labels.cloud || NONE;
    const key = `${cloud}\u0000${az}`;
    if (!byKey.has(key)) byKey.set(key, { az, cloud, nodes: [] });
    byKey.get(key).nodes.push(n);
  }
  const out = [...byKey.values()].sort((a, b) => a.cloud.localeCompare(b.cloud) || a.az.localeCompare(b.az));
  for (const g of out) g.nodes.sort((a, b) => a.id.localeCompare(b.id));
  return out;
}

function usageBars(n) {
  const r = n.reserved || {};
  const rows = [bar('Capacity', r.capacity || 0, n.allocatable)];
  if (n.totalCores > 0) rows.push(bar('Cores', r.cores || 0, n.totalCores));
  for (const g of n.gpus || []) {
    const held = (r.gpus || []).find((x) => x.index === g.index);
    const used = held ? held.capacity : 0;
    rows.push(bar(`GPU ${g.index}${g.model ? ` ${g.model}` : ''}`, used, g.totalCapacity,
      held && held.exclusive ? ' excl.' : ''));
  }
  for (const c of n.capabilities || []) {
    const held = (r.capabilities || []).find((x) => x.name === c.name);
    rows.push(bar(c.name, held ? held.count : 0, c.count));
  }
  return h('div', { class: 'bars' }, rows);
}

function flags(n) {
  return [
    badge(n.status, statusKind(n.status)),
    n.cordoned ? badge('cordoned', 'warn') : null,
    n.draining ? badge(n.assignments > 0 ? 'draining' : 'drained', 'warn') : null,
  ];
}

// act runs one node action after the user confirms it.
async function act(n, action, refresh) {
  const text = {
    cordon: `Cordon ${n.id}? No new jobs will be placed on it; running jobs stay.`,
    uncordon: `Uncordon ${n.id}? It becomes placeable again${n.draining ? ' and stops draining' : ''}.`,
    drain: `Drain ${n.id}? Every job moves off it (backups are promoted first), and no new jobs are placed on it.`,
  }[action];
  const label = action[0].toUpperCase() + action.slice(1);
  if (!(await confirmAction(`${label} ${n.id}`, text, label))) return;
  await attempt(`${label} ${n.id}`, () => api('POST', `/v1/nodes/${encodeURIComponent(n.id)}/${action}`));
  refresh();
}

function actions(n, refresh) {
  const button = (action, cls) => {
    const b = h('button', { type: 'button', class: `small ${cls}`, data: { action } },
      action[0].toUpperCase() + action.slice(1));
    b.addEventListener('click', () => act(n, action, refresh));
    return b;
  };
  return h('div', { class: 'node-actions' },
    n.cordoned || n.draining ? button('uncordon', 'ghost') : button('cordon', 'ghost'),
    n.draining ? null : button('drain', 'warn'));
}

function nodeCard(n, refresh) {
  const labels = Object.keys(n.labels || {}).filter((k) => k !== 'az' && k !== 'cloud').sort();
  const placeable = n.status === 'ready' && !n.cordoned && !n.draining;
  return h('div', { class: `node${placeable ? '' : ' unplaceable'}`, data: { nodeId: n.id } },
    h('div', { class: 'node-head' }, h('h3', { class: 'mono' }, n.id), flags(n)),
    h('div', { class: 'node-meta' },
      `pool ${n.pool}`, n.tier ? ` · tier ${n.tier}` : '',
      ` · ${n.assignments} assignment${n.assignments === 1 ? '' : 's'} · seen ${ago(n.lastSeen)}`),
    labels.length || (n.taints || []).length
      ? h('div', { class: 'node-meta' }, labels.map((k) => chip(`${k}=${n.labels[k]}`)),
        (n.taints || []).map((t) => chip(`taint ${t}`)))
      : null,
    usageBars(n),
    actions(n, refresh));
}

function groupSection(g, refresh) {
  let reserved = 0;
  let alloc = 0;
  for (const n of g.nodes) {
    reserved += (n.reserved && n.reserved.capacity) || 0;
    alloc += n.allocatable || 0;
  }
  return h('section', { class: 'group', data: { az: g.az, cloud: g.cloud } },
    h('div', { class: 'group-head' },
      h('h2', {}, `AZ ${g.az} `, h('span', {}, `· cloud ${g.cloud}`)),
      h('span', { class: 'muted' }, `${g.nodes.length} node${g.nodes.length === 1 ? '' : 's'} · capacity ${num(reserved)} / ${num(alloc)} reserved`)),
    h('div', { class: 'node-grid' }, g.nodes.map((n) => nodeCard(n, refresh))));
}

export function mount(root) {
  const summary = h('span', { class: 'muted', id: 'nodes-summary' });
  const body = h('div', { id: 'node-groups' }, h('p', { class: 'muted' }, 'Loading…'));
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Nodes'), summary), body);
  let loaded = false;
  const load = async () => {
    const ok = await attempt('Nodes', async () => {
      const nodes = await api('GET', '/v1/nodes');
      const gs = groups(nodes);
      summary.textContent = `${nodes.length} nodes in ${gs.length} failure domains`;
      body.replaceChildren(...(gs.length ? gs.map((g) => groupSection(g, load))
        : [h('p', { class: 'empty' }, 'No nodes are registered.')]));
    });
    loaded = loaded || ok;
    if (!loaded) body.replaceChildren(unavailable('the nodes'));
  };
  return poll(load, REFRESH_MS);
}
