// A paged list the servers filter: a search box (an id prefix, or a CEL
// expression over each entry), an optional narrowing select (state,
// status), a pager over the servers' page tokens, and live updates of the
// page shown through a blocking query, not a poll. However many objects
// the cluster holds, the page fetches one page.
import { h, withQuery, watch, mark, reportError } from './app.js';

const TYPING_MS = 300; // quiet time after typing before the query runs

// timings are what the browser tests read: when a list first rendered
// (ms since navigation) and how long the last query took to render.
window.__amserverTimings = window.__amserverTimings || {};

// isExpression tells a CEL filter from an id prefix: ids are plain words.
export function isExpression(text) {
  return /[=!<>()[\]."&|]/.test(text);
}

// pagedList mounts a list into root. cfg: name, path, variable (the CEL
// variable), perPage, columns, row(item) → <tr>, empty, placeholder, and
// select {param, label, options}. It returns the stop.
export function pagedList(root, cfg) {
  const search = h('input', { type: 'search', id: `${cfg.name}-search`, placeholder: cfg.placeholder, autocomplete: 'off' });
  const hint = h('span', { class: 'search-hint muted small', id: `${cfg.name}-hint` }, 'id prefix');
  const select = cfg.select ? h('select', { id: `${cfg.name}-${cfg.select.param}`, 'aria-label': cfg.select.label },
    h('option', { value: '' }, `any ${cfg.select.label.toLowerCase()}`),
    cfg.select.options.map((o) => h('option', { value: o }, o))) : null;
  const problem = h('div', { class: 'search-error', id: `${cfg.name}-error`, role: 'alert', hidden: true });
  const summary = h('span', { class: 'muted', id: `${cfg.name}-summary` });
  const body = h('div', { class: 'panel list-panel', id: `${cfg.name}-list` }, h('p', { class: 'muted' }, 'Loading…'));
  const prev = h('button', { type: 'button', class: 'ghost small', id: `${cfg.name}-prev` }, '← Previous');
  const next = h('button', { type: 'button', class: 'ghost small', id: `${cfg.name}-next` }, 'Next →');
  const pageNo = h('span', { class: 'muted small', id: `${cfg.name}-page` });
  root.append(
    h('div', { class: 'view-head' }, h('h1', {}, cfg.title), summary, h('span', { class: 'spacer' }), select, search),
    h('div', { class: 'search-line' }, hint, problem),
    body,
    h('div', { class: 'pager' }, prev, pageNo, next));

  const st = { tokens: [''], page: 0, next: '', stop: null, started: 0, first: true };
  const query = () => {
    const text = search.value.trim();
    const expr = text && isExpression(text);
    hint.textContent = !text ? 'id prefix, or a CEL expression over ' + cfg.variable
      : expr ? `CEL filter on ${cfg.variable}` : 'id prefix';
    const params = { per_page: cfg.perPage, next_token: st.tokens[st.page] };
    if (expr) params.filter = text;
    else if (text) params.prefix = text;
    if (select && select.value) params[cfg.select.param] = select.value;
    return withQuery(cfg.path, params);
  };
  const render = (r) => {
    st.next = r.next;
    const items = r.body || [];
    const rows = items.map(cfg.row);
    body.replaceChildren(rows.length
      ? h('table', { class: 'list', id: `${cfg.name}-table` },
        h('thead', {}, h('tr', {}, cfg.columns.map((c) => h('th', {}, c)))), h('tbody', {}, rows))
      : h('p', { class: 'empty' }, st.page || search.value.trim() || (select && select.value) ? `No ${cfg.name} on this page match.` : cfg.empty));
    problem.hidden = true;
    summary.textContent = `${items.length} shown · ${cfg.perPage} per page · live (index ${r.index})`;
    pageNo.textContent = `page ${st.page + 1}`;
    prev.disabled = st.page === 0;
    next.disabled = !st.next;
    const t = window.__amserverTimings[cfg.name] = window.__amserverTimings[cfg.name] || {};
    if (st.first) {
      st.first = false;
      mark(`${cfg.name}-first-render`);
      t.firstRender = performance.now();
    }
    if (st.started) {
      t.lastQuery = performance.now() - st.started;
      t.queries = (t.queries || 0) + 1;
      st.started = 0;
    }
  };
  const onError = (e) => {
    // A filter that does not compile is the user's to fix: say so by the
    // box. A failure of the servers is also a banner, as everywhere.
    problem.textContent = `${e.code}: ${e.message}`;
    problem.hidden = false;
    st.started = 0;
    if (!e.status || e.status >= 500) reportError(cfg.title, e);
  };
  const run = () => {
    if (st.stop) st.stop();
    st.stop = watch(cfg.title, query(), render, { onError });
  };
  const restart = () => {
    st.tokens = [''];
    st.page = 0;
    st.started = performance.now();
    run();
  };
  let typing = null;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(restart, TYPING_MS);
  });
  search.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    clearTimeout(typing);
    restart();
  });
  if (select) select.addEventListener('change', restart);
  next.addEventListener('click', () => {
    if (!st.next) return;
    st.tokens[st.page + 1] = st.next;
    st.page++;
    run();
  });
  prev.addEventListener('click', () => {
    if (st.page === 0) return;
    st.page--;
    run();
  });
  run();
  return () => {
    clearTimeout(typing);
    if (st.stop) st.stop();
  };
}
