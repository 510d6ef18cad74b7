// Entry point: hash routing between the views (#/bundles, #/bundles/<id>,
// #/nodes/<id>, …), the token panel, the connection indicator in the top
// bar and the event feed.
import { api, askForToken, setToken, token, attempt } from './app.js';
import * as cluster from './cluster.js';
import * as nodes from './nodes.js';
import * as node from './node.js';
import * as bundles from './bundles.js';
import * as bundle from './bundle.js';
import * as events from './events.js';

// views by the first part of the fragment; with an id, the second entry.
const views = {
  cluster: [cluster], overview: [cluster], nodes: [nodes, node], bundles: [bundles, bundle], events: [events],
};
let stopView = null;

// route mounts the view the URL fragment names; a view's mount returns
// the function that stops its live updates.
function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('?')[0].split('/');
  const key = Object.hasOwn(views, parts[0]) ? parts[0] : 'cluster';
  const id = parts.length > 1 && parts[1] ? decodeURIComponent(parts.slice(1).join('/')) : '';
  const view = id && views[key][1] ? views[key][1] : views[key][0];
  const nav = key === 'overview' ? 'cluster' : key;
  if (stopView) stopView();
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === nav);
  }
  const root = document.getElementById('view');
  root.replaceChildren();
  root.dataset.view = id ? `${nav}/item` : nav;
  document.title = `${id || view.title} · amserver`;
  stopView = view.mount(root, id);
}

function wireToken() {
  const panel = document.getElementById('token-panel');
  const input = document.getElementById('token-input');
  document.getElementById('token-button').addEventListener('click', () => {
    if (panel.hidden) askForToken(null);
    else panel.hidden = true;
  });
  document.getElementById('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault(); // never navigate: the token stays in this tab's storage
    setToken(input.value.trim());
    input.value = '';
    panel.hidden = true;
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    input.value = '';
  });
  const button = document.getElementById('token-button');
  const label = () => { button.textContent = token() ? 'Token ✓' : 'Token'; };
  label();
  window.addEventListener('amserver:token', label);
}

// watchLeader keeps the top bar's indicator current on every view. A new
// call (after a token change) supersedes the running chain.
let leaderRun = 0;
async function watchLeader() {
  const run = ++leaderRun;
  const conn = document.getElementById('conn');
  const ok = await attempt('Leader', async () => {
    try {
      const l = await api('GET', '/v1/status/leader');
      conn.textContent = `leader ${l.id}`;
      conn.className = 'conn ok';
    } catch (e) {
      conn.textContent = e.code === 'noLeader' ? 'no leader' : e.status ? e.code : 'unreachable';
      conn.className = 'conn bad';
      throw e;
    }
  });
  if (run === leaderRun) setTimeout(() => { if (run === leaderRun) watchLeader(); }, ok ? 5000 : 3000);
}

// Every module loaded: boot.js sees this and keeps quiet.
window.__amserverBooted = true;
wireToken();
window.addEventListener('hashchange', route);
window.addEventListener('amserver:token', () => {
  route();
  events.startFeed();
  watchLeader();
});
route();
events.startFeed();
watchLeader();
