// One bundle: its replicas and where each job runs (node, AZ, cores, GPU,
// status, the worker's message), why it is degraded or unplaceable (its
// degradations and the placer's explanation), its tags, a delete action,
// and the logs of a chosen job (logs.js). It follows the bundle with a
// blocking query.
import { api, attempt, h, badge, chip, num, ago, idLink, statusKind, confirmAction, watch, withQuery } from './app.js';
import { logsPanel } from './logs.js';

export const title = 'Bundle';

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

// exitText is a job's status, with a batch job's exit code and restarts.
function exitText(j) {
  if (j.exitCode === undefined) return j.status;
  return `${j.status} ${j.exitCode}` + (j.attempts ? ` (${j.attempts} restart${j.attempts > 1 ? 's' : ''})` : '');
}

// messageRow is what the job's worker said with its status (why it
// failed), under the job across the table: it can run to many lines.
function messageRow(j) {
  if (!j.message) return null;
  return h('tr', { class: 'job-message', data: { jobMessage: j.name } },
    h('td', { colspan: 7 }, h('pre', { class: 'job-message' }, j.message)));
}

function replicaTable(b, replica, azOf) {
  const jobs = new Map((b.jobs || []).map((j) => [j.name, j]));
  const label = replica.role === 'replica' ? `Replica ${replica.index}`
    : `${replica.role === 'primary' ? 'Primary' : 'Backup'} replica`;
  return h('div', { class: 'panel', data: { replica: replica.role } },
    h('h2', {}, label, ' ', badge(replica.state, statusKind(replica.state)),
      replica.epoch ? h('span', { class: 'muted' }, ` epoch ${replica.epoch}`) : ''),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Job', 'Needs', 'Node', 'AZ', 'Cores', 'GPU', 'Status'].map((c) => h('th', {}, c)))),
      h('tbody', {}, replica.jobs.map((j) => [h('tr', { data: { job: j.name } },
        h('td', { class: 'mono' }, j.name), h('td', { class: 'small' }, needs(jobs.get(j.name))),
        h('td', {}, j.nodeId ? idLink('nodes', j.nodeId) : '–'), h('td', {}, azOf[j.nodeId] || '–'),
        h('td', { class: 'mono' }, j.cores && j.cores.length ? j.cores.join(',') : '–'),
        h('td', { class: 'mono' }, gpuText(j)),
        h('td', {}, j.status ? badge(exitText(j), statusKind(j.status)) : '–')), messageRow(j)]))));
}

function explainBlock(ex) {
  const filtered = Object.keys(ex.filtered || {}).sort().map((k) => chip(`${k}: ${ex.filtered[k]}`));
  const miss = ex.nearestMiss;
  return h('div', { class: 'panel explain', id: 'bundle-explain' },
    h('h2', {}, 'Why it is not placed'),
    h('p', {}, `${ex.nodesEvaluated} nodes evaluated; removed by stage: `, filtered.length ? filtered : 'none'),
    miss ? h('p', {}, 'Nearest miss: ', idLink('nodes', miss.nodeId), ` stopped at ${miss.stage}: ${miss.detail}`) : null);
}

function degradations(b) {
  if (!(b.degradations || []).length) return null;
  return h('div', { class: 'panel', id: 'bundle-degradations' }, h('h2', {}, 'Why it is degraded'),
    h('ul', {}, b.degradations.map((d) => h('li', { class: 'degradation' },
      h('span', { class: 'mono' }, d.code), `: ${d.message}`, d.since ? h('span', { class: 'muted' }, ` (since ${ago(d.since)})`) : ''))));
}

function head(b) {
  const del = h('button', { type: 'button', class: 'danger small', data: { action: 'delete' } }, 'Delete');
  del.disabled = b.state === 'deleting';
  del.addEventListener('click', () => remove(b));
  const tags = Object.keys(b.tags || {}).sort().map((k) => chip(`${k}=${b.tags[k]}`));
  return h('div', { class: 'panel' },
    h('div', { class: 'view-head' }, h('h1', { class: 'mono', id: 'bundle-id' }, b.id),
      h('span', { class: 'state', id: 'bundle-state' }, badge(b.state, statusKind(b.state))),
      h('span', { class: 'spacer' }), del),
    h('dl', { class: 'kv' },
      h('dt', {}, 'pool · priority'), h('dd', {}, `${b.pool} · ${b.effectivePriority || b.priority || 'silver'}`),
      h('dt', {}, 'resilience'), h('dd', {}, b.resilience
        ? Object.entries(b.resilience).map(([k, v]) => `${k}=${v}`).join(' ') : 'none (a primary only)'),
      h('dt', {}, 'epoch'), h('dd', {}, b.epoch),
      h('dt', {}, 'indexes'), h('dd', {}, `created ${b.createIndex}, modified ${b.modifyIndex}`),
      b.startAt ? [h('dt', {}, 'starts'), h('dd', {}, b.startAt)] : null,
      b.stopAt ? [h('dt', {}, 'stops'), h('dd', {}, b.stopAt)] : null,
      h('dt', {}, 'tags'), h('dd', { id: 'bundle-tags' }, tags.length ? tags : '–')));
}

async function remove(b) {
  const ok = await confirmAction(`Delete ${b.id}`,
    `Delete bundle ${b.id}? Its jobs are stopped on every node, then it is removed.`, 'Delete');
  if (!ok) return;
  await attempt(`Delete ${b.id}`, () => api('DELETE', `/v1/bundles/${encodeURIComponent(b.id)}`));
}

// azOf reads the AZ of the bundle's nodes: one filtered page of nodes.
async function azOf(b) {
  const ids = [...new Set((b.replicas || []).flatMap((r) => r.jobs.map((j) => j.nodeId)).filter(Boolean))];
  if (!ids.length) return {};
  const filter = `node.id in ${JSON.stringify(ids)}`;
  const nodes = await api('GET', withQuery('/v1/nodes', { filter, per_page: 1000 })) || [];
  return Object.fromEntries(nodes.map((n) => [n.id, (n.labels || {}).az || '']));
}

export function mount(root, id) {
  const body = h('div', { id: 'bundle-page' }, h('p', { class: 'muted' }, 'Loading…'));
  // The logs panel lives beside the part each change redraws, so a
  // follow goes on while the bundle changes.
  const logs = logsPanel();
  root.append(h('p', { class: 'crumbs' }, h('a', { href: '#/bundles' }, 'Bundles'), ` / ${id}`), body, logs.panel);
  let zones = {};
  const stop = watch('Bundle', `/v1/bundles/${encodeURIComponent(id)}`, async ({ body: b }) => {
    try {
      zones = await azOf(b);
    } catch {
      // the AZ column is a nicety; the bundle itself is shown regardless
    }
    body.replaceChildren(...[head(b),
      (b.replicas || []).map((r) => replicaTable(b, r, zones)),
      (b.replicas || []).length ? null : h('p', { class: 'muted' }, 'No replica is placed yet.'),
      degradations(b),
      b.explain ? explainBlock(b.explain) : null].flat().filter(Boolean));
    logs.update(b);
  }, {
    onError: (e) => body.replaceChildren(h('p', { class: 'empty', id: 'bundle-missing' },
      e.code === 'notFound' ? `Bundle ${id} does not exist (or was deleted).` : `Could not load bundle ${id}: ${e.message}`)),
  });
  return () => {
    stop();
    logs.stop();
  };
}
