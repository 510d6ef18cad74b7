// The logs panel of the bundle page: the output of one job of one replica
// (GET /v1/assignments/{id}/logs, which the server proxies to the job's
// worker), the last lines or everything, stdout or stderr, and with Follow
// what the job writes next. Output reaches the page as text only.
import { errorFrom, h, headers } from './app.js';

// maxChars bounds what the panel keeps: a chatty job must not grow the
// page without end; the oldest text goes first.
const maxChars = 512 * 1024;

// choices are the placed jobs of the bundle, primary first, and a finished
// batch bundle's jobs, whose assignment names the node they ran on (its
// worker keeps their output a while).
function choices(b) {
  return (b.replicas || []).flatMap((r) => r.jobs.filter((j) => j.assignmentId).map((j) => ({
    id: j.assignmentId,
    label: j.nodeId ? `${r.role} · ${j.name} @ ${j.nodeId}`
      : `${r.role} · ${j.name} (ran @ ${j.assignmentId.slice(j.assignmentId.lastIndexOf('@') + 1)})`,
  })));
}

export function logsPanel() {
  const jobSel = h('select', { id: 'logs-job', 'aria-label': 'job' });
  const streamSel = h('select', { id: 'logs-stream', 'aria-label': 'stream' },
    h('option', { value: 'stdout' }, 'stdout'), h('option', { value: 'stderr' }, 'stderr'));
  const tail = h('input', { id: 'logs-tail', type: 'number', min: '0', max: '100000', value: '200', 'aria-label': 'last lines' });
  const follow = h('input', { id: 'logs-follow', type: 'checkbox' });
  const state = h('span', { id: 'logs-state', class: 'muted' });
  const out = h('pre', { id: 'bundle-logs', class: 'logs' });
  const panel = h('div', { class: 'panel', id: 'logs-panel', hidden: true },
    h('h2', {}, 'Logs'),
    h('div', { class: 'view-head' }, jobSel, streamSel, h('label', {}, 'last ', tail, ' lines'),
      h('label', {}, follow, ' follow'), h('span', { class: 'spacer' }), state),
    out);
  let ctl = null;
  let shown = '';

  async function load() {
    if (ctl) ctl.abort();
    ctl = new AbortController();
    const { signal } = ctl;
    out.textContent = '';
    const id = jobSel.value;
    if (!id) return;
    const q = new URLSearchParams({ stream: streamSel.value });
    if (tail.value !== '') q.set('tail', String(Math.max(0, Math.min(100000, Number(tail.value) || 0))));
    if (follow.checked) q.set('follow', 'true');
    state.textContent = follow.checked ? 'following…' : 'loading…';
    try {
      const resp = await fetch(`/v1/assignments/${encodeURIComponent(id)}/logs?${q}`, { headers: headers({ Accept: 'text/plain' }), signal, cache: 'no-store' });
      if (!resp.ok) throw await errorFrom(resp);
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        append(decoder.decode(value, { stream: true }));
      }
      append(decoder.decode());
      state.textContent = out.textContent ? 'end of output' : 'no output';
    } catch (e) {
      if (e.name === 'AbortError') return;
      state.textContent = `${e.code || 'error'}: ${e.message}`;
    }
  }

  function append(text) {
    if (!text) return;
    const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
    let all = out.textContent + text;
    if (all.length > maxChars) all = all.slice(all.length - maxChars);
    out.textContent = all;
    if (stick) out.scrollTop = out.scrollHeight;
  }

  for (const el of [jobSel, streamSel, tail, follow]) el.addEventListener('change', load);

  return {
    panel,
    // update follows the bundle: the job list changes only when the placed
    // jobs do, and the selection stays while its job is placed.
    update(b) {
      const list = choices(b);
      const key = list.map((c) => c.id).join('\n');
      panel.hidden = list.length === 0;
      if (key === shown) return;
      shown = key;
      const keep = jobSel.value;
      jobSel.replaceChildren(...list.map((c) => h('option', { value: c.id }, c.label)));
      if (list.some((c) => c.id === keep)) jobSel.value = keep;
      if (jobSel.value !== keep) load();
    },
    stop() {
      if (ctl) ctl.abort();
    },
  };
}
