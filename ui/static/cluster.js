// The cluster: who leads, the Raft peers and indexes (as the answering
// server sees them), the gossip members with their status, and the latest
// events. Members and Raft are each server's own view (no blocking query
// exists for them): the page refreshes when the event feed reports a
// membership change, and every 10 s for the indexes and last-seen times.
import { api, attempt, h, badge, chip, ago, statusKind, unavailable } from './app.js';
import { subscribe, eventTable } from './events.js';

export const title = 'Cluster';

const REFRESH_MS = 10000;
const MEMBER_ROWS = 200; // rows shown; the counts cover every member
const MEMBERSHIP = new Set(['serverJoined', 'serverRemoved', 'nodeStatus']);

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.map(([k, v, id]) => [h('dt', {}, k), h('dd', { id }, v)]));
}

function cards(raft, members) {
  const leader = raft.leader;
  const counts = {};
  for (const m of members) counts[`${m.role} ${m.status}`] = (counts[`${m.role} ${m.status}`] || 0) + 1;
  return h('div', { class: 'cards' },
    h('div', { class: 'card' },
      h('div', { class: 'label' }, 'Leader'),
      h('div', { class: 'big', id: 'leader-id' }, leader ? leader.id : 'none'),
      leader ? kv([['HTTP', leader.httpAddr || '–'], ['Raft', leader.raftAddr || '–']])
        : h('p', { class: 'muted' }, 'No leader is known: writes and consistent reads wait.')),
    h('div', { class: 'card', id: 'raft-indexes' },
      h('div', { class: 'label' }, `Raft (as ${raft.serverId} sees it)`),
      kv([['state', raft.state], ['term', raft.term],
        ['last index', raft.lastIndex, 'raft-last-index'], ['commit index', raft.commitIndex],
        ['applied index', raft.appliedIndex], ['last snapshot', raft.lastSnapshotIndex]])),
    h('div', { class: 'card', id: 'member-counts' },
      h('div', { class: 'label' }, 'Gossip members'),
      h('div', { class: 'big' }, members.length),
      h('div', {}, Object.keys(counts).sort().map((k) => [badge(`${counts[k]} ${k}`, statusKind(k.split(' ')[1])), ' ']))));
}

function serversPanel(peers) {
  return h('div', { class: 'panel' },
    h('h2', {}, `Raft peers (${peers.length})`),
    h('table', { id: 'servers' },
      h('thead', {}, h('tr', {}, h('th', {}, 'ID'), h('th', {}, 'Raft address'), h('th', {}, 'Suffrage'), h('th', {}, 'Role'),
        h('th', { title: "This server's gossip view: Raft keeps a dead server in its configuration as a follower" }, 'Status'))),
      h('tbody', {}, peers.map((p) => h('tr', { data: { server: p.id } },
        h('td', { class: 'mono' }, p.id), h('td', { class: 'mono' }, p.address),
        h('td', {}, p.suffrage), h('td', {}, p.leader ? badge('leader', 'ok') : badge('follower')),
        h('td', { class: 'peer-status' }, badge(p.status || 'unknown', statusKind(p.status))))))));
}

function membersPanel(members, query) {
  const q = query.trim().toLowerCase();
  const sorted = members.filter((m) => !q || [m.name, m.role, m.status, m.address, ...Object.values(m.labels || {})]
    .some((s) => s && s.toLowerCase().includes(q)))
    .sort((a, b) => (a.role + a.name).localeCompare(b.role + b.name));
  const shown = sorted.slice(0, MEMBER_ROWS);
  return [
    h('table', { id: 'members' },
      h('thead', {}, h('tr', {}, ['Name', 'Role', 'Status', 'Address', 'Labels', 'Last seen'].map((c) => h('th', {}, c)))),
      h('tbody', {}, shown.map((m) => h('tr', { data: { member: m.name } },
        h('td', { class: 'mono' }, m.name), h('td', {}, m.role),
        h('td', {}, badge(m.status, statusKind(m.status))), h('td', { class: 'mono' }, m.address),
        h('td', {}, Object.keys(m.labels || {}).sort().map((k) => chip(`${k}=${m.labels[k]}`))),
        h('td', { class: 'muted' }, ago(m.lastSeen)))))),
    sorted.length > shown.length ? h('p', { class: 'muted small' }, `${sorted.length - shown.length} more; narrow the filter`) : null,
  ];
}

export function mount(root) {
  const body = h('div', { id: 'overview-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const memberFilter = h('input', { type: 'search', id: 'member-filter', placeholder: 'Filter members by name, role, status, label' });
  const memberList = h('div', { id: 'member-list' });
  const recent = h('div', { id: 'recent-events' });
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Cluster')), body,
    h('div', { class: 'panel' }, h('div', { class: 'view-head' }, h('h2', {}, 'Gossip members'), h('span', { class: 'spacer' }), memberFilter), memberList),
    h('div', { class: 'panel' }, h('h2', {}, 'Latest events'), recent));
  let members = [];
  let loaded = false;
  let timer = null;
  let stopped = false;
  const load = async () => {
    clearTimeout(timer);
    const ok = await attempt('Cluster', async () => {
      const [raft, peers, ms] = await Promise.all([
        api('GET', '/v1/operator/raft'), api('GET', '/v1/status/peers'), api('GET', '/v1/members')]);
      members = ms || [];
      body.replaceChildren(cards(raft, members), serversPanel(peers));
      memberList.replaceChildren(...membersPanel(members, memberFilter.value));
    });
    loaded = loaded || ok;
    if (!loaded) body.replaceChildren(unavailable('the cluster state'));
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  };
  memberFilter.addEventListener('input', () => memberList.replaceChildren(...membersPanel(members, memberFilter.value)));
  let seen = 0;
  let soon = null;
  const unsubscribe = subscribe((f) => {
    recent.replaceChildren(eventTable(f.events.slice(-8)));
    // A membership event refreshes the page (once for a burst of them).
    const fresh = f.events.filter((e) => e.index > seen);
    if (seen && fresh.some((e) => MEMBERSHIP.has(e.type)) && !soon) soon = setTimeout(() => { soon = null; load(); }, 1000);
    seen = f.lastIndex;
  });
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearTimeout(soon);
    unsubscribe();
  };
}
