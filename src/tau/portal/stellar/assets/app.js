// Stellar and portal pages: copy buttons, run filters, line focus, and live refresh.
// No inline handlers: the served pages' CSP allows scripts from their own origin only.
(function () {
  "use strict";

  function copy(button) {
    var text = button.getAttribute("data-copy") || "";
    var done = function () {
      button.classList.add("copied");
      setTimeout(function () { button.classList.remove("copied"); }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
    } else {
      fallback(text);
      done();
    }
  }

  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* the text stays selectable */ }
    document.body.removeChild(area);
  }

  function applyFilters() {
    var box = document.getElementById("run-filter");
    var pick = document.getElementById("group-filter");
    var text = box ? box.value.trim().toLowerCase() : "";
    var group = pick ? pick.value : "";
    var nodes = document.querySelectorAll("[data-run]");
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var run = (node.getAttribute("data-run") || "").toLowerCase();
      var grp = node.getAttribute("data-group") || "";
      var hit = (!text || run.indexOf(text) >= 0 || grp.toLowerCase().indexOf(text) >= 0) &&
        (!group || grp === group);
      node.classList.toggle("hidden", !hit);
    }
  }

  function focusLine(line) {
    var group = line.getAttribute("data-group");
    var lines = document.querySelectorAll("polyline.series");
    var already = line.classList.contains("focus");
    for (var i = 0; i < lines.length; i++) {
      lines[i].classList.remove("focus", "dim");
      if (!already && lines[i].getAttribute("data-group") !== group) lines[i].classList.add("dim");
    }
    if (!already) line.classList.add("focus");
  }

  function bind(root) {
    var buttons = root.querySelectorAll("button[data-copy]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].addEventListener("click", function (ev) { copy(ev.currentTarget); });
    }
    var box = root.querySelector("#run-filter");
    if (box) box.addEventListener("input", applyFilters);
    var pick = root.querySelector("#group-filter");
    if (pick) pick.addEventListener("change", applyFilters);
    var lines = root.querySelectorAll("polyline.series");
    for (var j = 0; j < lines.length; j++) {
      lines[j].addEventListener("click", function (ev) { focusLine(ev.currentTarget); });
    }
  }

  // Live refresh: a conditional GET of the page fragment; 304 means nothing new. Only the
  // <main> content is swapped, so scroll position and open panels survive a quiet refresh.
  // It stops for good once a fragment says every run has finished ([data-live-done]): nothing
  // will change any more, and the server renders a finished target without data-live-url.
  function live(main) {
    var url = main.getAttribute("data-live-url");
    if (!url || !window.fetch || main.querySelector("[data-live-done]")) return;
    var done = false;
    var every = Math.max(2, parseInt(main.getAttribute("data-live-interval") || "5", 10)) * 1000;
    var etag = main.getAttribute("data-live-etag") || null;
    function tick() {
      var headers = etag ? { "If-None-Match": etag } : {};
      fetch(url, { headers: headers, cache: "no-store" }).then(function (res) {
        var state = document.getElementById("live-state");
        if (res.status === 304) {
          if (state) state.textContent = "live: up to date at " + new Date().toLocaleTimeString();
          return null;
        }
        if (!res.ok) {
          if (state) state.textContent = "live: refresh failed (" + res.status + ")";
          return null;
        }
        etag = res.headers.get("ETag");
        return res.text().then(function (html) {
          var open = {};
          var details = main.querySelectorAll("details[data-run]");
          for (var i = 0; i < details.length; i++) {
            if (details[i].open) open[details[i].getAttribute("data-run")] = true;
          }
          main.innerHTML = html;
          var again = main.querySelectorAll("details[data-run]");
          for (var k = 0; k < again.length; k++) {
            if (open[again[k].getAttribute("data-run")]) again[k].open = true;
          }
          bind(main);
          announce(main);
          applyFilters();
          done = !!main.querySelector("[data-live-done]");
          if (done) {
            main.removeAttribute("data-live-url");
            return;
          }
          var s = document.getElementById("live-state");
          if (s) s.textContent = "live: updated at " + new Date().toLocaleTimeString();
        });
      }).catch(function () { /* the next tick retries */ }).then(function () {
        if (!done) setTimeout(tick, every);
      });
    }
    tick();
  }

  // The chart and compare modules (loaded before this file) build their views on this event:
  // once at start and again after every live swap of <main>.
  function announce(root) {
    var ev;
    try {
      ev = new CustomEvent("stellar:render", { detail: { root: root } });
    } catch (e) {
      ev = document.createEvent("CustomEvent");
      ev.initCustomEvent("stellar:render", false, false, { root: root });
    }
    document.dispatchEvent(ev);
  }

  // In-page run links (the offline report's) point at a run's collapsed detail card: open it.
  function openTarget() {
    var id = (window.location.hash || "").slice(1);
    var el = id ? document.getElementById(id) : null;
    if (el && el.tagName === "DETAILS") el.open = true;
  }

  function start() {
    window.addEventListener("hashchange", openTarget);
    openTarget();
    bind(document);
    announce(document);
    var main = document.getElementById("main");
    if (main) live(main);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
