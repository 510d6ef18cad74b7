// Bundles: the servers' pages of bundle summaries, filtered by id prefix
// or a CEL expression, each linking to its bundle page.
import { h, badge, idLink, statusKind } from './app.js';
import { pagedList } from './listview.js';

export const title = 'Bundles';

const STATES = ['scheduled', 'pending', 'placed', 'degraded', 'unplaceable', 'deleting', 'complete', 'failed'];

// where lists a replica's nodes, or why it has none.
function where(bundle, role) {
  if (bundle.kind === 'service') {
    // A service's replicas are peers: the first column counts the complete ones.
    if (role !== 'primary') return h('td', { class: 'where muted', data: { role } }, 'none requested');
    const done = (bundle.replicas || []).filter((r) => r.state === 'placed').length;
    return h('td', { class: 'where', data: { role } }, `${done}/${bundle.wantReplicas} replicas`);
  }
  const r = (bundle.replicas || []).find((x) => x.role === role);
  if (!r) {
    const text = role === 'backup' && bundle.wantReplicas < 2 ? 'none requested' : '–';
    return h('td', { class: 'where muted', data: { role } }, text);
  }
  const nodes = r.nodes || [];
  return h('td', { class: 'where', data: { role } },
    nodes.length ? nodes.map((id, i) => [i ? ', ' : '', idLink('nodes', id)]) : h('span', { class: 'muted' }, 'unplaced'),
    r.state && r.state !== 'placed' ? [' ', badge(r.state, statusKind(r.state))] : '');
}

function notes(b) {
  const d = (b.degradations || []).length;
  return h('td', { class: 'small' },
    d ? badge(`${b.degradations.join(', ')}`, 'warn') : '',
    b.explained ? [' ', badge('see why', 'bad')] : '');
}

function row(b) {
  return h('tr', { data: { bundleId: b.id } },
    h('td', {}, idLink('bundles', b.id)),
    h('td', { class: 'state' }, badge(b.state, statusKind(b.state))),
    h('td', { class: 'small' }, `${b.pool} · ${b.effectivePriority || b.priority || 'silver'}` + (b.kind && b.kind !== 'resilient' ? ` · ${b.kind}` : '')),
    where(b, 'primary'),
    where(b, 'backup'),
    h('td', { class: 'num' }, b.jobs),
    notes(b),
    h('td', { class: 'num muted small' }, b.modifyIndex));
}

export function mount(root) {
  return pagedList(root, {
    name: 'bundles', title: 'Bundles', path: '/v1/bundles', variable: 'bundle', perPage: 50,
    placeholder: 'id prefix, or e.g. bundle.priority == "gold" && bundle.state == "placed"',
    columns: ['Bundle', 'State', 'Pool · priority', 'Primary', 'Backup', 'Jobs', 'Notes', 'Modified'],
    row,
    empty: 'No bundles. Submit one with `amserver bundle submit`.',
    select: { param: 'state', label: 'State', options: STATES },
  });
}
