// Core of the amserver UI: API access with the ACL token, error reporting,
// DOM building and the confirm dialog. Server-provided strings only ever
// reach the page as text nodes or attribute values, never as HTML.

const TOKEN_KEY = 'amserver.token';
export const TOKEN_HEADER = 'X-Amserver-Token';

// ApiError is an answer other than 2xx, with the API's error code.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function token() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return ''; // storage disabled: run without a token
  }
}

export function setToken(value) {
  try {
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  } catch (e) {
    reportError('Token', new Error(`cannot store the token: ${e.message}`));
  }
  window.dispatchEvent(new Event('amserver:token'));
}

// headers are the request headers every call sends.
export function headers(extra = {}) {
  const h = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) h[TOKEN_HEADER] = t;
  return h;
}

// api calls the JSON API of the serving server and returns the decoded
// body (null when there is none). Failures throw an ApiError.
export async function api(method, path, { signal } = {}) {
  return (await apiResponse(method, path, { signal })).body;
}

// apiResponse is api with what the headers say: the state index a read
// answered at, and for a list the token of its next page ('' on the last).
export async function apiResponse(method, path, { signal } = {}) {
  let resp;
  try {
    resp = await fetch(path, { method, headers: headers(), signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', `cannot reach the server (${e.message})`);
  }
  if (!resp.ok) throw await errorFrom(resp);
  const text = await resp.text();
  return {
    body: text ? JSON.parse(text) : null,
    index: Number(resp.headers.get('X-Amserver-Index')) || 0,
    next: resp.headers.get('X-Amserver-NextToken') || '',
  };
}

// withQuery appends query parameters (skipping empty ones) to a path.
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== '' && v !== null && v !== undefined && v !== false) q.set(k, v === true ? 'true' : String(v));
  }
  const s = q.toString();
  if (!s) return path;
  return path + (path.includes('?') ? '&' : '?') + s;
}

// watch reads path now and then again each time what it reads changes: a
// blocking query (?index=&wait=) instead of a poll, so an idle page costs
// the servers one parked request. onData gets each answer; a failure is
// reported under where and retried after a pause. It returns the stop.
export function watch(where, path, onData, { minGapMs = 300, onError } = {}) {
  const ctl = new AbortController();
  (async () => {
    let index = 0;
    while (!ctl.signal.aborted) {
      const started = Date.now();
      try {
        const r = await apiResponse('GET', index ? withQuery(path, { index, wait: '30s' }) : path, { signal: ctl.signal });
        if (ctl.signal.aborted) return;
        index = r.index;
        clearError(where);
        onData(r);
      } catch (e) {
        if (ctl.signal.aborted || e.name === 'AbortError') return;
        if (onError) onError(e);
        else reportError(where, e);
        // A refusal (a bad filter, a missing object, no token) stays one
        // until something changes, and a change remounts the view.
        if (e.status >= 400 && e.status < 500 && e.status !== 429) return;
        index = 0;
        await pause(3000, ctl.signal);
        continue;
      }
      // A burst of writes wakes the query again at once: coalesce them.
      await pause(Math.max(0, minGapMs - (Date.now() - started)), ctl.signal);
    }
  })();
  return () => ctl.abort();
}

export function pause(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// link is an in-page link to a view (#/bundles/id).
export function link(hash, text, props = {}) {
  return h('a', { href: hash, ...props }, text);
}

export function idLink(kind, id) {
  return link(`#/${kind}/${encodeURIComponent(id)}`, id, { class: 'mono', data: { link: kind } });
}

// errorFrom reads {"error":{"code","message","errors"}}; a body that is not
// JSON keeps the status line. 401 and 403 ask for a token.
export async function errorFrom(resp) {
  let code = `http${resp.status}`;
  let message = resp.statusText || `HTTP ${resp.status}`;
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
      const details = (body.error.errors || []).map((f) => f.message).filter(Boolean);
      if (details.length) message += ` (${details.join('; ')})`;
    }
  } catch {
    // not JSON: the status line says enough
  }
  const err = new ApiError(resp.status, code, message);
  if (resp.status === 401 || resp.status === 403) askForToken(err);
  return err;
}

