// Stellar's interactive charts: small multiples (one canvas per metric) with a synced hover
// crosshair and readout, drag-zoom, log scale, a robust y-range with outlier markers, EMA
// smoothing, a step / wall-time / relative-time x-axis and a legend that hides runs and groups.
//
// Data: the JSON block #stellar-charts-data (chartdata.py): per metric, per run, delta-encoded
// steps and wall times (ms) and values, already downsampled server side (min/max kept).
// A served page (payload.served) embeds the first chart's series only: the others are fetched
// from the series API (format=columns) when their chart comes near the viewport, and a zoom
// fetches the zoomed step range again at full resolution (or min/max-downsampled to a chart's
// worth), so zooming adds detail. The offline report has no server: it zooms what it carries.
// Speed: the lines are drawn once per view to a base canvas; hover draws only on an overlay
// canvas above it (binary search per run for the point at or before the cursor), so moving the
// mouse never redraws the lines.
// State: user choices live in `state` (module level), so a live refresh that swaps <main>
// rebuilds the charts with the same zoom, scale, smoothing, x-axis and hidden runs.
// Tests and the benchmark read each chart's view from data- attributes, not from pixels.
(function () {
  "use strict";

  var HEIGHT = 240;
  var PAD = { l: 58, r: 14, t: 10, b: 28 };
  // Readout rows: the runs nearest the cursor, listed highest value first (the lines' own
  // order on the chart), each with its whole name.
  var MAX_READOUT = 8;
  var DRAG_MIN_PX = 4;
  // Robust y-range: p1..p99 of the points in view, widened by FENCE times its span on each side;
  // points beyond are drawn clipped with a marker at the edge ("show full range" lifts it).
  var FENCE = 1.5;
  var AXES = { step: "Step", wall: "Wall time (UTC)", relative: "Relative time" };

  var state = {
    shown: null, // metric names charted, in payload order; null = the payload's default
    xAxis: "step",
    log: false,
    full: false,
    smoothing: 0,
    zoom: null, // [x0, x1] in the x-axis units of state.xAxis, or null
    hiddenRuns: {},
    hiddenGroups: {},
    selection: null, // run id -> true from stellar:selection, or null (all)
    filtered: null // run id -> true from stellar:visible, or null (all)
  };
  var view = null;

  // --- data -------------------------------------------------------------------------------

  function cumulative(deltas) {
    var out = new Float64Array(deltas.length);
    var acc = 0;
    for (var i = 0; i < deltas.length; i++) {
      acc += deltas[i];
      out[i] = acc;
    }
    return out;
  }

  // The series of one metric from the compact columns (the page's JSON or the series API).
  function decodeSeries(list, runs) {
    var series = [];
    list.forEach(function (s) {
      var run = runs[s.run_id];
      if (!run) return;
      var t = s.t ? cumulative(s.t) : null;
      if (t && t.length && t[0] < run.start) run.start = t[0];
      series.push({
        run: run,
        steps: cumulative(s.x),
        ys: Float64Array.from(s.y),
        ts: t,
        sourcePoints: s.source_points,
        xs: {},
        smooth: null
      });
    });
    return series;
  }

  function decode(payload) {
    var runs = {};
    var order = [];
    payload.runs.forEach(function (r, i) {
      runs[r.run_id] = { id: r.run_id, group: r.group, color: r.color, failed: r.failed, index: i, start: Infinity };
      order.push(r.run_id);
    });
    var metrics = payload.metrics.map(function (m) {
      return {
        name: m.name,
        series: decodeSeries(m.series, runs),
        deferred: !!m.deferred, // a served page fetches these series when the chart is seen
        decimated: !!m.decimated, // of a deferred chart: whether its series will be downsampled
        loading: false,
        failed: "",
        detail: null, // {key, byRun} of the zoomed range, fetched from the series API
        sourcePoints: m.source_points,
        renderedPoints: m.rendered_points,
        unreadable: m.unreadable_runs || []
      };
    });
    return {
      runs: runs, order: order, groups: payload.groups, metrics: metrics, payload: payload,
      served: payload.served || null,
      // Where each retry of a run starts (attempt > 0): {run_id, attempt, step, t (ms)}.
      attempts: payload.attempts || []
    };
  }

  // --- served pages: deferred charts and zoom detail from the series API -------------------

  function seriesUrl(metric, extra) {
    return view.served.series_url + "&format=columns&metric=" + encodeURIComponent(metric.name) + extra;
  }

  function getJson(url, done, fail) {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(done, function (e) { fail(String(e && e.message || e)); });
  }

  function redrawMetric(metric) {
    if (!view) return;
    view.charts.forEach(function (c) {
      if (c.metric === metric) {
        draw(c);
        requestDetail(c);
      }
    });
    if (view.hoverX !== null) hoverAll(view.hoverX, null, 0);
  }

  // Fetch a deferred chart's series (once); the chart shows "loading" until they arrive.
  function ensureLoaded(metric) {
    if (!view || !view.served || !metric.deferred || metric.loading) return;
    metric.loading = true;
    var token = view;
    var budget = (view.payload.budget || {}).series_points || 1500;
    getJson(seriesUrl(metric, "&max_points=" + budget), function (doc) {
      if (view !== token) return; // a live refresh replaced the charts meanwhile
      var list = doc.series || [];
      metric.series = decodeSeries(list, view.runs);
      // A deferred chart's point counts and unreadable runs come with its series.
      metric.sourcePoints = list.reduce(function (n, s) { return n + s.source_points; }, 0);
      metric.renderedPoints = list.reduce(function (n, s) { return n + s.y.length; }, 0);
      metric.unreadable = doc.unreadable_runs || [];
      metric.deferred = false;
      metric.loading = false;
      redrawMetric(metric);
    }, function (why) {
      if (view !== token) return;
      metric.loading = false;
      metric.failed = why;
      redrawMetric(metric);
    });
  }

  function zoomKey() {
    return state.zoom ? state.xAxis + ":" + state.zoom[0] + ":" + state.zoom[1] : "";
  }

  // The detail of a zoomed chart: the step range in view (one point beyond each edge) at up to
  // a chart's worth of points per run, instead of the few the page carries for that range.
  function requestDetail(chart) {
    var metric = chart.metric;
    var key = zoomKey();
    if (!view.served || !key || metric.deferred || !chart.view) return;
    if (metric.detail && metric.detail.key === key) return;
    var lo = Infinity;
    var hi = -Infinity;
    chart.view.series.forEach(function (sv) {
      if (sv.i1 < sv.i0) return;
      var steps = sv.s.steps;
      if (steps[sv.i0] < lo) lo = steps[sv.i0];
      if (steps[sv.i1] > hi) hi = steps[sv.i1];
    });
    if (!(hi >= lo)) return;
    var runs = Math.max(1, metric.series.length);
    var perRun = Math.max(64, Math.min(1500, Math.floor(view.served.zoom_metric_points / runs)));
    var detail = { key: key, byRun: null, failed: "" };
    metric.detail = detail;
    chart.fig.setAttribute("data-detail", "loading");
    var token = view;
    var url = seriesUrl(metric, "&start_step=" + Math.max(0, Math.floor(lo)) + "&end_step=" +
      Math.ceil(hi) + "&max_points=" + perRun);
    getJson(url, function (doc) {
      if (view !== token || metric.detail !== detail) return; // zoomed elsewhere meanwhile
      var byRun = {};
      decodeSeries(doc.series || [], view.runs).forEach(function (s) { byRun[s.run.id] = s; });
      detail.byRun = byRun;
      redrawMetric(metric);
    }, function (why) {
      if (metric.detail !== detail) return;
      detail.failed = why;
      redrawMetric(metric);
    });
  }

  // The series a chart draws now: the zoom's detail when it has arrived, else the page's.
  function seriesOf(metric) {
    var d = metric.detail;
    if (!d || !d.byRun || d.key !== zoomKey()) return metric.series;
    return metric.series.map(function (s) { return d.byRun[s.run.id] || s; });
  }

  // The x column of a series for an axis; null when the series has no wall times.
  function xsOf(series, axis) {
    if (axis === "step") return series.steps;
    if (!series.ts) return null;
    if (axis === "wall") return series.ts;
    if (!series.xs.relative) {
      var rel = new Float64Array(series.ts.length);
      for (var i = 0; i < rel.length; i++) rel[i] = (series.ts[i] - series.run.start) / 1000;
      series.xs.relative = rel;
    }
    return series.xs.relative;
  }

  // Exponential moving average in x order, debiased like TensorBoard's (the first points are
  // not pulled towards zero): last = w*last + (1-w)*y; shown = last / (1 - w^n).
  function smoothed(series, weight) {
    if (weight <= 0) return series.ys;
    if (series.smooth && series.smooth.weight === weight) return series.smooth.ys;
    var ys = series.ys;
    var out = new Float64Array(ys.length);
    var last = 0;
    for (var i = 0; i < ys.length; i++) {
      last = last * weight + (1 - weight) * ys[i];
      out[i] = last / (1 - Math.pow(weight, i + 1));
    }
    series.smooth = { weight: weight, ys: out };
    return out;
  }

  // Index of the last x <= value (-1 when all are greater); xs ascending.
  function atOrBefore(xs, value) {
    var lo = 0;
    var hi = xs.length - 1;
    if (hi < 0 || xs[0] > value) return -1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (xs[mid] <= value) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  function runVisible(run) {
    return !state.hiddenRuns[run.id] && !state.hiddenGroups[run.group] &&
      (!state.selection || state.selection[run.id] === true) &&
      (!state.filtered || state.filtered[run.id] === true);
  }

  // --- scales and ticks ---------------------------------------------------------------------

  function quantileSorted(sorted, q, up) {
    var pos = q * (sorted.length - 1);
    return sorted[up ? Math.floor(pos) : Math.ceil(pos)];
  }

  // The y domain (in drawn units: log10 on a log scale) of the given values.
  function yDomain(values, full) {
    if (!values.length) return { lo: 0, hi: 1, clipped: false };
    var sorted = values.sort();
    var min = sorted[0];
    var max = sorted[sorted.length - 1];
    var lo = min;
    var hi = max;
    var clipped = false;
    if (!full && sorted.length > 2) {
      var p1 = quantileSorted(sorted, 0.01, false);
      var p99 = quantileSorted(sorted, 0.99, true);
      var span = p99 - p1;
      if (span <= 0) span = Math.abs(p99) * 0.1 || 1;
      var fenceLo = p1 - FENCE * span;
      var fenceHi = p99 + FENCE * span;
      // The range hugs the inliers: the smallest and largest values inside the fences.
      var i = 0;
      var j = sorted.length - 1;
      while (sorted[i] < fenceLo) i++;
      while (sorted[j] > fenceHi) j--;
      lo = sorted[i];
      hi = sorted[j];
      clipped = lo > min || hi < max;
    }
    if (hi <= lo) {
      var pad = Math.abs(hi) * 0.05 || 0.5;
      return { lo: lo - pad, hi: hi + pad, clipped: clipped };
    }
    var margin = (hi - lo) * 0.05;
    return { lo: lo - margin, hi: hi + margin, clipped: clipped };
  }

  function niceStep(span, count) {
    var raw = span / count;
    var mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  }

  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
    21600, 43200, 86400, 172800, 604800, 2592000];

  function timeStep(span, count) {
    var raw = span / count;
    for (var i = 0; i < TIME_STEPS.length; i++) if (TIME_STEPS[i] >= raw) return TIME_STEPS[i];
    return niceStep(span, count);
  }

  function ticks(lo, hi, step) {
    var out = [];
    if (!(step > 0) || !(hi > lo)) return [lo];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return out;
  }

  function fmtNum(v) {
    if (!isFinite(v)) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return String(parseFloat(v.toPrecision(5)));
  }

  function fmtDuration(seconds) {
    var s = Math.round(seconds);
    var sign = s < 0 ? "-" : "";
    s = Math.abs(s);
    if (s < 60) return sign + s + "s";
    if (s < 3600) return sign + Math.floor(s / 60) + "m" + (s % 60 ? (s % 60) + "s" : "");
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    return sign + h + "h" + (m ? m + "m" : "");
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function fmtClock(ms, span) {
    var d = new Date(ms);
    var hm = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
    if (span <= 120000) hm += ":" + pad2(d.getUTCSeconds());
    if (span > 86400000) return (d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()) + " " + hm;
    return hm;
  }

  function fmtIso(ms) {
    return new Date(ms).toISOString().replace(".000Z", "Z");
  }

  function fmtX(x, axis, span) {
    if (axis === "wall") return fmtClock(x, span);
    if (axis === "relative") return fmtDuration(x);
    return fmtNum(x);
  }

  // --- DOM ----------------------------------------------------------------------------------

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    }
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function swatch(color) {
    var s = el("span", { "class": "chart-swatch", "aria-hidden": "true" });
    s.style.backgroundColor = color; // CSSOM, allowed by the page's style-src 'self'
    return s;
  }

  function shownMetrics() {
    var names = view.metrics.map(function (m) { return m.name; });
    var wanted = state.shown || view.payload.default_visible || names;
    return view.metrics.filter(function (m) { return wanted.indexOf(m.name) >= 0; });
  }

  function buildToolbar() {
    var bar = el("div", { "class": "charts-toolbar", role: "toolbar", "aria-label": "Chart controls" });

    var picker = el("details", { "class": "chart-picker" });
    var summary = el("summary", null, "Metrics");
    picker.appendChild(summary);
    var list = el("fieldset", { "class": "chart-picker-list" });
    list.appendChild(el("legend", null, "Charted metrics"));
    var shown = shownMetrics().map(function (m) { return m.name; });
    view.metrics.forEach(function (m) {
      var label = el("label");
      var box = el("input", { type: "checkbox", "data-control": "metric", value: m.name });
      box.checked = shown.indexOf(m.name) >= 0;
      box.addEventListener("change", function () {
        var boxes = list.querySelectorAll("input[data-control=metric]");
        var names = [];
        for (var i = 0; i < boxes.length; i++) if (boxes[i].checked) names.push(boxes[i].value);
        state.shown = names;
        buildGrid();
        drawAll();
      });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + m.name));
      list.appendChild(label);
    });
    picker.appendChild(list);
    bar.appendChild(picker);

    var axisLabel = el("label", null, "X axis ");
    var axis = el("select", { "data-control": "x-axis" });
    Object.keys(AXES).forEach(function (k) {
      var opt = el("option", { value: k }, AXES[k]);
      if (k === state.xAxis) opt.selected = true;
      axis.appendChild(opt);
    });
    axis.addEventListener("change", function () {
      state.xAxis = axis.value;
      state.zoom = null; // a zoom range is in the old axis' units
      drawAll();
    });
    axisLabel.appendChild(axis);
    bar.appendChild(axisLabel);

    bar.appendChild(checkbox("log", "Log scale", state.log, function (on) { state.log = on; drawAll(); }));
    bar.appendChild(checkbox("full", "Show full range", state.full, function (on) { state.full = on; drawAll(); }));

    var smoothLabel = el("label", null, "Smoothing ");
    var slider = el("input", {
      type: "range", min: "0", max: "0.99", step: "0.01", value: String(state.smoothing),
      "data-control": "smoothing", "aria-label": "EMA smoothing weight (0 = raw)"
    });
    var out = el("output", { "data-control": "smoothing-value" }, state.smoothing.toFixed(2));
    slider.addEventListener("input", function () {
      state.smoothing = Math.min(0.99, Math.max(0, parseFloat(slider.value) || 0));
      out.textContent = state.smoothing.toFixed(2);
      drawAll();
    });
    smoothLabel.appendChild(slider);
    smoothLabel.appendChild(out);
    bar.appendChild(smoothLabel);

    var reset = el("button", { type: "button", "data-control": "reset-zoom" }, "Reset zoom");
    reset.addEventListener("click", function () { state.zoom = null; drawAll(); });
    bar.appendChild(reset);
    return bar;
  }

  function checkbox(name, text, on, change) {
    var label = el("label");
    var box = el("input", { type: "checkbox", "data-control": name });
    box.checked = on;
    box.addEventListener("change", function () { change(box.checked); });
    label.appendChild(box);
    label.appendChild(document.createTextNode(" " + text));
    return label;
  }

  function buildLegend() {
    var legend = el("div", { "class": "charts-legend", "aria-label": "Runs (click to hide or show)" });
    view.groups.forEach(function (group) {
      var row = el("div", { "class": "legend-group" });
      var name = el("button", { type: "button", "class": "legend-group-name", "data-legend-group": group }, group || "(no group)");
      name.addEventListener("click", function () {
        if (state.hiddenGroups[group]) delete state.hiddenGroups[group];
        else state.hiddenGroups[group] = true;
        drawAll();
      });
      row.appendChild(name);
      view.order.forEach(function (id) {
        var run = view.runs[id];
        if (run.group !== group) return;
        var b = el("button", { type: "button", "class": "legend-run", "data-legend-run": id });
        b.appendChild(swatch(run.color));
        b.appendChild(document.createTextNode(id + (run.failed ? " (failed)" : "")));
        b.addEventListener("click", function () {
          if (state.hiddenRuns[id]) delete state.hiddenRuns[id];
          else state.hiddenRuns[id] = true;
          drawAll();
        });
        row.appendChild(b);
      });
      legend.appendChild(row);
    });
    return legend;
  }

  function syncLegend() {
    var groups = view.app.querySelectorAll("[data-legend-group]");
    for (var i = 0; i < groups.length; i++) {
      var g = groups[i].getAttribute("data-legend-group");
      groups[i].setAttribute("aria-pressed", state.hiddenGroups[g] ? "false" : "true");
    }
    var runs = view.app.querySelectorAll("[data-legend-run]");
    for (var j = 0; j < runs.length; j++) {
      var run = view.runs[runs[j].getAttribute("data-legend-run")];
      runs[j].setAttribute("aria-pressed", state.hiddenRuns[run.id] ? "false" : "true");
      runs[j].classList.toggle("off", !runVisible(run));
    }
  }

  function buildGrid() {
    var grid = view.grid;
    while (grid.firstChild) grid.removeChild(grid.firstChild);
    view.charts = shownMetrics().map(function (metric) {
      var fig = el("figure", { "class": "chart", "data-metric": metric.name });
      var cap = el("figcaption", { "class": "chart-title" });
      cap.appendChild(el("span", { "class": "chart-name" }, metric.name));
      var note = el("span", { "class": "chart-note" });
      cap.appendChild(note);
      fig.appendChild(cap);
      var plot = el("div", { "class": "chart-plot" });
      var base = el("canvas", { "class": "chart-base", role: "img" });
      var overlay = el("canvas", { "class": "chart-overlay", "aria-hidden": "true" });
      var readout = el("div", { "class": "chart-readout", role: "status", "aria-live": "off" });
      readout.hidden = true;
      plot.appendChild(base);
      plot.appendChild(overlay);
      fig.appendChild(plot);
      fig.appendChild(readout); // under the plot: it never covers the lines it reads
      grid.appendChild(fig);
      var chart = { metric: metric, fig: fig, note: note, plot: plot, base: base, overlay: overlay, readout: readout, rows: [] };
      bindPointer(chart);
      return chart;
    });
    watchDeferred();
  }

  // A deferred chart loads its series when it comes within a screen of the viewport (or at
  // once where IntersectionObserver is missing).
  function watchDeferred() {
    if (view.observer) view.observer.disconnect();
    view.observer = null;
    var waiting = view.charts.filter(function (c) { return c.metric.deferred; });
    if (!waiting.length) return;
    if (typeof IntersectionObserver === "undefined") {
      waiting.forEach(function (c) { ensureLoaded(c.metric); });
      return;
    }
    var byFig = new Map();
    waiting.forEach(function (c) { byFig.set(c.fig, c); });
    view.observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        var c = byFig.get(e.target);
        if (e.isIntersecting && c) ensureLoaded(c.metric);
      });
    }, { rootMargin: "900px 0px" });
    waiting.forEach(function (c) { view.observer.observe(c.fig); });
  }

  // --- drawing ------------------------------------------------------------------------------

  function size(chart) {
    var dpr = window.devicePixelRatio || 1;
    var w = Math.max(240, chart.plot.clientWidth || 420);
    [chart.base, chart.overlay].forEach(function (c) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(HEIGHT * dpr);
      c.style.width = w + "px";
      c.style.height = HEIGHT + "px";
    });
    chart.w = w;
    chart.h = HEIGHT;
    chart.dpr = dpr;
  }

  // Work out what a chart shows now: visible series, x and y domains, outliers.
  function layout(chart) {
    var axis = state.xAxis;
    var series = [];
    var noTimes = 0;
    seriesOf(chart.metric).forEach(function (s) {
      if (!runVisible(s.run)) return;
      var xs = xsOf(s, axis);
      if (!xs || !xs.length) { noTimes++; return; }
      series.push({ s: s, xs: xs, ys: s.ys, sm: smoothed(s, state.smoothing) });
    });
    var x0 = Infinity;
    var x1 = -Infinity;
    if (state.zoom) {
      x0 = state.zoom[0];
      x1 = state.zoom[1];
    } else {
      series.forEach(function (v) {
        if (v.xs[0] < x0) x0 = v.xs[0];
        if (v.xs[v.xs.length - 1] > x1) x1 = v.xs[v.xs.length - 1];
      });
    }
    if (!(x1 > x0)) {
      if (!isFinite(x0)) { x0 = 0; x1 = 1; } else { x0 -= 1; x1 += 1; }
    }
    // The points in the x range, per series (one beyond each edge so lines reach the frame).
    var count = 0;
    series.forEach(function (v) {
      v.i0 = Math.max(0, atOrBefore(v.xs, x0));
      var last = atOrBefore(v.xs, x1);
      v.i1 = Math.min(v.xs.length - 1, last + 1);
      count += Math.max(0, v.i1 - v.i0 + 1);
    });
    var values = new Float64Array(count);
    var n = 0;
    var skipped = 0;
    series.forEach(function (v) {
      for (var i = v.i0; i <= v.i1; i++) {
        var x = v.xs[i];
        if (x < x0 || x > x1) continue;
        var y = v.ys[i];
        if (state.log) {
          if (y > 0) values[n++] = Math.log(y) / Math.LN10;
          else skipped++;
        } else {
          values[n++] = y;
        }
      }
    });
    var dom = yDomain(values.subarray(0, n), state.full);
    chart.view = {
      series: series, x0: x0, x1: x1, y0: dom.lo, y1: dom.hi, clipped: dom.clipped,
      skipped: skipped, noTimes: noTimes, points: n
    };
  }

  function mapper(chart) {
    var v = chart.view;
    var pw = chart.w - PAD.l - PAD.r;
    var ph = chart.h - PAD.t - PAD.b;
    var sx = pw / (v.x1 - v.x0);
    var sy = ph / (v.y1 - v.y0);
    return {
      px: function (x) { return PAD.l + (x - v.x0) * sx; },
      py: function (y) {
        var t = state.log ? (y > 0 ? Math.log(y) / Math.LN10 : NaN) : y;
        return PAD.t + ph - (t - v.y0) * sy;
      },
      x: function (px) { return v.x0 + (px - PAD.l) / sx; },
      top: PAD.t,
      bottom: PAD.t + ph,
      left: PAD.l,
      right: PAD.l + pw
    };
  }

  function drawAxes(ctx, chart, m) {
    var v = chart.view;
    ctx.strokeStyle = "#e5e7eb";
    ctx.fillStyle = "#6b7280";
    ctx.lineWidth = 1;
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    var yt;
    if (state.log) {
      var lo = Math.ceil(v.y0);
      var hi = Math.floor(v.y1);
      yt = [];
      if (hi - lo >= 1) {
        var every = Math.max(1, Math.ceil((hi - lo + 1) / 6));
        for (var p = lo; p <= hi; p += every) yt.push(p);
      } else {
        yt = ticks(v.y0, v.y1, niceStep(v.y1 - v.y0, 4));
      }
    } else {
      yt = ticks(v.y0, v.y1, niceStep(v.y1 - v.y0, 5));
    }
    var ph = m.bottom - m.top;
    yt.forEach(function (t) {
      var y = Math.round(m.bottom - (t - v.y0) * ph / (v.y1 - v.y0)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(m.left, y);
      ctx.lineTo(m.right, y);
      ctx.stroke();
      ctx.fillText(fmtNum(state.log ? Math.pow(10, t) : t), m.left - 6, y);
    });
    var span = v.x1 - v.x0;
    var axis = state.xAxis;
    var stepX = axis === "wall" ? timeStep(span / 1000, 5) * 1000
      : axis === "relative" ? timeStep(span, 5) : niceStep(span, 5);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ticks(v.x0, v.x1, stepX).forEach(function (t) {
      var x = Math.round(m.px(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, m.top);
      ctx.lineTo(x, m.bottom);
      ctx.stroke();
      ctx.fillText(fmtX(t, axis, span), x, m.bottom + 6);
    });
    ctx.strokeStyle = "#9ca3af";
    ctx.strokeRect(m.left + 0.5, m.top + 0.5, m.right - m.left - 1, m.bottom - m.top - 1);
  }

  // A coordinate the canvas can stroke: a 1e9 spike maps to a huge pixel value, and the plot
  // is clipped anyway, so keep it a little beyond the frame.
  function clampPx(y, m) {
    var room = m.bottom - m.top;
    return y < m.top - room ? m.top - room : y > m.bottom + room ? m.bottom + room : y;
  }

  function strokeSeries(ctx, v, ys, m) {
    var open = false;
    ctx.beginPath();
    for (var i = v.i0; i <= v.i1; i++) {
      var y = m.py(ys[i]);
      if (y !== y) { open = false; continue; } // NaN: non-positive on a log scale
      var x = m.px(v.xs[i]);
      y = clampPx(y, m);
      if (open) ctx.lineTo(x, y);
      else { ctx.moveTo(x, y); open = true; }
    }
    ctx.stroke();
  }

  // Triangles on the frame's edge where points lie beyond the y range; returns how many.
  function markOutliers(ctx, v, ys, m, color, x0, x1) {
    var n = 0;
    ctx.fillStyle = color;
    for (var i = v.i0; i <= v.i1; i++) {
      var x = v.xs[i];
      if (x < x0 || x > x1) continue;
      var y = m.py(ys[i]);
      if (y !== y || (y >= m.top && y <= m.bottom)) continue;
      var px = m.px(x);
      var up = y < m.top;
      var e = up ? m.top : m.bottom;
      ctx.beginPath();
      ctx.moveTo(px, up ? e + 1 : e - 1);
      ctx.lineTo(px - 5, up ? e + 9 : e - 9);
      ctx.lineTo(px + 5, up ? e + 9 : e - 9);
      ctx.closePath();
      ctx.fill();
      ctx.strokeStyle = "#111827";
      ctx.lineWidth = 0.8;
      ctx.stroke();
      n++;
    }
    return n;
  }

  function draw(chart) {
    var t0 = performance.now();
    size(chart);
    layout(chart);
    var v = chart.view;
    var m = mapper(chart);
    chart.map = m;
    var ctx = chart.base.getContext("2d");
    ctx.setTransform(chart.dpr, 0, 0, chart.dpr, 0, 0);
    ctx.clearRect(0, 0, chart.w, chart.h);
    drawAxes(ctx, chart, m);
    ctx.save();
    ctx.beginPath();
    ctx.rect(m.left, m.top, m.right - m.left, m.bottom - m.top);
    ctx.clip();
    ctx.lineJoin = "round";
    var smoothing = state.smoothing > 0;
    v.series.forEach(function (sv) {
      ctx.strokeStyle = sv.s.run.color;
      if (smoothing) {
        ctx.globalAlpha = 0.22;
        ctx.lineWidth = 1;
        strokeSeries(ctx, sv, sv.ys, m);
        ctx.globalAlpha = 1;
        ctx.lineWidth = 1.6;
        strokeSeries(ctx, sv, sv.sm, m);
      } else {
        ctx.lineWidth = 1.3;
        strokeSeries(ctx, sv, sv.ys, m);
      }
    });
    v.attemptMarks = markAttempts(ctx, chart, m);
    ctx.restore();
    var outliers = 0;
    v.series.forEach(function (sv) {
      outliers += markOutliers(ctx, sv, sv.ys, m, sv.s.run.color, v.x0, v.x1);
    });
    v.outliers = outliers;
    describe(chart, performance.now() - t0);
    clearOverlay(chart);
  }

  // A retried run's attempts: a dashed vertical line in the run's colour where each attempt
  // after the first starts (its first step; its first time on a time axis), labelled with the
  // attempt number. Marks of hidden runs, or outside the x range, are not drawn.
  function markAttempts(ctx, chart, m) {
    var v = chart.view;
    var drawn = 0;
    var shown = {};
    v.series.forEach(function (sv) { shown[sv.s.run.id] = sv.s; });
    view.attempts.forEach(function (a) {
      var s = shown[a.run_id];
      if (!s) return;
      var x = a.step;
      if (state.xAxis !== "step") {
        if (a.t === null || a.t === undefined) return;
        x = state.xAxis === "wall" ? a.t : (a.t - s.run.start) / 1000;
      }
      if (x < v.x0 || x > v.x1) return;
      var px = Math.round(m.px(x)) + 0.5;
      ctx.save();
      ctx.strokeStyle = s.run.color;
      ctx.fillStyle = s.run.color;
      ctx.globalAlpha = 0.8;
      ctx.lineWidth = 1;
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(px, m.top);
      ctx.lineTo(px, m.bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.font = "10px sans-serif";
      ctx.fillText("attempt " + a.attempt, px + 3, m.top + 10);
      ctx.restore();
      drawn++;
    });
    return drawn;
  }

  // The chart's state for people (note, aria-label) and for tests (data- attributes).
  function describe(chart, ms) {
    var v = chart.view;
    var fig = chart.fig;
    var yLo = state.log ? Math.pow(10, v.y0) : v.y0;
    var yHi = state.log ? Math.pow(10, v.y1) : v.y1;
    var first = v.series[0];
    var attrs = {
      "data-x-axis": state.xAxis,
      "data-x-min": v.x0,
      "data-x-max": v.x1,
      "data-y-min": yLo,
      "data-y-max": yHi,
      "data-log": state.log ? "1" : "0",
      "data-full-range": state.full ? "1" : "0",
      "data-smoothing": state.smoothing,
      "data-visible-runs": v.series.length,
      "data-outliers": v.outliers,
      "data-skipped-nonpositive": v.skipped,
      "data-points": v.points,
      "data-attempt-marks": v.attemptMarks || 0,
      "data-zoomed": state.zoom ? "1" : "0",
      "data-detail": detailState(chart.metric),
      "data-loading": chart.metric.deferred ? (chart.metric.failed ? "failed" : "1") : "0",
      "data-smoothed-last": first ? first.sm[first.sm.length - 1] : "",
      "data-draw-ms": ms.toFixed(2)
    };
    for (var k in attrs) fig.setAttribute(k, String(attrs[k]));
    var notes = [];
    if (v.outliers) {
      notes.push(v.outliers + (v.outliers === 1 ? " point" : " points") +
        " beyond the y range (marked ▲▼; \"Show full range\" includes them)");
    }
    if (v.attemptMarks) {
      notes.push(v.attemptMarks + (v.attemptMarks === 1 ? " retry" : " retries") +
        " marked (dashed: where an attempt starts)");
    }
    if (v.skipped) notes.push(v.skipped + " non-positive values not drawn on the log scale");
    if (v.noTimes) notes.push(v.noTimes + " runs without wall times not drawn on this x-axis");
    if (chart.metric.deferred) {
      notes.push(chart.metric.failed ? "could not load this chart (" + chart.metric.failed + "); reload the page"
        : "loading…");
    }
    var ds = detailState(chart.metric);
    if (ds === "loading") notes.push("loading the zoomed range's points…");
    if (ds === "failed") notes.push("zoom detail unavailable: " + chart.metric.detail.failed);
    if (chart.metric.unreadable.length) notes.push("unreadable: " + chart.metric.unreadable.join(", "));
    chart.note.textContent = notes.length ? " · " + notes.join(" · ") : "";
    chart.base.setAttribute("aria-label", chart.metric.name + ": " + v.series.length + " runs, " +
      AXES[state.xAxis].toLowerCase() + " " + fmtX(v.x0, state.xAxis, v.x1 - v.x0) + " to " +
      fmtX(v.x1, state.xAxis, v.x1 - v.x0) + ", values " + fmtNum(yLo) + " to " + fmtNum(yHi) +
      (state.log ? " (log scale)" : ""));
  }

  function detailState(metric) {
    var d = metric.detail;
    if (!d || d.key !== zoomKey() || !zoomKey()) return "none";
    return d.failed ? "failed" : d.byRun ? "loaded" : "loading";
  }

  function drawAll() {
    if (!view) return;
    var t0 = performance.now();
    view.charts.forEach(draw);
    view.charts.forEach(requestDetail);
    syncLegend();
    var visible = view.order.filter(function (id) { return runVisible(view.runs[id]); });
    view.app.setAttribute("data-visible-runs", String(visible.length));
    view.app.setAttribute("data-charts", String(view.charts.length));
    view.app.setAttribute("data-draw-ms", (performance.now() - t0).toFixed(2));
    view.app.setAttribute("data-x-axis", state.xAxis);
    if (view.hoverX !== null) hoverAll(view.hoverX, null, 0);
  }

  // --- hover, zoom --------------------------------------------------------------------------

  function clearOverlay(chart) {
    var ctx = chart.overlay.getContext("2d");
    ctx.setTransform(chart.dpr, 0, 0, chart.dpr, 0, 0);
    ctx.clearRect(0, 0, chart.w, chart.h);
    return ctx;
  }

  // Crosshair at x (axis units) on one chart; with `source` (the hovered chart) also the readout.
  function hover(chart, x, source, cursorY) {
    var ctx = clearOverlay(chart);
    var v = chart.view;
    var m = chart.map;
    if (!v || x < v.x0 || x > v.x1) {
      chart.readout.hidden = true;
      chart.fig.removeAttribute("data-hover-x");
      return;
    }
    chart.fig.setAttribute("data-hover-x", String(x));
    var px = Math.round(m.px(x)) + 0.5;
    ctx.strokeStyle = "#111827";
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(px, m.top);
    ctx.lineTo(px, m.bottom);
    ctx.stroke();
    var hits = [];
    var smoothing = state.smoothing > 0;
    for (var k = 0; k < v.series.length; k++) {
      var sv = v.series[k];
      var i = atOrBefore(sv.xs, x);
      if (i < 0) continue;
      var value = smoothing ? sv.sm[i] : sv.ys[i];
      var y = m.py(value);
      if (y === y) {
        var cy = Math.max(m.top, Math.min(m.bottom, y));
        ctx.fillStyle = sv.s.run.color;
        ctx.beginPath();
        ctx.arc(m.px(sv.xs[i]), cy, 3, 0, 6.2832);
        ctx.fill();
      }
      if (source) {
        hits.push({ sv: sv, i: i, value: value, raw: sv.ys[i], dist: y === y ? Math.abs(y - cursorY) : Infinity });
      }
    }
    if (source) readout(chart, hits, px);
    else chart.readout.hidden = true;
  }

  function readout(chart, hits, px) {
    var box = chart.readout;
    hits.sort(function (a, b) { return a.dist - b.dist || a.sv.s.run.index - b.sv.s.run.index; });
    var nearest = hits.length ? hits[0] : null;
    var shown = hits.slice(0, MAX_READOUT);
    // Highest first, as the lines lie on the chart; ties (and NaN) by run id.
    shown.sort(function (a, b) {
      var av = a.value === a.value ? a.value : -Infinity;
      var bv = b.value === b.value ? b.value : -Infinity;
      return bv - av || (a.sv.s.run.id < b.sv.s.run.id ? -1 : a.sv.s.run.id > b.sv.s.run.id ? 1 : 0);
    });
    while (chart.rows.length < shown.length + 2) {
      var row = el("div", { "class": "readout-row" });
      row.appendChild(swatch("transparent"));
      ["run", "step", "value", "time"].forEach(function (c) { row.appendChild(el("span", { "class": "readout-" + c })); });
      chart.rows.push(row);
      box.appendChild(row);
    }
    var head = chart.rows[0];
    head.className = "readout-row readout-head";
    head.children[1].textContent = "run";
    head.children[2].textContent = "step";
    head.children[3].textContent = state.smoothing > 0 ? "value (smoothed)" : "value";
    head.children[4].textContent = "wall time (UTC)";
    for (var r = 1; r < chart.rows.length; r++) {
      var node = chart.rows[r];
      var hit = shown[r - 1];
      node.hidden = !hit;
      if (!hit) continue;
      node.className = "readout-row" + (hit === nearest ? " nearest" : "");
      node.setAttribute("data-readout-run", hit.sv.s.run.id);
      node.children[0].style.backgroundColor = hit.sv.s.run.color;
      node.children[1].textContent = hit.sv.s.run.id;
      node.children[1].title = hit.sv.s.run.id;
      node.children[2].textContent = String(hit.sv.s.steps[hit.i]);
      node.children[3].textContent = fmtNum(hit.value) + (state.smoothing > 0 ? " (" + fmtNum(hit.raw) + ")" : "");
      node.children[4].textContent = hit.sv.s.ts ? fmtIso(hit.sv.s.ts[hit.i]) : "no time";
    }
    var more = chart.rows[shown.length + 1];
    var rest = hits.length - shown.length;
    more.className = "readout-row readout-more";
    more.removeAttribute("data-readout-run");
    more.children[0].style.backgroundColor = "transparent";
    more.children[1].textContent = rest > 0 ? "+" + rest + " more runs" : "";
    more.children[2].textContent = more.children[3].textContent = more.children[4].textContent = "";
    more.hidden = rest <= 0;
    box.setAttribute("data-rows", String(shown.length));
    box.setAttribute("data-runs", String(hits.length));
    box.hidden = hits.length === 0;
  }

  function hoverAll(x, source, cursorY) {
    var t0 = performance.now();
    for (var i = 0; i < view.charts.length; i++) {
      var c = view.charts[i];
      hover(c, x, c === source, cursorY);
    }
    view.app.setAttribute("data-hover-ms", (performance.now() - t0).toFixed(3));
  }

  function unhoverAll() {
    view.hoverX = null;
    view.charts.forEach(function (c) {
      clearOverlay(c);
      c.readout.hidden = true;
      c.fig.removeAttribute("data-hover-x");
    });
  }

  function bindPointer(chart) {
    var o = chart.overlay;
    var drag = null;
    function local(ev) {
      var r = o.getBoundingClientRect();
      return { x: ev.clientX - r.left, y: ev.clientY - r.top };
    }
    o.addEventListener("mousemove", function (ev) {
      if (!chart.map) return;
      var p = local(ev);
      var x = chart.map.x(p.x);
      view.hoverX = x;
      hoverAll(x, chart, p.y);
      if (drag) {
        var ctx = chart.overlay.getContext("2d");
        ctx.fillStyle = "rgba(37,99,235,0.12)";
        var a = Math.max(chart.map.left, Math.min(drag, p.x));
        var b = Math.min(chart.map.right, Math.max(drag, p.x));
        ctx.fillRect(a, chart.map.top, b - a, chart.map.bottom - chart.map.top);
      }
    });
    o.addEventListener("mouseleave", function () { if (!drag) unhoverAll(); });
    o.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0 || !chart.map) return;
      ev.preventDefault();
      drag = local(ev).x;
      var up = function (e) {
        window.removeEventListener("mouseup", up);
        var start = drag;
        drag = null;
        var end = local(e).x;
        if (Math.abs(end - start) < DRAG_MIN_PX) return;
        var a = chart.map.x(Math.max(chart.map.left, Math.min(start, end)));
        var b = chart.map.x(Math.min(chart.map.right, Math.max(start, end)));
        if (b > a) {
          state.zoom = [a, b];
          drawAll();
        }
      };
      window.addEventListener("mouseup", up);
    });
    o.addEventListener("dblclick", function () {
      state.zoom = null;
      drawAll();
    });
  }

  // --- lifecycle ----------------------------------------------------------------------------

  function build(root) {
    var scope = root && root.querySelector ? root : document;
    var host = scope.querySelector("#stellar-charts") || document.getElementById("stellar-charts");
    var data = host && host.querySelector("#stellar-charts-data");
    if (!host || !data) { view = null; return; }
    var payload;
    try {
      payload = JSON.parse(data.textContent);
    } catch (e) {
      view = null; // the server-drawn SVG stays
      return;
    }
    var old = host.querySelector(".charts-app");
    if (old) host.removeChild(old);
    if (view && view.observer) view.observer.disconnect();
    view = decode(payload);
    view.hoverX = null;
    var app = el("div", { "class": "charts-app" });
    view.app = app;
    app.appendChild(buildToolbar());
    app.appendChild(buildLegend());
    view.grid = el("div", { "class": "charts-grid" });
    app.appendChild(view.grid);
    var notes = [];
    var b = payload.budget || {};
    var decimated = view.metrics.some(function (m) {
      // A deferred chart is not read yet: the server says whether it will be downsampled.
      return m.deferred ? !!m.decimated : m.renderedPoints < m.sourcePoints;
    });
    if (decimated) {
      notes.push("Downsampled for the page: at most " + b.series_points + " points per run and metric, " +
        "keeping each bucket's minimum and maximum; hover reads the kept points." +
        (view.served ? " Zooming in fetches the range's own points from the server." : ""));
    }
    if (payload.omitted_metrics && payload.omitted_metrics.length) {
      notes.push("Not charted (page budget): " + payload.omitted_metrics.join(", ") + ".");
    }
    if (notes.length) app.appendChild(el("p", { "class": "charts-note muted" }, notes.join(" ")));
    host.insertBefore(app, host.firstChild);
    host.classList.add("charts-live");
    buildGrid();
    drawAll();
    app.setAttribute("data-ready", "1");
    app.setAttribute("data-ready-ms", performance.now().toFixed(1)); // since navigation start
  }

  function runSet(list) {
    if (!list) return null;
    var set = {};
    for (var i = 0; i < list.length; i++) set[list[i]] = true;
    return set;
  }

  document.addEventListener("stellar:render", function (ev) {
    build(ev.detail && ev.detail.root);
  });
  document.addEventListener("stellar:selection", function (ev) {
    var runs = ev.detail && ev.detail.runs;
    state.selection = runs && runs.length ? runSet(runs) : null;
    drawAll();
  });
  document.addEventListener("stellar:visible", function (ev) {
    state.filtered = runSet(ev.detail && ev.detail.runs);
    drawAll();
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(drawAll, 120);
  });
})();
