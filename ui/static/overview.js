// Cluster overview: the leader, Raft indexes, the servers of the Raft
// configuration, gossip members, totals, and the latest events.
import { api, attempt, h, badge, chip, ago, statusKind, poll, unavailable } from './app.js';
import { subscribe, eventTable } from './events.js';

export const title = 'Overview';

const REFRESH_MS = 3000;

async function load() {
  const [raft, peers, members, nodes, bundles] = await Promise.all([
    api('GET', '/v1/operator/raft'),
    api('GET', '/v1/status/peers'),
    api('GET', '/v1/members'),
    api('GET', '/v1/nodes'),
    api('GET', '/v1/bundles'),
  ]);
  return { raft, peers, members, nodes, bundles };
}

function count(list, key) {
  const out = {};
  for (const x of list) out[x[key]] = (out[x[key]] || 0) + 1;
  return out;
}

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.map(([k, v, id]) => [h('dt', {}, k), h('dd', { id }, v)]));
}

function countBadges(counts) {
  const keys = Object.keys(counts).sort();
  if (!keys.length) return [h('span', { class: 'muted' }, 'none')];
  return keys.map((k) => [badge(`${counts[k]} ${k}`, statusKind(k)), ' ']);
}

function cards(d) {
  const leader = d.raft.leader;
  return h('div', { class: 'cards' },
    h('div', { class: 'card' },
      h('div', { class: 'label' }, 'Leader'),
      h('div', { class: 'big', id: 'leader-id' }, leader ? leader.id : 'none'),
      leader ? kv([['HTTP', leader.httpAddr || '–'], ['Raft', leader.raftAddr || '–']])
        : h('p', { class: 'muted' }, 'No leader is known: writes and consistent reads wait.')),
    h('div', { class: 'card', id: 'raft-indexes' },
      h('div', { class: 'label' }, `Raft (as ${d.raft.serverId} sees it)`),
      kv([['state', d.raft.state], ['term', d.raft.term],
        ['last index', d.raft.lastIndex, 'raft-last-index'], ['commit index', d.raft.commitIndex],
        ['applied index', d.raft.appliedIndex], ['last snapshot', d.raft.lastSnapshotIndex]])),
    h('div', { class: 'card' },
      h('div', { class: 'label' }, 'Nodes'),
      h('div', { class: 'big' }, d.nodes.length),
      h('div', {}, countBadges(count(d.nodes, 'status')))),
    h('div', { class: 'card' },
      h('div', { class: 'label' }, 'Bundles'),
      h('div', { class: 'big' }, d.bundles.length),
      h('div', {}, countBadges(count(d.bundles, 'state')))));
}

function serversPanel(peers) {
  return h('div', { class: 'panel' },
    h('h2', {}, `Servers (${peers.length})`),
    h('table', { id: 'servers' },
      h('thead', {}, h('tr', {}, h('th', {}, 'ID'), h('th', {}, 'Raft address'), h('th', {}, 'Suffrage'), h('th', {}, 'Role'))),
      h('tbody', {}, peers.map((p) => h('tr', { data: { server: p.id } },
        h('td', { class: 'mono' }, p.id), h('td', { class: 'mono' }, p.address),
        h('td', {}, p.suffrage), h('td', {}, p.leader ? badge('leader', 'ok') : badge('follower')))))));
}

function labelChips(labels) {
  return Object.keys(labels || {}).sort().map((k) => chip(`${k}=${labels[k]}`));
}

function membersPanel(members) {
  const sorted = members.slice().sort((a, b) => (a.role + a.name).localeCompare(b.role + b.name));
  return h('div', { class: 'panel' },
    h('h2', {}, `Gossip members (${members.length})`),
    h('table', { id: 'members' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Role'), h('th', {}, 'Status'),
        h('th', {}, 'Address'), h('th', {}, 'Labels'), h('th', {}, 'Last seen'))),
      h('tbody', {}, sorted.map((m) => h('tr', { data: { member: m.name } },
        h('td', { class: 'mono' }, m.name), h('td', {}, m.role),
        h('td', {}, badge(m.status, statusKind(m.status))), h('td', { class: 'mono' }, m.address),
        h('td', {}, labelChips(m.labels)), h('td', { class: 'muted' }, ago(m.lastSeen)))))));
}

export function mount(root) {
  const head = h('div', { class: 'view-head' }, h('h1', {}, 'Cluster overview'));
  const body = h('div', { id: 'overview-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const recent = h('div', { id: 'recent-events' });
  root.append(head, body, h('div', { class: 'panel' }, h('h2', {}, 'Latest events'), recent));
  let loaded = false;
  const stopPoll = poll(async () => {
    const ok = await attempt('Overview', async () => {
      const d = await load();
      body.replaceChildren(cards(d), serversPanel(d.peers), membersPanel(d.members));
    });
    loaded = loaded || ok;
    if (!loaded) body.replaceChildren(unavailable('the cluster state'));
  }, REFRESH_MS);
  const unsubscribe = subscribe((f) => recent.replaceChildren(eventTable(f.events.slice(-8))));
  return () => {
    stopPoll();
    unsubscribe();
  };
}
