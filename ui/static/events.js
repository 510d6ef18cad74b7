// The live event feed: one NDJSON stream from GET /v1/events for the whole
// page, resumed from the last index seen after any error, and the Events
// view that shows it.
import { h, badge, clock, headers, errorFrom, reportError, clearError } from './app.js';

export const title = 'Events';

const MAX_EVENTS = 500;
const feed = { events: [], lastIndex: 0, state: 'connecting', detail: '' };
const listeners = new Set();
let controller = null;
let notifyTimer = null;

// subscribe calls fn with the feed now and after every change.
export function subscribe(fn) {
  listeners.add(fn);
  fn(feed);
  return () => listeners.delete(fn);
}

// Many lines arrive at once when the stream starts; render once for them.
function notify() {
  if (notifyTimer) return;
  notifyTimer = setTimeout(() => {
    notifyTimer = null;
    for (const fn of listeners) fn(feed);
  }, 50);
}

function setState(state, detail = '') {
  feed.state = state;
  feed.detail = detail;
  notify();
}

// startFeed (re)connects; called at start and when the token changes.
export function startFeed() {
  if (controller) controller.abort();
  controller = new AbortController();
  follow(controller.signal);
}

// REPLAY is how far back (in Raft indexes) a fresh page starts its feed:
// the latest events, not the whole log (up to 10,000 events) every time
// a browser opens the UI.
const REPLAY = 2000;

// startIndex is where a fresh feed begins: a little before the server's
// current index (0 when that cannot be read).
async function startIndex(signal) {
  try {
    const resp = await fetch('/v1/health', { headers: headers(), signal, cache: 'no-store' });
    if (!resp.ok) return 0;
    const health = await resp.json();
    return Math.max(0, (Number(health.index) || 0) - REPLAY);
  } catch {
    return 0;
  }
}

async function follow(signal) {
  let delay = 1000;
  if (!feed.lastIndex) feed.lastIndex = await startIndex(signal);
  while (!signal.aborted) {
    try {
      const resp = await fetch(`/v1/events?index=${feed.lastIndex}`, {
        headers: headers({ Accept: 'application/x-ndjson' }), signal, cache: 'no-store',
      });
      if (!resp.ok) throw await errorFrom(resp);
      const served = Number(resp.headers.get('X-Amserver-Index'));
      if (served && served < feed.lastIndex) {
        // The cluster's state is younger than what we saw (a restore or a
        // new dev cluster): start over, or we would skip all its events.
        await resp.body.cancel();
        Object.assign(feed, { events: [], lastIndex: 0 });
        continue;
      }
      clearError('Event feed');
      setState('live');
      delay = 1000;
      await readLines(resp.body, onLine);
      setState('reconnecting', 'the server ended the stream');
    } catch (e) {
      if (signal.aborted) return;
      reportError('Event feed', e);
      if (e.status === 401 || e.status === 403) {
        setState('stopped', 'waiting for a token');
        return; // a new token restarts the feed
      }
      setState('reconnecting', e.message);
    }
    await sleep(delay, signal);
    delay = Math.min(delay * 2, 15000);
  }
}

// readLines splits the stream into lines; blank lines are keep-alives.
async function readLines(body, onLine) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) onLine(line);
    }
  }
  if (buf.trim()) onLine(buf);
}

function onLine(line) {
  let ev;
  try {
    ev = JSON.parse(line);
  } catch {
    reportError('Event feed', new Error(`unreadable event line: ${line.slice(0, 120)}`));
    return;
  }
  if (typeof ev.index !== 'number' || ev.index <= feed.lastIndex) return; // seen before a reconnect
  feed.lastIndex = ev.index;
  feed.events.push(ev);
  if (feed.events.length > MAX_EVENTS) feed.events.splice(0, feed.events.length - MAX_EVENTS);
  notify();
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

const typeKind = {
  bundlePlaced: 'ok', healed: 'ok', bundleCreated: 'info', serverJoined: 'info',
  degraded: 'warn', failover: 'warn', promoted: 'warn', evicted: 'warn', nodeDrained: 'warn', drainWaits: 'warn',
  bundleUnplaceable: 'bad', serverRemoved: 'bad',
};

// eventRows renders events newest first.
export function eventRows(list) {
  return list.slice().reverse().map((ev) => h('tr', { data: { index: ev.index, type: ev.type } },
    h('td', { class: 'num mono' }, ev.index),
    h('td', { class: 'time' }, ev.time ? clock(new Date(ev.time)) : '–'),
    h('td', {}, badge(ev.type, typeKind[ev.type] || '')),
    h('td', { class: 'mono' }, ev.bundleId || ''),
    h('td', { class: 'mono' }, ev.nodeId || ''),
    h('td', {}, ev.message || ''),
  ));
}

export function eventTable(list) {
  if (!list.length) return h('p', { class: 'empty' }, 'No events yet.');
  return h('table', { class: 'events' },
    h('thead', {}, h('tr', {},
      h('th', { class: 'num' }, 'Index'), h('th', {}, 'Time'), h('th', {}, 'Type'),
      h('th', {}, 'Bundle'), h('th', {}, 'Node'), h('th', {}, 'Message'))),
    h('tbody', {}, eventRows(list)));
}

function matches(ev, q) {
  if (!q) return true;
  return [ev.type, ev.bundleId, ev.nodeId, ev.message].some((s) => s && s.toLowerCase().includes(q));
}

export function mount(root) {
  const state = h('span', { class: 'feed-state', id: 'feed-state' });
  const filter = h('input', { type: 'search', placeholder: 'Filter by type, bundle, node, text', id: 'event-filter' });
  const body = h('div', { class: 'panel', id: 'event-list' });
  root.append(h('div', { class: 'view-head' }, h('h1', {}, 'Events'), state, h('span', { class: 'spacer' }), filter), body);
  const render = (f) => {
    state.replaceChildren(badge(f.state, f.state === 'live' ? 'ok' : 'warn'),
      ` last index ${f.lastIndex}${f.detail ? ` · ${f.detail}` : ''} · showing the last ${MAX_EVENTS} at most`);
    const q = filter.value.trim().toLowerCase();
    body.replaceChildren(eventTable(f.events.filter((ev) => matches(ev, q))));
  };
  filter.addEventListener('input', () => render(feed));
  return subscribe(render);
}
