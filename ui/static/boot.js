// A classic script, not a module: it runs even when a module of the app
// did not load (a failed fetch leaves the whole module graph unrun). A
// fetch can fail for a moment (the browser saw its network change, a
// server restarted), and a browser never fetches a failed module again in
// that page: the page is reloaded, at most once in 30 s, and only a failure
// that outlasts that is shown, instead of "Loading…" for good.
window.addEventListener('load', () => {
  if (window.__amserverBooted) return;
  const key = 'amserver.bootRetry';
  try {
    const last = Number(sessionStorage.getItem(key) || 0);
    if (!(Date.now() - last < 30000)) {
      sessionStorage.setItem(key, String(Date.now()));
      location.reload();
      return;
    }
  } catch {
    // No session storage (a locked-down browser): say so at once.
  }
  const view = document.getElementById('view');
  const p = document.createElement('p');
  p.id = 'boot-failed';
  p.className = 'boot-failed';
  p.setAttribute('role', 'alert');
  p.textContent = 'The UI\u2019s scripts did not load or start (the browser console says why). Reload the page to try again.';
  view.replaceChildren(p);
});
