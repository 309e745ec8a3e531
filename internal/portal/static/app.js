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
      // As herald makes one: whsec_ and the standard base64 of 24 random
      // bytes, the form the Standard Webhooks libraries read.
      var bytes = new Uint8Array(24);
      crypto.getRandomValues(bytes);
      input.value = "whsec_" + btoa(String.fromCharCode.apply(null, bytes));
      show(true);
      input.focus();
    });
  });

  // The webhook form's type picker: only the chosen type's fields are
  // shown and posted (a fieldset disabled is not posted). Without this
  // file every type's fields show, and herald reads the chosen type's.
  var picker = document.querySelector("[data-type-picker]");
  if (picker) {
    var showType = function () {
      document.querySelectorAll("[data-for-type]").forEach(function (el) {
        var on = el.getAttribute("data-for-type") === picker.value;
        el.hidden = !on;
        if (el.tagName === "FIELDSET") { el.disabled = !on; }
      });
    };
    picker.addEventListener("change", showType);
    showType();
  }

  // A page showing work in progress (a recovery) reads it again every few
  // seconds until it ends, and updates it in place rather than reloading:
  // the reader keeps their place and focus, and the status line (a live
  // region) says what changed. When the work ends, the webhook's health
  // and the explanation of its state are updated too.
  var refresh = document.querySelector("[data-refresh]");
  if (refresh && refresh.id && window.fetch && window.DOMParser) {
    var every = 1000 * Number(refresh.getAttribute("data-refresh"));
    var swap = function (doc, css) {
      var old = document.querySelector(css), next = doc.querySelector(css);
      if (old && next) { old.innerHTML = next.innerHTML; } else if (old) { old.remove(); }
    };
    var poll = function () {
      fetch(location.pathname, {credentials: "same-origin", headers: {Accept: "text/html"}})
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var next = doc.getElementById(refresh.id);
          if (!next) { return; }
          ["h2", "progress", "[role=status]"].forEach(function (css) {
            var o = refresh.querySelector(css), n = next.querySelector(css);
            if (!o || !n) { return; }
            if (css === "progress") {
              o.max = n.max;
              o.value = n.value;
            }
            o.innerHTML = n.innerHTML;
          });
          localTimes(refresh);
          if (next.hasAttribute("data-refresh")) {
            setTimeout(poll, every);
            return;
          }
          refresh.removeAttribute("data-refresh");
          swap(doc, ".badges");
          swap(doc, "#state-help");
        })
        .catch(function () { setTimeout(poll, 2 * every); });
    };
    setTimeout(poll, every);
  }

  // Action menus: one open at a time; Escape or a click elsewhere closes.
  var menus = document.querySelectorAll("details.menu");
  function closeAll(except) {
    menus.forEach(function (m) { if (m !== except) { m.open = false; } });
  }
  menus.forEach(function (m) {
    m.addEventListener("toggle", function () { if (m.open) { closeAll(m); } });
    // Tabbing out of an open menu closes it, as a click elsewhere does. A
    // press inside it is not leaving it: some browsers focus nothing when a
    // button is clicked, and closing then would swallow the click.
    var pressed = false;
    m.addEventListener("pointerdown", function () { pressed = true; });
    document.addEventListener("pointerup", function () { setTimeout(function () { pressed = false; }, 0); });
    m.addEventListener("focusout", function (e) {
      if (m.open && !pressed && !(e.relatedTarget && m.contains(e.relatedTarget))) { m.open = false; }
    });
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

  // Forms that change something are sent once: the first submit disables
  // the form's buttons and says what is happening (a Test may wait 15 s for
  // the receiver); further clicks and Enter do nothing. The server acts on
  // each form once anyway (its one-time token); this spares the wait and
  // shows progress. Back restores the page as it was left, so it is reset.
  var sending = [];
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    form.addEventListener("submit", function (e) {
      if (form.getAttribute("data-sending")) {
        e.preventDefault();
        return;
      }
      form.setAttribute("data-sending", "1");
      form.setAttribute("aria-busy", "true");
      var buttons = form.querySelectorAll("button[type=submit]");
      var button = e.submitter || buttons[0];
      // Disabled a moment later: a button disabled now would drop out of
      // the form data being sent.
      setTimeout(function () {
        buttons.forEach(function (b) {
          sending.push({ b: b, text: b.textContent });
          b.disabled = true;
        });
        if (button) {
          button.textContent = button.getAttribute("data-progress") || "Working…";
        }
        var status = form.querySelector("[data-progress-status]");
        if (status) { status.hidden = false; }
      }, 0);
    });
  });
  window.addEventListener("pageshow", function (e) {
    if (!e.persisted) { return; }
    sending.forEach(function (s) { s.b.disabled = false; s.b.textContent = s.text; });
    sending = [];
    document.querySelectorAll("form[data-sending]").forEach(function (form) {
      form.removeAttribute("data-sending");
      form.removeAttribute("aria-busy");
      var status = form.querySelector("[data-progress-status]");
      if (status) { status.hidden = true; }
    });
  });

  // Times: the page says each in UTC (what shows without this file); here
  // it reads in the viewer's own zone, the UTC text kept as its title.
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localTimes(root) { root.querySelectorAll("time[datetime]:not([data-local])").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d.getTime())) { return; }
    var zone = "";
    try {
      new Intl.DateTimeFormat("en-US", {timeZoneName: "short"}).formatToParts(d).forEach(function (p) {
        if (p.type === "timeZoneName") { zone = p.value; }
      });
    } catch (e) { /* no Intl: the offset below still says which zone */ }
    if (!zone) {
      var off = -d.getTimezoneOffset();
      zone = "UTC" + (off < 0 ? "−" : "+") + pad(Math.floor(Math.abs(off) / 60)) + ":" + pad(Math.abs(off) % 60);
    }
    el.title = el.textContent;
    el.textContent = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + zone;
    el.setAttribute("data-local", "");
  }); }
  localTimes(document);

  // A result that arrived with the page (a test just sent, a resend's
  // outcome, the summary of a refused form) takes the focus, so keyboard and
  // screen-reader users land on it.
  var result = document.querySelector("[data-focus]");
  if (result) { result.focus(); }
})();
