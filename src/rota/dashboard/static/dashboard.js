// rota dashboard: small progressive enhancement, plain fetch, no build step.
// Pages marked data-refresh="N" re-read themselves every N seconds and swap in the new
// <main>, unless the person is typing in a form (focus inside <main>). Everything works
// without JavaScript: the pages are complete HTML and the buttons are plain forms.
// A family's row opened by the person (<details data-family>) stays open across refreshes.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || !main.dataset.refresh) { return; }
  var seconds = Math.max(2, parseInt(main.dataset.refresh, 10) || 5);
  function busy() {
    var active = document.activeElement;
    return active && main.contains(active) && (active.tagName === "INPUT" || active.tagName === "SELECT");
  }
  function openFamilies() {
    return Array.prototype.map.call(main.querySelectorAll("details[data-family][open]"),
      function (details) { return details.dataset.family; });
  }
  function reopen(names) {
    Array.prototype.forEach.call(main.querySelectorAll("details[data-family]"), function (details) {
      if (names.indexOf(details.dataset.family) !== -1) { details.open = true; }
    });
  }
  function refresh() {
    if (document.hidden || busy()) { return; }
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null || busy()) { return; }
        var page = new DOMParser().parseFromString(html, "text/html");
        var fresh = page.getElementById("main");
        if (fresh) {
          var opened = openFamilies();
          main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes));
          reopen(opened);
        }
        var footer = page.querySelector("footer");
        var old = document.querySelector("footer");
        if (footer && old) { old.replaceWith(footer); }
      })
      .catch(function () { /* the next tick tries again */ });
  }
  window.setInterval(refresh, seconds * 1000);
}());
