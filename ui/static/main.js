// Entry point: hash routing between the views, the token panel, the
// connection indicator in the top bar and the event feed.
import { api, askForToken, setToken, token, attempt } from './app.js';
import * as overview from './overview.js';
import * as nodes from './nodes.js';
import * as bundles from './bundles.js';
import * as events from './events.js';

const views = { overview, nodes, bundles, events };
let stopView = null;

// route mounts the view the URL fragment names (#/nodes); a view's mount
// returns the function that stops its refreshing.
function route() {
  const name = location.hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  const key = Object.hasOwn(views, name) ? name : 'overview';
  if (stopView) stopView();
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === key);
  }
  const root = document.getElementById('view');
  root.replaceChildren();
  root.dataset.view = key;
  document.title = `${views[key].title} · amserver`;
  stopView = views[key].mount(root);
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
