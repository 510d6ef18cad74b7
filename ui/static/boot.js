// A classic script, not a module: it runs even when a module of the app
// did not load (a failed fetch leaves the whole module graph unrun), and
// then says so instead of leaving "Loading…" on screen for good.
window.addEventListener('load', () => {
  if (window.__amserverBooted) return;
  const view = document.getElementById('view');
  const p = document.createElement('p');
  p.id = 'boot-failed';
  p.className = 'boot-failed';
  p.setAttribute('role', 'alert');
  p.textContent = 'The UI\u2019s scripts did not load or start (the browser console says why). Reload the page to try again.';
  view.replaceChildren(p);
});
