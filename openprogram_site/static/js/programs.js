// The Programs page's URL names the profile it shows, also when opened as a bare
// /programs/ (the server then shows the active profile): the address is made to say so,
// without a new history entry, so a reload, Back or a copied link opens that profile.
// Choosing another profile pushes its URL (htmx, hx-push-url on each profile link).
(() => {
  "use strict";
  const selected = document.getElementById("catalog-profile")?.value;
  const url = new URL(window.location.href);
  if (!selected || url.searchParams.get("profile")) return;
  url.searchParams.set("profile", selected);
  window.history.replaceState(window.history.state, "", url);
})();