// Errors are shown until dismissed, or until the same context succeeds;
// a repeated error (a poll failing every few seconds) updates one banner.
const banners = new Map();

export function reportError(where, err) {
  if (err && err.name === 'AbortError') return;
  const code = err && err.code ? err.code : 'error';
  const msg = err && err.message ? err.message : String(err);
  let b = banners.get(where);
  if (!b) {
    b = {
      count: 0,
      el: h('div', { class: 'error', role: 'alert', 'data-where': where }),
    };
    banners.set(where, b);
    document.getElementById('errors').append(b.el);
  }
  b.count++;
  const dismiss = h('button', { type: 'button', class: 'ghost', title: 'Dismiss' }, '×');
  dismiss.addEventListener('click', () => clearError(where));
  const parts = [
    h('span', { class: 'where' }, where),
    h('span', { class: 'code' }, code),
    h('span', { class: 'msg' }, msg),
  ];
  if (b.count > 1) parts.push(h('span', { class: 'count' }, `×${b.count}, last ${clock(new Date())}`));
  b.el.replaceChildren(...parts, dismiss);
}

export function clearError(where) {
  const b = banners.get(where);
  if (b) {
    b.el.remove();
    banners.delete(where);
  }
}

// attempt runs fn, reporting its failure under where and clearing an
// earlier failure on success. It resolves to false on failure.
export async function attempt(where, fn) {
  try {
    await fn();
    clearError(where);
    return true;
  } catch (e) {
    reportError(where, e);
    return false;
  }
}

// unavailable stands in for a view's content until its first load works.
export function unavailable(what) {
  return h('p', { class: 'empty' }, `Could not load ${what}; the error is shown above. Retrying every few seconds.`);
}

// mark records a timing (performance.mark) that the browser tests read.
export function mark(name) {
  try {
    performance.mark(name);
  } catch {
    // timings are best effort
  }
}

export function askForToken(err) {
  const panel = document.getElementById('token-panel');
  document.getElementById('token-reason').textContent = err
    ? `The server answered ${err.status} ${err.code}: ${err.message}`
    : '';
  panel.hidden = false;
  document.getElementById('token-input').focus();
}

// h builds an element. Children that are not nodes become text nodes.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'data') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function badge(text, kind = '') {
  return h('span', { class: `badge ${kind}`.trim() }, text);
}

export function chip(text) {
  return h('span', { class: 'chip' }, text);
}

// num shows an API quantity: integers as is, fractions to two places.
export function num(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '–';
  return String(Math.round(n * 100) / 100);
}

export function clock(d) {
  return d.toLocaleTimeString([], { hour12: false });
}

// ago says how long ago an RFC 3339 instant was.
export function ago(iso) {
  if (!iso) return '–';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (!isFinite(s)) return '–';
  if (s < 2) return 'just now';
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

export function statusKind(status) {
  return { ready: 'ok', placed: 'ok', running: 'ok', alive: 'ok', suspect: 'warn', degraded: 'warn',
    pending: 'info', scheduled: 'info', assigned: 'info', stopping: 'warn', deleting: 'warn',
    down: 'bad', failed: 'bad', dead: 'bad', unplaceable: 'bad', left: '', stopped: '', complete: 'ok', exited: '' }[status] || '';
}

// confirmAction asks before a change; it resolves to true on Confirm.
export function confirmAction(title, text, okLabel = 'Confirm') {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  ok.textContent = okLabel;
  return new Promise((resolve) => {
    const done = (answer) => {
      ok.removeEventListener('click', onOK);
      cancel.removeEventListener('click', onCancel);
      dlg.removeEventListener('close', onCancel);
      if (dlg.open) dlg.close();
      resolve(answer);
    };
    const onOK = () => done(true);
    const onCancel = () => done(false);
    ok.addEventListener('click', onOK);
    cancel.addEventListener('click', onCancel);
    dlg.addEventListener('close', onCancel); // Escape
    dlg.showModal();
    cancel.focus();
  });
}
