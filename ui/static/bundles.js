// Bundles: state, primary and backup placement, degradations, the
// explanation of anything unplaced, and a delete action.
import { api, attempt, h, badge, chip, num, ago, statusKind, confirmAction, poll, unavailable } from './app.js';

export const title = 'Bundles';

const REFRESH_MS = 3000;
const COLUMNS = ['Bundle', 'State', 'Pool · priority', 'Primary', 'Backup', 'Notes'];

// placementSummary lists a replica's distinct nodes with their AZ.
function placementSummary(replica, azOf, role) {
  if (!replica) return h('span', { class: 'where muted', data: { role } }, role === 'backup' ? 'none requested' : '–');
  const ids = [...new Set(replica.jobs.map((j) => j.nodeId).filter(Boolean))];
  return h('span', { class: 'where', data: { role } },
    ids.length ? ids.map((id, i) => [i ? ', ' : '', h('span', { class: 'mono' }, id),
      azOf[id] ? h('span', { class: 'muted' }, ` (${azOf[id]})`) : ''])
      : h('span', { class: 'muted' }, 'unplaced'),
    replica.state && replica.state !== 'placed' ? [' ', badge(replica.state, statusKind(replica.state))] : '');
}

function needs(job) {
  if (!job) return '';
  const r = job.requirements || {};
  const parts = [`${num(r.capacity)} cap`];
  if (r.cores) parts.push(`${r.cores} cores`);
  if (r.gpuCapacity) parts.push(`GPU ${num(r.gpuCapacity)}${r.gpuModel ? ` ${r.gpuModel}` : ''}`);
  if (r.exclusiveGpus) parts.push(`${r.exclusiveGpus} whole GPU${r.exclusiveGpus > 1 ? 's' : ''}`);
  for (const c of r.capabilities || []) parts.push(`${c.count}× ${c.name}`);
  return parts.join(' · ');
}

function gpuText(j) {
  if (j.gpu) return `#${j.gpu.index} × ${num(j.gpu.capacity)}`;
  if (j.gpus && j.gpus.length) return `#${j.gpus.join(', #')} (whole)`;
  return '–';
}

function replicaTable(b, replica, azOf) {
  const jobs = new Map((b.jobs || []).map((j) => [j.name, j]));
  const label = `${replica.role === 'primary' ? 'Primary' : 'Backup'} replica`;
  return h('div', { data: { replica: replica.role } },
    h('h3', {}, label, ' ', badge(replica.state, statusKind(replica.state)),
      replica.epoch ? h('span', { class: 'muted' }, ` epoch ${replica.epoch}`) : ''),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Job', 'Needs', 'Node', 'AZ', 'Cores', 'GPU', 'Status'].map((c) => h('th', {}, c)))),
      h('tbody', {}, replica.jobs.map((j) => h('tr', { data: { job: j.name } },
        h('td', { class: 'mono' }, j.name), h('td', { class: 'small' }, needs(jobs.get(j.name))),
        h('td', { class: 'mono' }, j.nodeId || '–'), h('td', {}, azOf[j.nodeId] || '–'),
        h('td', { class: 'mono' }, j.cores && j.cores.length ? j.cores.join(',') : '–'),
        h('td', { class: 'mono' }, gpuText(j)),
        h('td', {}, j.status ? badge(j.status, statusKind(j.status)) : '–'))))));
}

function explainBlock(ex) {
  const filtered = Object.keys(ex.filtered || {}).sort().map((k) => chip(`${k}: ${ex.filtered[k]}`));
  const miss = ex.nearestMiss;
  return h('div', { class: 'explain' },
    h('h3', {}, 'Why it is not placed'),
    h('p', {}, `${ex.nodesEvaluated} nodes evaluated; removed by stage: `, filtered.length ? filtered : 'none'),
    miss ? h('p', {}, 'Nearest miss: ', h('span', { class: 'mono' }, miss.nodeId), ` stopped at ${miss.stage}: ${miss.detail}`) : null);
}

