// herald portal: small enhancements. Every page works without this file.
"use strict";

(function () {
  // Token fields: masked, with Show and Generate buttons.
  document.querySelectorAll("[data-token-field]").forEach(function (row) {
    var input = row.querySelector("input");
    var reveal = row.querySelector("[data-token-reveal]");
    var generate = row.querySelector("[data-token-generate]");
    function show(on) {
      input.type = on ? "text" : "password";
      reveal.textContent = on ? "Hide" : "Show";
      reveal.setAttribute("aria-pressed", on ? "true" : "false");
    }
    show(false);
    reveal.hidden = false;
    generate.hidden = false;
    reveal.addEventListener("click", function () { show(input.type === "password"); });
    generate.addEventListener("click", function () {
      var bytes = new Uint8Array(32);
      crypto.getRandomValues(bytes);
      var b64 = btoa(String.fromCharCode.apply(null, bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      input.value = "whsec_" + b64;
      show(true);
      input.focus();
    });
  });

  // A page showing work in progress (a recovery) reloads itself until it ends.
  var refresh = document.querySelector("[data-refresh]");
  if (refresh) {
    setTimeout(function () { location.reload(); }, 1000 * Number(refresh.getAttribute("data-refresh")));
  }

  // Action menus: one open at a time; Escape or a click elsewhere closes.
  var menus = document.querySelectorAll("details.menu");
  function closeAll(except) {
    menus.forEach(function (m) { if (m !== except) { m.open = false; } });
  }
  menus.forEach(function (m) {
    m.addEventListener("toggle", function () { if (m.open) { closeAll(m); } });
    m.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && m.open) {
        m.open = false;
        m.querySelector("summary").focus();
      }
    });
  });
  document.addEventListener("click", function (e) {
    menus.forEach(function (m) { if (m.open && !m.contains(e.target)) { m.open = false; } });
  });

  // Copy buttons copy the exact text of their target.
  if (navigator.clipboard) {
    document.querySelectorAll("[data-copy]").forEach(function (b) {
      var target = document.querySelector(b.getAttribute("data-copy"));
      if (!target) { return; }
      var label = b.textContent;
      b.hidden = false;
      b.addEventListener("click", function () {
        navigator.clipboard.writeText(target.textContent).then(function () {
          b.textContent = "Copied";
          setTimeout(function () { b.textContent = label; }, 1500);
        });
      });
    });
  }

  // A result that arrived with the page (a test just sent) takes the focus,
  // so keyboard and screen-reader users land on it.
  var result = document.querySelector("[data-focus]");
  if (result) { result.focus(); }
})();