function details(b, azOf, refresh) {
  const del = h('button', { type: 'button', class: 'danger small', data: { action: 'delete' } }, 'Delete');
  del.disabled = b.state === 'deleting';
  del.addEventListener('click', () => remove(b, refresh));
  const tags = Object.keys(b.tags || {}).sort().map((k) => chip(`${k}=${b.tags[k]}`));
  return h('div', { class: 'bundle-body' },
    (b.replicas || []).map((r) => replicaTable(b, r, azOf)),
    (b.replicas || []).length ? null : h('p', { class: 'muted' }, 'No replica is placed yet.'),
    b.degradations && b.degradations.length ? h('div', {}, h('h3', {}, 'Degradations'),
      h('ul', {}, b.degradations.map((d) => h('li', { class: 'degradation' },
        h('span', { class: 'mono' }, d.code), `: ${d.message}`, d.since ? h('span', { class: 'muted' }, ` (since ${ago(d.since)})`) : ''))))
      : null,
    b.explain ? explainBlock(b.explain) : null,
    h('div', { class: 'small muted' },
      `created at index ${b.createIndex}, modified at ${b.modifyIndex}, epoch ${b.epoch}`,
      b.startAt ? ` · starts ${b.startAt}` : '', b.stopAt ? ` · stops ${b.stopAt}` : '',
      tags.length ? [' · tags ', tags] : ''),
    h('div', { class: 'bundle-actions' }, del));
}

async function remove(b, refresh) {
  const ok = await confirmAction(`Delete ${b.id}`,
    `Delete bundle ${b.id}? Its jobs are stopped on every node, then it is removed.`, 'Delete');
  if (!ok) return;
  await attempt(`Delete ${b.id}`, () => api('DELETE', `/v1/bundles/${encodeURIComponent(b.id)}`));
  refresh();
}

function bundleRow(b, azOf, open, refresh) {
  const primary = (b.replicas || []).find((r) => r.role === 'primary');
  const backup = (b.replicas || []).find((r) => r.role === 'backup');
  const degraded = (b.degradations || []).length;
  const el = h('details', { class: 'bundle', data: { bundleId: b.id } },
    h('summary', {},
      h('span', { class: 'id mono' }, b.id),
      h('span', { class: 'state' }, badge(b.state, statusKind(b.state))),
      h('span', { class: 'small' }, `${b.pool} · ${b.priority || 'silver'}`),
      placementSummary(primary, azOf, 'primary'),
      placementSummary(backup || (b.resilience ? { jobs: [], state: 'pending' } : null), azOf, 'backup'),
      h('span', { class: 'small' }, degraded ? badge(`${degraded} degradation${degraded > 1 ? 's' : ''}`, 'warn') : '',
        b.explain ? badge('see why', 'bad') : '')),
    details(b, azOf, refresh));
  el.open = open;
  return el;
}

export function mount(root) {
  const filter = h('input', { type: 'search', placeholder: 'Filter by id, state, pool, node or tag', id: 'bundle-filter' });
  const summary = h('span', { class: 'muted', id: 'bundles-summary' });
  const body = h('div', { id: 'bundle-list' }, h('p', { class: 'muted' }, 'Loading…'));
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Bundles'), summary, h('span', { class: 'spacer' }), filter), body);
  const open = new Set(); // expanded bundles survive refreshes
  let last = null;
  const render = () => {
    if (!last) return;
    const q = filter.value.trim().toLowerCase();
    const shown = last.bundles.filter((b) => !q || JSON.stringify([b.id, b.state, b.pool, b.tags, b.replicas]).toLowerCase().includes(q));
    summary.textContent = `${last.bundles.length} bundles${q ? `, ${shown.length} shown` : ''}`;
    const rows = shown.sort((a, b) => a.id.localeCompare(b.id)).map((b) => {
      const el = bundleRow(b, last.azOf, open.has(b.id), load);
      el.addEventListener('toggle', () => (el.open ? open.add(b.id) : open.delete(b.id)));
      return el;
    });
    body.replaceChildren(...(rows.length
      ? [h('div', { class: 'bundle-head-row' }, COLUMNS.map((c) => h('span', {}, c))), ...rows]
      : [h('p', { class: 'empty' }, q ? 'No bundle matches the filter.' : 'No bundles. Submit one with `amserver bundle submit`.')]));
  };
  const load = async () => {
    const ok = await attempt('Bundles', async () => {
      const [bundles, nodes] = await Promise.all([api('GET', '/v1/bundles'), api('GET', '/v1/nodes')]);
      const azOf = {};
      for (const n of nodes) azOf[n.id] = (n.labels || {}).az || '';
      last = { bundles, azOf };
      render();
    });
    if (!ok && !last) body.replaceChildren(unavailable('the bundles'));
  };
  filter.addEventListener('input', render);
  return poll(load, REFRESH_MS);
}
