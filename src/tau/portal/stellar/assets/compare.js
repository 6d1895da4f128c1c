// Stellar's run table and comparison views: sort, search with the CLI's query language, choose
// columns, select runs, compare them side by side, parallel coordinates, scatter, CSV/JSON export.
//
// Everything is built from the JSON payload `#runs-table-data` (snapshot key `table`, see
// stellar/table.py) on every `stellar:render` (page start and each live swap of <main>); the
// user's state (sort, selection, query, columns, brushes, axes) lives here, outside the DOM, so a
// live refresh keeps it. Run ids, tags and config values are hostile user data: every node is made
// with createElement/textContent, never innerHTML. No inline handlers and no eval (the served
// page's CSP allows scripts from its own origin only).
//
// Events on `document` (the cross-module contract): `stellar:selection` {runs: [ids] | null} when
// the checked runs change (null = nothing selected), `stellar:visible` {runs: [ids]} when the
// search or a brush changes which runs are shown.
(function () {
  "use strict";

  // ---- the query language (pure; tests/browser/test_stellar_query_parity.py checks it against
  // tau.portal.store.lifecycle.parse_metric_filter and the CLI's --tag parsing) ---------------

  var FIELDS = ["latest", "min", "max", "count", "finite_count", "non_finite_count",
    "latest_step", "min_step", "max_step"];
  var OP_RE = />=|<=|!=|>|<|=/;
  // Python's str.strip() whitespace (str.isspace), which differs from JS trim() at the edges.
  var PY_SPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
  var PY_STRIP = new RegExp("^" + PY_SPACE + "+|" + PY_SPACE + "+$", "g");
  // Python float(): digits with single underscores between them, optional fraction and exponent.
  var PY_FLOAT = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
  var PY_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

  function pyStrip(text) { return text.replace(PY_STRIP, ""); }

  // float(text) as Python reads it, or null where Python raises ValueError.
  function pyFloat(text) {
    var s = pyStrip(text);
    var special = PY_SPECIAL.exec(s);
    if (special) {
      if (special[2].toLowerCase() === "nan") return NaN;
      return special[1] === "-" ? -Infinity : Infinity;
    }
    if (!PY_FLOAT.test(s)) return null;
    return Number(s.replace(/_/g, ""));
  }

  // `<metric>[@field|:field]<op><number>`: lifecycle.parse_metric_filter, message for message.
  function parseMetricFilter(text) {
    var found = OP_RE.exec(text);
    if (!found) {
      return { error: 'metric filter "' + text + '" must contain one of >=, <=, !=, >, <, =' };
    }
    var op = found[0];
    var left = text.slice(0, found.index);
    var right = text.slice(found.index + op.length);
    var field = "latest";
    var metric = pyStrip(left);
    var seps = ["@", ":"];
    for (var i = 0; i < seps.length; i++) {
      var at = metric.lastIndexOf(seps[i]);
      if (at >= 0) {
        field = metric.slice(at + 1);
        metric = metric.slice(0, at);
        break;
      }
    }
    if (FIELDS.indexOf(field) < 0) {
      return { error: 'metric filter "' + text + '" field must be ' +
        FIELDS.slice(0, -1).join(", ") + ", or " + FIELDS[FIELDS.length - 1] };
    }
    if (!metric) return { error: 'metric filter "' + text + '" names no metric' };
    var value = pyFloat(right);
    if (value === null) return { error: 'metric filter "' + text + '" value must be a number' };
    if (!isFinite(value)) return { error: 'metric filter "' + text + '" value must be finite' };
    return { kind: "metric", text: text, metric: metric, field: field, op: op, value: value };
  }

  // `--tag key=value` as the CLI's _tags reads it (split at the first "=", key required).
  function parseTag(text) {
    var at = text.indexOf("=");
    if (at <= 0) return { error: '--tag: expected key=value, got "' + text + '"' };
    return { kind: "tag", text: text, key: text.slice(0, at), value: text.slice(at + 1) };
  }

  // Whitespace separates terms; double quotes keep spaces inside one term.
  function tokenize(query) {
    var tokens = [];
    var current = "";
    var quoted = false;
    var started = false;
    for (var i = 0; i < query.length; i++) {
      var ch = query.charAt(i);
      if (ch === '"') {
        quoted = !quoted;
        started = true;
      } else if (!quoted && /\s/.test(ch)) {
        if (started) tokens.push(current);
        current = "";
        started = false;
      } else {
        current += ch;
        started = true;
      }
    }
    if (quoted) return { error: 'unclosed quote in "' + query + '"' };
    if (started) tokens.push(current);
    return { tokens: tokens };
  }

  // The search box: metric filters, `tag key=value` (also `tag:key=value` and the CLI's
  // `--tag`/`--metric-filter`/`-q` flags, so a pasted command line works) and free text, ANDed.
  function parseQuery(query) {
    var split = tokenize(query);
    if (split.error) return { terms: [], errors: [split.error] };
    var tokens = split.tokens;
    var terms = [];
    var errors = [];
    function add(term) {
      if (term.error) errors.push(term.error); else terms.push(term);
    }
    for (var i = 0; i < tokens.length; i++) {
      var token = tokens[i];
      var flag = token === "tag" || token === "--tag" ? "tag"
        : token === "--metric-filter" ? "metric"
          : token === "-q" || token === "--query" ? "text" : "";
      if (flag) {
        if (i + 1 >= tokens.length) {
          errors.push('"' + token + '" needs a value' +
            (flag === "tag" ? ": tag key=value" : flag === "metric" ? ": loss@min<0.5" : ""));
          continue;
        }
        var next = tokens[++i];
        if (flag === "tag") add(parseTag(next));
        else if (flag === "metric") add(parseMetricFilter(next));
        else add({ kind: "text", text: next, needle: next.toLowerCase() });
      } else if (token.indexOf("tag:") === 0 && token.indexOf("=") > 0) {
        add(parseTag(token.slice(4)));
      } else if (OP_RE.test(token)) {
        var parsed = parseMetricFilter(token);
        if (parsed.error && /value must be a number$/.test(parsed.error) && !/[<>!]/.test(token)) {
          parsed.error += ' (for a tag write: tag ' + token + ')';
        }
        add(parsed);
      } else {
        add({ kind: "text", text: token, needle: token.toLowerCase() });
      }
    }
    return { terms: terms, errors: errors };
  }

  function compareOp(actual, op, value) {
    switch (op) {
      case ">=": return actual >= value;
      case "<=": return actual <= value;
      case "!=": return actual !== value;
      case ">": return actual > value;
      case "<": return actual < value;
      default: return actual === value;
    }
  }

  // Exposed for the parity test and for other modules; a plain object, nothing executable in it.
  window.StellarQuery = {
    parseMetricFilter: parseMetricFilter,
    parseTag: parseTag,
    parseQuery: parseQuery,
    pyFloat: pyFloat
  };

  // ---- state kept across live refreshes -------------------------------------------------

  var state = {
    sort: null, // {col: id, dir: 1 | -1}
    selected: {}, // run id -> true
    query: "",
    columns: null, // chosen column ids; null = the payload's defaults
    brushes: {}, // axis id -> [top, bottom] fractions of the axis height
    sideOpen: false,
    onlyDiff: true,
    pcMetric: "",
    pcColor: "run",
    scX: "",
    scY: ""
  };
  var data = null; // the parsed payload
  var rowsById = {};
  var order = []; // run ids in display order
  var matched = {}; // run id -> passes the query
  var notices = [];
  var lastVisible = "";
  var lastSelection = "";
  var SVGNS = "http://www.w3.org/2000/svg";

  function fire(name, detail) {
    var ev;
    try {
      ev = new CustomEvent(name, { detail: detail });
    } catch (e) {
      ev = document.createEvent("CustomEvent");
      ev.initCustomEvent(name, false, false, detail);
    }
    document.dispatchEvent(ev);
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVGNS, tag);
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, String(attrs[k]));
    }
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function missing(v) { return v === null || v === undefined || v === ""; }

  function isNum(v) { return typeof v === "number" && isFinite(v); }

  // Like the server's `num` filter: six significant digits.
  function fmt(v) {
    if (missing(v)) return "";
    if (typeof v === "number") {
      if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
      return String(Number(v.toPrecision(6)));
    }
    return String(v);
  }

  // ---- columns --------------------------------------------------------------------------

  var FIXED = [
    { id: "run", label: "Run", get: function (r) { return r.run_id; } },
    { id: "group", label: "Group", get: function (r) { return r.run_group_id; } },
    { id: "status", label: "Status", get: function (r) { return r.status; } },
    { id: "tags", label: "Tags", get: function (r) { return tagText(r.tags); } },
    { id: "created", label: "Created", get: function (r) { return r.created_at; } },
    { id: "completed", label: "Completed", get: function (r) { return r.completed_at; } }
  ];

  function tagText(tags) {
    return Object.keys(tags || {}).sort().map(function (k) { return k + "=" + tags[k]; }).join(", ");
  }

  function metricCol(name, field) {
    var idx = data.stat_fields.indexOf(field);
    return {
      id: JSON.stringify(["m", name, field]),
      kind: "metric",
      metric: name,
      field: field,
      label: name + (field === "latest" ? " last" : " " + field),
      numeric: true,
      get: function (r) {
        var st = r.metrics[name];
        return st ? st[idx] : null;
      }
    };
  }

  function configCol(key) {
    return {
      id: JSON.stringify(["c", key]),
      kind: "config",
      key: key,
      label: key,
      get: function (r) { return Object.prototype.hasOwnProperty.call(r.config, key) ? r.config[key] : null; }
    };
  }

  function allColumns() {
    var cols = {};
    data.metrics.forEach(function (m) {
      ["latest", "best"].forEach(function (f) { var c = metricCol(m.name, f); cols[c.id] = c; });
    });
    data.config_keys.forEach(function (k) { var c = configCol(k); cols[c.id] = c; });
    return cols;
  }

  function defaultColumns() {
    var ids = [];
    data.default_metrics.forEach(function (m) {
      ids.push(metricCol(m, "latest").id, metricCol(m, "best").id);
    });
    data.default_config.forEach(function (k) { ids.push(configCol(k).id); });
    return ids;
  }

  function chosenColumns() {
    var cols = allColumns();
    var ids = (state.columns || defaultColumns()).filter(function (id) { return cols[id]; });
    return FIXED.concat(ids.map(function (id) { return cols[id]; }));
  }

  // ---- filtering and sorting ------------------------------------------------------------

  function hasMetric(name) {
    return data.metrics.some(function (m) { return m.name === name; });
  }

  function matches(row, term) {
    if (term.kind === "tag") {
      return Object.prototype.hasOwnProperty.call(row.tags, term.key) && row.tags[term.key] === term.value;
    }
    if (term.kind === "metric") {
      var st = row.metrics[term.metric];
      var idx = data.stat_fields.indexOf(term.field);
      if (!st || idx < 0 || !isNum(st[idx])) return false;
      return compareOp(st[idx], term.op, term.value);
    }
    // Free text, as `experiment search -q`: run id, group, tag keys and values, metric names.
    var n = term.needle;
    if (row.run_id.toLowerCase().indexOf(n) >= 0) return true;
    if (String(row.run_group_id).toLowerCase().indexOf(n) >= 0) return true;
    for (var k in row.tags) {
      if (k.toLowerCase().indexOf(n) >= 0 || String(row.tags[k]).toLowerCase().indexOf(n) >= 0) return true;
    }
    for (var m in row.metrics) { if (m.toLowerCase().indexOf(n) >= 0) return true; }
    return false;
  }

  function applyQuery() {
    var parsed = parseQuery(state.query);
    notices = [];
    var terms = parsed.errors.length ? [] : parsed.terms;
    terms.forEach(function (t) {
      if (t.kind === "metric" && !hasMetric(t.metric)) {
        notices.push('no run in this table has metric "' + t.metric + '", so "' + t.text + '" matches none');
      } else if (t.kind === "metric" && data.stat_fields.indexOf(t.field) < 0) {
        notices.push('this table has no "' + t.field + '" values, so "' + t.text + '" matches none');
      }
    });
    matched = {};
    data.rows.forEach(function (r) {
      matched[r.run_id] = terms.every(function (t) { return matches(r, t); });
    });
    return parsed.errors;
  }

  function compareValues(a, b) {
    if (isNum(a) && isNum(b)) return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });
  }

  function sortRows() {
    var index = {};
    data.rows.forEach(function (r, i) { index[r.run_id] = i; });
    order = data.rows.map(function (r) { return r.run_id; });
    if (!state.sort) return;
    var col = chosenColumns().filter(function (c) { return c.id === state.sort.col; })[0];
    if (!col) return;
    var dir = state.sort.dir;
    order.sort(function (x, y) {
      var a = col.get(rowsById[x]);
      var b = col.get(rowsById[y]);
      var ma = missing(a) || (typeof a === "number" && !isFinite(a));
      var mb = missing(b) || (typeof b === "number" && !isFinite(b));
      if (ma || mb) return ma === mb ? index[x] - index[y] : (ma ? 1 : -1); // missing last, both ways
      return dir * compareValues(a, b) || index[x] - index[y];
    });
  }

  // ---- brushing (parallel coordinates) ----------------------------------------------------

  var axesCache = [];

  function brushPass(row) {
    for (var i = 0; i < axesCache.length; i++) {
      var axis = axesCache[i];
      var b = state.brushes[axis.id];
      if (!b) continue;
      var y = axis.frac(axis.get(row));
      if (y === null || y < b[0] - 1e-9 || y > b[1] + 1e-9) return false;
    }
    return true;
  }

  function tableRowNode(rid) {
    var rows = document.querySelectorAll("#runs-table tbody tr[data-run]");
    for (var i = 0; i < rows.length; i++) if (rows[i].getAttribute("data-run") === rid) return rows[i];
    return null;
  }

  // Runs shown: the query and the brushes pass. (The page's own run filter in app.js adds the
  // `hidden` class; export honours that too, see visibleForExport.)
  function visibleIds() {
    return order.filter(function (rid) { return matched[rid] && brushPass(rowsById[rid]); });
  }

  function selectedIds() {
    return order.filter(function (rid) { return state.selected[rid]; });
  }

  // ---- the table ------------------------------------------------------------------------

  function buildHead(table, cols) {
    var thead = table.tHead || table.createTHead();
    clear(thead);
    var tr = el("tr");
    var th = el("th", "rt-select");
    var all = el("input");
    all.type = "checkbox";
    all.id = "runs-select-all";
    all.title = "Select all visible runs";
    all.setAttribute("aria-label", "Select all visible runs");
    th.appendChild(all);
    tr.appendChild(th);
    cols.forEach(function (c) {
      var h = el("th", c.numeric ? "num" : "");
      h.setAttribute("data-col", c.id);
      var button = el("button", "rt-sort", c.label);
      button.type = "button";
      button.setAttribute("data-col", c.id);
      var sorted = state.sort && state.sort.col === c.id;
      h.setAttribute("aria-sort", sorted ? (state.sort.dir > 0 ? "ascending" : "descending") : "none");
      if (sorted) button.appendChild(el("span", "rt-arrow", state.sort.dir > 0 ? " \u25b2" : " \u25bc"));
      if (c.kind === "metric") {
        var m = data.metrics.filter(function (x) { return x.name === c.metric; })[0];
        if (m) button.title = "best is " + m.direction + " (" + m.goal + " is better; " + m.direction_source + ")";
      }
      h.appendChild(button);
      tr.appendChild(h);
    });
    thead.appendChild(tr);
  }

  function buildCell(c, r) {
    var td = el("td", c.numeric ? "num" : "");
    var v = c.get(r);
    if (c.id === "run") {
      td.className = "rt-run";
      td.appendChild(document.createTextNode(r.run_id));
      if (r.failed) td.appendChild(el("span", "pill failed", "failed"));
    } else if (c.id === "status") {
      td.className = "lc-" + r.status;
      td.textContent = r.status;
    } else if (c.id === "tags") {
      td.className = "rt-tags";
      td.title = tagText(r.tags); // one line in the table; every tag on hover
      Object.keys(r.tags).sort().forEach(function (k) {
        td.appendChild(el("span", "pill", k + "=" + r.tags[k]));
        td.appendChild(document.createTextNode(" "));
      });
    } else if ((c.id === "created" || c.id === "completed") && missing(v)) {
      td.className = "muted";
      td.textContent = "not collected";
    } else {
      td.textContent = fmt(v);
      if (c.kind === "metric" && !missing(v)) td.title = String(v);
    }
    return td;
  }

  function buildBody(table, cols, hiddenBefore) {
    var tbody = table.tBodies[0] || table.appendChild(document.createElement("tbody"));
    clear(tbody);
    if (!order.length) {
      var empty = el("td", "muted", "No runs collected.");
      empty.colSpan = cols.length + 1;
      tbody.appendChild(el("tr")).appendChild(empty);
      return;
    }
    order.forEach(function (rid) {
      var r = rowsById[rid];
      var tr = el("tr");
      tr.setAttribute("data-run", r.run_id);
      tr.setAttribute("data-group", r.run_group_id);
      if (r.failed) { tr.classList.add("failed"); tr.setAttribute("data-failed", "1"); }
      if (hiddenBefore[rid]) tr.classList.add("hidden");
      var sel = el("td", "rt-select");
      var box = el("input", "rt-check");
      box.type = "checkbox";
      box.checked = !!state.selected[rid];
      box.setAttribute("aria-label", "Select run " + r.run_id);
      sel.appendChild(box);
      var swatch = el("span", "swatch");
      swatch.style.background = r.color; // CSSOM, allowed by the CSP (a style attribute is not)
      sel.appendChild(swatch);
      tr.appendChild(sel);
      cols.forEach(function (c) { tr.appendChild(buildCell(c, r)); });
      tbody.appendChild(tr);
    });
  }

  function buildTable() {
    var table = document.getElementById("runs-table");
    if (!table) return;
    var hiddenBefore = {};
    var old = table.querySelectorAll("tbody tr[data-run].hidden");
    for (var i = 0; i < old.length; i++) hiddenBefore[old[i].getAttribute("data-run")] = true;
    var cols = chosenColumns();
    sortRows();
    buildHead(table, cols);
    buildBody(table, cols, hiddenBefore);
  }

  // Show/hide rows, refresh counts, the select-all box and buttons; fire the events on change.
  function refreshVisibility() {
    var shown = visibleIds();
    var set = {};
    shown.forEach(function (rid) { set[rid] = true; });
    var rows = document.querySelectorAll("#runs-table tbody tr[data-run]");
    for (var i = 0; i < rows.length; i++) {
      var rid = rows[i].getAttribute("data-run");
      rows[i].classList.toggle("filtered", !set[rid]);
      rows[i].classList.toggle("selected", !!state.selected[rid]);
      var box = rows[i].querySelector("input.rt-check");
      if (box) box.checked = !!state.selected[rid];
    }
    var chosen = selectedIds();
    var all = document.getElementById("runs-select-all");
    if (all) {
      var picked = shown.filter(function (rid) { return state.selected[rid]; }).length;
      all.checked = shown.length > 0 && picked === shown.length;
      all.indeterminate = picked > 0 && picked < shown.length;
    }
    var count = document.getElementById("runs-count");
    if (count) {
      count.textContent = shown.length + " of " + data.rows.length + " runs shown" +
        (chosen.length ? " · " + chosen.length + " selected" : "");
    }
    var cmp = document.getElementById("runs-compare-btn");
    if (cmp) {
      cmp.disabled = chosen.length < 2;
      cmp.textContent = "Compare selected" + (chosen.length ? " (" + chosen.length + ")" : "");
    }
    var clr = document.getElementById("runs-clear-btn");
    if (clr) clr.disabled = chosen.length === 0;
    var pcClear = document.getElementById("pc-clear");
    if (pcClear) pcClear.disabled = Object.keys(state.brushes).length === 0;
    var key = JSON.stringify(shown);
    if (key !== lastVisible) {
      lastVisible = key;
      fire("stellar:visible", { runs: shown });
    }
    var sel = JSON.stringify(chosen);
    if (sel !== lastSelection) {
      lastSelection = sel;
      fire("stellar:selection", { runs: chosen.length ? chosen : null });
    }
  }

  function showMessage(errors) {
    var msg = document.getElementById("runs-query-msg");
    if (!msg) return;
    var lines = errors.length ? errors : notices;
    msg.hidden = lines.length === 0;
    msg.className = "rt-msg " + (errors.length ? "error" : "notice");
    msg.textContent = errors.length
      ? "Bad query, not applied: " + lines.join("; ")
      : lines.join("; ");
    var box = document.getElementById("runs-query");
    if (box) box.setAttribute("aria-invalid", errors.length ? "true" : "false");
  }

  // ---- the column chooser ---------------------------------------------------------------

  function buildChooser() {
    var body = document.getElementById("runs-columns-body");
    if (!body) return;
    clear(body);
    var chosen = {};
    (state.columns || defaultColumns()).forEach(function (id) { chosen[id] = true; });
    function box(col, text) {
      var label = el("label", "rt-col");
      var input = el("input");
      input.type = "checkbox";
      input.checked = !!chosen[col.id];
      input.setAttribute("data-col", col.id);
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + text));
      return label;
    }
    var metrics = el("fieldset");
    metrics.appendChild(el("legend", "", "Metrics (last / best)"));
    data.metrics.forEach(function (m) {
      var line = el("div", "rt-col-line");
      line.appendChild(el("span", "rt-col-name", m.name));
      line.appendChild(box(metricCol(m.name, "latest"), "last"));
      line.appendChild(box(metricCol(m.name, "best"), "best (" + m.direction + ")"));
      metrics.appendChild(line);
    });
    if (!data.metrics.length) metrics.appendChild(el("p", "muted", "No metrics collected."));
    var config = el("fieldset");
    config.appendChild(el("legend", "", "Config fields"));
    var varying = {};
    data.varying_config_keys.forEach(function (k) { varying[k] = true; });
    data.config_keys.forEach(function (k) {
      var line = el("div", "rt-col-line");
      line.appendChild(box(configCol(k), k));
      if (varying[k]) line.appendChild(el("span", "pill", "varies"));
      config.appendChild(line);
    });
    if (!data.config_keys.length) config.appendChild(el("p", "muted", "No config collected."));
    if (data.config_keys_total > data.config_keys.length) {
      config.appendChild(el("p", "muted", data.config_keys.length + " of " + data.config_keys_total +
        " config fields offered (varying ones first); the side-by-side view shows all."));
    }
    body.appendChild(metrics);
    body.appendChild(config);
    var reset = el("button", "", "Default columns");
    reset.type = "button";
    reset.id = "runs-columns-reset";
    body.appendChild(reset);
  }

  // ---- side by side ---------------------------------------------------------------------

  function sideValue(v) { return missing(v) ? "\u2205" : (typeof v === "number" ? fmt(v) : String(v)); }

  function buildSide() {
    var box = document.getElementById("side-by-side");
    var table = document.getElementById("side-table");
    if (!box || !table) return;
    var ids = selectedIds();
    var open = state.sideOpen && ids.length >= 2;
    box.hidden = !open;
    if (!open) return;
    var runs = ids.map(function (rid) { return rowsById[rid]; });
    var full = data.side_by_side || {};
    var only = document.getElementById("side-only-diff");
    if (only) only.checked = state.onlyDiff;
    table.classList.toggle("only-diff", state.onlyDiff);
    var thead = table.tHead;
    var tbody = table.tBodies[0];
    clear(thead);
    clear(tbody);
    var head = el("tr");
    head.appendChild(el("th", "", "Field"));
    runs.forEach(function (r) {
      var th = el("th", "side-run");
      var swatch = el("span", "swatch");
      swatch.style.background = r.color;
      th.appendChild(swatch);
      th.appendChild(document.createTextNode(" " + r.run_id));
      var drop = el("button", "side-drop", "\u00d7");
      drop.type = "button";
      drop.title = "Remove from comparison";
      drop.setAttribute("aria-label", "Remove " + r.run_id + " from comparison");
      drop.setAttribute("data-drop", r.run_id);
      th.appendChild(drop);
      head.appendChild(th);
    });
    thead.appendChild(head);
    var differing = 0;
    var rowsAdded = 0;
    function section(title) {
      var tr = el("tr", "side-section");
      var th = el("th", "", title);
      th.colSpan = runs.length + 1;
      tr.appendChild(th);
      tbody.appendChild(tr);
    }
    // values: raw per run; best: "min"/"max" marks the best cell of a metric row.
    function line(label, values, best) {
      var texts = values.map(function (v) { return JSON.stringify(missing(v) ? null : v); });
      var differs = texts.some(function (t) { return t !== texts[0]; });
      var tr = el("tr", differs ? "differs" : "same");
      tr.setAttribute("data-field", label);
      tr.appendChild(el("th", "", label));
      var nums = values.filter(isNum);
      var target = best && nums.length > 1 && differs
        ? (best === "min" ? Math.min.apply(null, nums) : Math.max.apply(null, nums)) : null;
      values.forEach(function (v) {
        var td = el("td", differs ? "diff" : "", sideValue(v));
        if (target !== null && v === target) td.classList.add("best");
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
      rowsAdded++;
      if (differs) differing++;
    }
    section("Run");
    line("status", runs.map(function (r) { return r.status + (r.failed ? " (failed)" : ""); }));
    line("group", runs.map(function (r) { return r.run_group_id; }));
    line("created", runs.map(function (r) { return r.created_at; }));
    line("completed", runs.map(function (r) { return r.completed_at; }));
    var configs = runs.map(function (r) { return full[r.run_id] || r.config; });
    var keys = {};
    configs.forEach(function (c) { Object.keys(c).forEach(function (k) { keys[k] = true; }); });
    section("Config");
    Object.keys(keys).sort().forEach(function (k) {
      line(k, configs.map(function (c) { return Object.prototype.hasOwnProperty.call(c, k) ? c[k] : null; }));
    });
    var tagKeys = {};
    runs.forEach(function (r) { Object.keys(r.tags).forEach(function (k) { tagKeys[k] = true; }); });
    section("Tags");
    Object.keys(tagKeys).sort().forEach(function (k) {
      line("tag " + k, runs.map(function (r) { return Object.prototype.hasOwnProperty.call(r.tags, k) ? r.tags[k] : null; }));
    });
    section("Metrics");
    var li = data.stat_fields.indexOf("latest");
    var bi = data.stat_fields.indexOf("best");
    data.metrics.forEach(function (m) {
      if (!runs.some(function (r) { return r.metrics[m.name]; })) return;
      var get = function (i) { return function (r) { var st = r.metrics[m.name]; return st ? st[i] : null; }; };
      line(m.name + " last", runs.map(get(li)), m.direction);
      line(m.name + " best", runs.map(get(bi)), m.direction);
    });
    var count = document.getElementById("side-count");
    if (count) count.textContent = runs.length + " runs · " + differing + " of " + rowsAdded + " fields differ";
    var note = document.getElementById("side-note");
    if (note) {
      note.textContent = state.onlyDiff && differing === 0
        ? "All compared fields are equal; untick \u201conly differences\u201d to see them."
        : "Differing cells are highlighted; the best metric value of a row is bold.";
    }
  }

  // ---- shared plot helpers --------------------------------------------------------------

  // A scale for the values of one axis: numeric (linear) or categorical (evenly spaced).
  // frac(v) is 0 at the top (max / last category) and 1 at the bottom; null for a missing value.
  function makeScale(values) {
    var present = values.filter(function (v) { return !missing(v) && !(typeof v === "number" && !isFinite(v)); });
    var numeric = present.length > 0 && present.every(function (v) { return typeof v === "number"; });
    if (numeric) {
      var lo = Math.min.apply(null, present);
      var hi = Math.max.apply(null, present);
      // Positive values over two or more decades (learning rates, weight decay) go on a log
      // axis; on a linear one all but the largest would sit on top of each other.
      if (lo > 0 && hi / lo >= 100) return logScale(lo, hi);
      if (lo === hi) { lo -= Math.abs(lo) * 0.5 || 1; hi += Math.abs(hi) * 0.5 || 1; }
      return {
        numeric: true, lo: lo, hi: hi,
        frac: function (v) { return isNum(v) ? 1 - (v - lo) / (hi - lo) : null; },
        ticks: niceTicks(lo, hi, 5).map(function (t) { return { at: 1 - (t - lo) / (hi - lo), text: fmt(t) }; })
      };
    }
    var cats = [];
    present.forEach(function (v) { var s = String(v); if (cats.indexOf(s) < 0) cats.push(s); });
    cats.sort(function (a, b) { return a.localeCompare(b, undefined, { numeric: true }); });
    var step = cats.length > 1 ? 1 / (cats.length - 1) : 0;
    return {
      numeric: false,
      frac: function (v) {
        if (missing(v)) return null;
        var i = cats.indexOf(String(v));
        return i < 0 ? null : (cats.length > 1 ? 1 - i * step : 0.5);
      },
      ticks: cats.map(function (c, i) { return { at: cats.length > 1 ? 1 - i * step : 0.5, text: c }; })
    };
  }

  function logScale(lo, hi) {
    var a = Math.log(lo) / Math.LN10;
    var b = Math.log(hi) / Math.LN10;
    var ticks = [];
    for (var e = Math.ceil(a - 1e-9); e <= b + 1e-9; e++) {
      ticks.push({ at: 1 - (e - a) / (b - a), text: fmt(Number(Math.pow(10, e).toPrecision(12))) });
    }
    return {
      numeric: true, log: true, lo: lo, hi: hi,
      frac: function (v) { return isNum(v) && v > 0 ? 1 - (Math.log(v) / Math.LN10 - a) / (b - a) : null; },
      ticks: ticks
    };
  }

  function niceTicks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
    return out;
  }

  function short(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }

  // Value colour for "colour by metric": light (worst) to dark (best) along a blue ramp.
  function ramp(t) {
    var a = [191, 219, 254];
    var b = [30, 58, 138];
    var c = a.map(function (x, i) { return Math.round(x + (b[i] - x) * t); });
    return "rgb(" + c.join(",") + ")";
  }

  function showTip(evt, lines) {
    var tip = document.getElementById("cmp-tip");
    if (!tip) return;
    clear(tip);
    lines.forEach(function (l, i) { tip.appendChild(el(i ? "div" : "strong", "", l)); });
    tip.hidden = false;
    tip.style.left = (evt.pageX + 12) + "px";
    tip.style.top = (evt.pageY + 12) + "px";
  }

  function hideTip() {
    var tip = document.getElementById("cmp-tip");
    if (tip) tip.hidden = true;
  }

  function toggleSelect(rid) {
    if (state.selected[rid]) delete state.selected[rid]; else state.selected[rid] = true;
    update();
  }

  function fillSelect(select, options, value) {
    clear(select);
    options.forEach(function (o) {
      var opt = el("option", "", o.label);
      opt.value = o.id;
      if (o.id === value) opt.selected = true;
      select.appendChild(opt);
    });
  }

  // ---- parallel coordinates ---------------------------------------------------------------

  function pcAxes() {
    var cols = chosenColumns().filter(function (c) { return c.kind === "config"; });
    if (!cols.length) cols = data.varying_config_keys.slice(0, 6).map(configCol);
    var metric = state.pcMetric || data.decision_metric;
    if (metric && hasMetric(metric)) cols = cols.concat([metricCol(metric, "latest")]);
    return cols;
  }

  function buildParcoords() {
    var box = document.getElementById("parcoords");
    var pick = document.getElementById("pc-metric");
    if (!box) return;
    if (pick) {
      fillSelect(pick, data.metrics.map(function (m) { return { id: m.name, label: m.name }; }),
        state.pcMetric || data.decision_metric);
    }
    var colour = document.getElementById("pc-color");
    if (colour) colour.value = state.pcColor;
    clear(box);
    var cols = pcAxes();
    var candidates = order.filter(function (rid) { return matched[rid]; });
    var W = 760, H = 330, top = 36, bottom = 40, left = 60, right = 60;
    var plotH = H - top - bottom;
    axesCache = cols.map(function (c) {
      var scale = makeScale(candidates.map(function (rid) { return c.get(rowsById[rid]); }));
      return { id: c.id, col: c, label: c.label, get: c.get, frac: scale.frac, scale: scale };
    });
    // Brushes of axes that are gone no longer filter.
    Object.keys(state.brushes).forEach(function (id) {
      if (!axesCache.some(function (a) { return a.id === id; })) delete state.brushes[id];
    });
    if (axesCache.length < 2 || !candidates.length) {
      box.appendChild(el("p", "muted", candidates.length
        ? "Choose at least one config column (Columns) and a metric to draw parallel coordinates."
        : "No runs match the search."));
      return;
    }
    var root = svg("svg", { id: "parcoords-svg", viewBox: "0 0 " + W + " " + H, role: "img",
      "aria-label": "Parallel coordinates of " + candidates.length + " runs" });
    var gap = (W - left - right) / (axesCache.length - 1);
    var xs = axesCache.map(function (a, i) { return left + i * gap; });
    var metricAxis = axesCache[axesCache.length - 1];
    var way = data.metrics.filter(function (m) { return m.name === metricAxis.col.metric; })[0];
    var lines = svg("g", { "class": "pc-lines" });
    root.appendChild(lines);
    candidates.forEach(function (rid) {
      var r = rowsById[rid];
      var d = "";
      var gapOpen = true;
      axesCache.forEach(function (a, i) {
        var f = a.frac(a.get(r));
        if (f === null) { gapOpen = true; return; } // a missing value breaks the line
        d += (gapOpen ? "M" : "L") + xs[i].toFixed(1) + "," + (top + f * plotH).toFixed(1);
        gapOpen = false;
      });
      if (!d) return;
      var colourOf = r.color;
      if (state.pcColor === "metric") {
        var f = metricAxis.frac(metricAxis.get(r));
        colourOf = f === null ? "#9ca3af" : ramp(way && way.direction === "min" ? f : 1 - f);
      }
      var path = svg("path", { d: d, stroke: colourOf, "class": "pc-line" + (brushPass(r) ? "" : " pc-out") +
        (state.selected[rid] ? " pc-selected" : "") });
      path.setAttribute("data-pc-run", rid);
      path.appendChild(svg("title", {}, rid));
      lines.appendChild(path);
    });
    axesCache.forEach(function (a, i) {
      var g = svg("g", { "class": "pc-axis", transform: "translate(" + xs[i].toFixed(1) + ",0)" });
      g.setAttribute("data-axis", a.id);
      g.appendChild(svg("line", { x1: 0, x2: 0, y1: top, y2: top + plotH }));
      a.scale.ticks.slice(0, 12).forEach(function (t) {
        var y = top + t.at * plotH;
        g.appendChild(svg("line", { x1: -4, x2: 0, y1: y, y2: y }));
        g.appendChild(svg("text", { x: -6, y: y + 3, "text-anchor": "end", "class": "pc-tick" }, short(t.text, 10)));
      });
      g.appendChild(svg("title", {}, a.label)); // the whole label, where the axis shows it cut
      // The outer axes' labels run inwards, so the last one is not cut at the frame's edge.
      var anchor = i === 0 ? "start" : i === axesCache.length - 1 ? "end" : "middle";
      var lx = anchor === "start" ? -10 : anchor === "end" ? 10 : 0;
      g.appendChild(svg("text", { x: lx, y: top - 14, "text-anchor": anchor, "class": "pc-label" }, short(a.label, 22)));
      var b = state.brushes[a.id];
      if (b) {
        g.appendChild(svg("rect", { x: -7, width: 14, y: top + b[0] * plotH,
          height: Math.max(2, (b[1] - b[0]) * plotH), "class": "pc-brush" }));
      }
      // The grab area overhangs the axis ends so a drag can start right at the extremes.
      var hit = svg("rect", { x: -12, width: 24, y: top - 8, height: plotH + 16, "class": "pc-hit" });
      hit.setAttribute("data-axis", a.id);
      g.appendChild(hit);
      root.appendChild(g);
    });
    box.appendChild(root);
    bindBrushing(root, top, plotH);
    lines.addEventListener("mousemove", function (evt) {
      var rid = evt.target.getAttribute && evt.target.getAttribute("data-pc-run");
      if (!rid) return;
      var r = rowsById[rid];
      showTip(evt, [rid].concat(axesCache.map(function (a) { return a.label + ": " + sideValue(a.get(r)); })));
    });
    lines.addEventListener("mouseleave", hideTip);
    lines.addEventListener("click", function (evt) {
      var rid = evt.target.getAttribute && evt.target.getAttribute("data-pc-run");
      if (rid) toggleSelect(rid);
    });
  }

  // Drag along an axis to keep the runs inside the range; a click without a drag clears it.
  function bindBrushing(root, top, plotH) {
    var drag = null;
    function frac(evt) {
      var pt = root.createSVGPoint();
      pt.x = evt.clientX;
      pt.y = evt.clientY;
      var m = root.getScreenCTM();
      var y = m ? pt.matrixTransform(m.inverse()).y : 0;
      return Math.min(1, Math.max(0, (y - top) / plotH));
    }
    root.addEventListener("pointerdown", function (evt) {
      var axis = evt.target.getAttribute && evt.target.getAttribute("data-axis");
      if (!axis) return;
      drag = { axis: axis, start: frac(evt) };
      if (root.setPointerCapture) { try { root.setPointerCapture(evt.pointerId); } catch (e) { /* synthetic */ } }
      evt.preventDefault();
    });
    root.addEventListener("pointermove", function (evt) {
      if (!drag) return;
      var now = frac(evt);
      state.brushes[drag.axis] = [Math.min(drag.start, now), Math.max(drag.start, now)];
      drawBrush(root, drag.axis, top, plotH);
    });
    root.addEventListener("pointerup", function (evt) {
      if (!drag) return;
      var now = frac(evt);
      var lo = Math.min(drag.start, now);
      var hi = Math.max(drag.start, now);
      if (hi - lo < 0.01) delete state.brushes[drag.axis]; else state.brushes[drag.axis] = [lo, hi];
      drag = null;
      update();
    });
  }

  function drawBrush(root, axis, top, plotH) {
    var groups = root.querySelectorAll("g.pc-axis");
    for (var i = 0; i < groups.length; i++) {
      if (groups[i].getAttribute("data-axis") !== axis) continue;
      var b = state.brushes[axis];
      var rect = groups[i].querySelector("rect.pc-brush");
      if (!rect) {
        rect = svg("rect", { x: -7, width: 14, "class": "pc-brush" });
        groups[i].insertBefore(rect, groups[i].querySelector("rect.pc-hit"));
      }
      rect.setAttribute("y", top + b[0] * plotH);
      rect.setAttribute("height", Math.max(2, (b[1] - b[0]) * plotH));
    }
  }

  // ---- scatter ----------------------------------------------------------------------------

  function scatterOptions() {
    var ys = [];
    data.metrics.forEach(function (m) { ys.push(metricCol(m.name, "latest"), metricCol(m.name, "best")); });
    var xs = data.config_keys.map(configCol).concat(ys);
    return { xs: xs, ys: ys };
  }

  function buildScatter() {
    var box = document.getElementById("scatter");
    var sx = document.getElementById("sc-x");
    var sy = document.getElementById("sc-y");
    if (!box || !sx || !sy) return;
    var opts = scatterOptions();
    var byId = {};
    opts.xs.forEach(function (c) { byId[c.id] = c; });
    if (!byId[state.scX]) {
      state.scX = data.varying_config_keys.length ? configCol(data.varying_config_keys[0]).id
        : (opts.ys[0] ? opts.ys[0].id : "");
    }
    if (!byId[state.scY]) {
      state.scY = data.decision_metric ? metricCol(data.decision_metric, "latest").id : (opts.ys[0] ? opts.ys[0].id : "");
    }
    fillSelect(sx, opts.xs, state.scX);
    fillSelect(sy, opts.ys, state.scY);
    clear(box);
    var cx = byId[state.scX];
    var cy = byId[state.scY];
    if (!cx || !cy) { box.appendChild(el("p", "muted", "No metrics collected.")); return; }
    var shown = visibleIds().filter(function (rid) {
      var r = rowsById[rid];
      return !missing(cx.get(r)) && isNum(cy.get(r));
    });
    if (!shown.length) { box.appendChild(el("p", "muted", "No visible run has both values.")); return; }
    var W = 520, H = 330, top = 16, bottom = 44, left = 64, right = 16;
    var pw = W - left - right, ph = H - top - bottom;
    var xscale = makeScale(shown.map(function (rid) { return cx.get(rowsById[rid]); }));
    var yscale = makeScale(shown.map(function (rid) { return cy.get(rowsById[rid]); }));
    var root = svg("svg", { id: "scatter-svg", viewBox: "0 0 " + W + " " + H, role: "img",
      "aria-label": cy.label + " against " + cx.label });
    // x: frac is 0 at the top, so flip it for left-to-right.
    var X = function (v) { var f = xscale.frac(v); return left + (xscale.numeric ? 1 - f : (xscale.ticks.length > 1 ? 1 - f : 0.5)) * pw; };
    var Y = function (v) { return top + yscale.frac(v) * ph; };
    var axes = svg("g", { "class": "sc-axes" });
    axes.appendChild(svg("line", { x1: left, x2: left + pw, y1: top + ph, y2: top + ph }));
    axes.appendChild(svg("line", { x1: left, x2: left, y1: top, y2: top + ph }));
    xscale.ticks.slice(0, 12).forEach(function (t) {
      var x = left + (1 - t.at) * pw;
      axes.appendChild(svg("line", { x1: x, x2: x, y1: top + ph, y2: top + ph + 4 }));
      axes.appendChild(svg("text", { x: x, y: top + ph + 15, "text-anchor": "middle", "class": "sc-tick" }, short(t.text, 10)));
    });
    yscale.ticks.forEach(function (t) {
      var y = top + t.at * ph;
      axes.appendChild(svg("line", { x1: left - 4, x2: left + pw, y1: y, y2: y, "class": "sc-grid" }));
      axes.appendChild(svg("text", { x: left - 6, y: y + 3, "text-anchor": "end", "class": "sc-tick" }, short(t.text, 10)));
    });
    axes.appendChild(svg("text", { x: left + pw / 2, y: H - 6, "text-anchor": "middle", "class": "sc-label" },
      short(cx.label, 60) + (xscale.log ? " (log)" : "")));
    axes.appendChild(svg("text", { x: 12, y: top + ph / 2, "text-anchor": "middle", "class": "sc-label",
      transform: "rotate(-90 12 " + (top + ph / 2) + ")" }, short(cy.label, 40) + (yscale.log ? " (log)" : "")));
    root.appendChild(axes);
    var points = svg("g", { "class": "sc-points" });
    shown.forEach(function (rid) {
      var r = rowsById[rid];
      var dot = svg("circle", { cx: X(cx.get(r)).toFixed(1), cy: Y(cy.get(r)).toFixed(1), r: state.selected[rid] ? 6 : 4.5,
        fill: r.color, "class": "sc-point" + (state.selected[rid] ? " sc-selected" : "") });
      dot.setAttribute("data-point-run", rid);
      dot.appendChild(svg("title", {}, rid + " · " + cx.label + " " + sideValue(cx.get(r)) + " · " + cy.label + " " + sideValue(cy.get(r))));
      points.appendChild(dot);
    });
    root.appendChild(points);
    points.addEventListener("mousemove", function (evt) {
      var rid = evt.target.getAttribute && evt.target.getAttribute("data-point-run");
      if (!rid) return;
      var r = rowsById[rid];
      showTip(evt, [rid, cx.label + ": " + sideValue(cx.get(r)), cy.label + ": " + sideValue(cy.get(r))]);
    });
    points.addEventListener("mouseleave", hideTip);
    points.addEventListener("click", function (evt) {
      var rid = evt.target.getAttribute && evt.target.getAttribute("data-point-run");
      if (rid) toggleSelect(rid);
    });
    box.appendChild(root);
  }

  // ---- export ---------------------------------------------------------------------------

  // Visible rows in display order, less rows the page's own run filter hid.
  function visibleForExport() {
    return visibleIds().filter(function (rid) {
      var node = tableRowNode(rid);
      return !node || !node.classList.contains("hidden");
    });
  }

  function exportValue(c, r, csv) {
    if (c.id === "tags") return csv ? tagText(r.tags) : r.tags;
    var v = c.get(r);
    return missing(v) ? null : v;
  }

  // RFC 4180 quoting; text that a spreadsheet would run as a formula gets a leading quote.
  function csvCell(v) {
    if (v === null || v === undefined) return "";
    var s = String(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  function download(name, type, text) {
    var url = URL.createObjectURL(new Blob([text], { type: type }));
    var a = el("a");
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    document.body.removeChild(a);
    setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
  }

  function exportTable(kind) {
    var cols = chosenColumns();
    var rows = visibleForExport().map(function (rid) { return rowsById[rid]; });
    if (kind === "csv") {
      var lines = [cols.map(function (c) { return csvCell(c.label); }).join(",")];
      rows.forEach(function (r) {
        lines.push(cols.map(function (c) { return csvCell(exportValue(c, r, true)); }).join(","));
      });
      download("stellar-runs.csv", "text/csv;charset=utf-8", lines.join("\r\n") + "\r\n");
    } else {
      var out = rows.map(function (r) {
        var o = {};
        cols.forEach(function (c) { o[c.label] = exportValue(c, r, false); });
        return o;
      });
      download("stellar-runs.json", "application/json",
        JSON.stringify({ columns: cols.map(function (c) { return c.label; }), rows: out }, null, 2) + "\n");
    }
  }

  // ---- wiring ---------------------------------------------------------------------------

  function update() {
    buildTable();
    refreshVisibility();
    buildSide();
    buildParcoords();
    refreshVisibility(); // the brushes of a rebuilt axis set may differ
    buildScatter();
  }

  function bindControls() {
    var query = document.getElementById("runs-query");
    var timer = null;
    query.value = state.query;
    query.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        state.query = query.value;
        showMessage(applyQuery());
        update();
      }, 120);
    });
    query.addEventListener("keydown", function (evt) {
      if (evt.key === "Enter") {
        clearTimeout(timer);
        state.query = query.value;
        showMessage(applyQuery());
        update();
      }
    });
    var table = document.getElementById("runs-table");
    table.addEventListener("click", function (evt) {
      var button = evt.target.closest ? evt.target.closest("button.rt-sort") : null;
      if (!button) return;
      var id = button.getAttribute("data-col");
      state.sort = state.sort && state.sort.col === id
        ? { col: id, dir: -state.sort.dir } : { col: id, dir: 1 };
      update();
    });
    table.addEventListener("change", function (evt) {
      var t = evt.target;
      if (t.id === "runs-select-all") {
        var shown = visibleForExport();
        var all = shown.length > 0 && shown.every(function (rid) { return state.selected[rid]; });
        shown.forEach(function (rid) { if (all) delete state.selected[rid]; else state.selected[rid] = true; });
        update();
      } else if (t.classList && t.classList.contains("rt-check")) {
        var tr = t.closest("tr");
        var rid = tr && tr.getAttribute("data-run");
        if (rid === null) return;
        if (t.checked) state.selected[rid] = true; else delete state.selected[rid];
        update();
      }
    });
    var chooser = document.getElementById("runs-columns-body");
    chooser.addEventListener("change", function (evt) {
      var id = evt.target.getAttribute("data-col");
      if (!id) return;
      var ids = (state.columns || defaultColumns()).filter(function (x) { return x !== id; });
      if (evt.target.checked) ids.push(id);
      state.columns = ids;
      update();
    });
    chooser.addEventListener("click", function (evt) {
      if (evt.target.id !== "runs-columns-reset") return;
      state.columns = null;
      buildChooser();
      update();
    });
    document.getElementById("runs-compare-btn").addEventListener("click", function () {
      state.sideOpen = true;
      buildSide();
      var box = document.getElementById("side-by-side");
      if (box && box.scrollIntoView) box.scrollIntoView({ block: "nearest" });
    });
    document.getElementById("runs-clear-btn").addEventListener("click", function () {
      state.selected = {};
      update();
    });
    document.getElementById("runs-export-csv").addEventListener("click", function () { exportTable("csv"); });
    document.getElementById("runs-export-json").addEventListener("click", function () { exportTable("json"); });
    var only = document.getElementById("side-only-diff");
    if (only) {
      only.addEventListener("change", function () { state.onlyDiff = only.checked; buildSide(); });
    }
    var close = document.getElementById("side-close");
    if (close) close.addEventListener("click", function () { state.sideOpen = false; buildSide(); });
    var side = document.getElementById("side-table");
    if (side) {
      side.addEventListener("click", function (evt) {
        var rid = evt.target.getAttribute && evt.target.getAttribute("data-drop");
        if (rid !== null && rid !== undefined) { delete state.selected[rid]; update(); }
      });
    }
    var pcMetric = document.getElementById("pc-metric");
    if (pcMetric) pcMetric.addEventListener("change", function () { state.pcMetric = pcMetric.value; update(); });
    var pcColor = document.getElementById("pc-color");
    if (pcColor) pcColor.addEventListener("change", function () { state.pcColor = pcColor.value; buildParcoords(); });
    var pcClear = document.getElementById("pc-clear");
    if (pcClear) pcClear.addEventListener("click", function () { state.brushes = {}; update(); });
    var sx = document.getElementById("sc-x");
    if (sx) sx.addEventListener("change", function () { state.scX = sx.value; buildScatter(); });
    var sy = document.getElementById("sc-y");
    if (sy) sy.addEventListener("change", function () { state.scY = sy.value; buildScatter(); });
  }

  function render() {
    var source = document.getElementById("runs-table-data");
    var wrap = document.getElementById("runs-compare");
    if (!source || !wrap) return;
    if (wrap.getAttribute("data-ready") === "1") return; // this DOM is already wired
    try {
      data = JSON.parse(source.textContent);
    } catch (e) {
      return; // the server-rendered table stays as it is
    }
    if (!data || !data.rows) return;
    wrap.setAttribute("data-ready", "1");
    rowsById = {};
    data.rows.forEach(function (r) { rowsById[r.run_id] = r; });
    Object.keys(state.selected).forEach(function (rid) { if (!rowsById[rid]) delete state.selected[rid]; });
    var ids = ["runs-toolbar", "runs-query-help", "compare-views"];
    ids.forEach(function (id) { var n = document.getElementById(id); if (n) n.hidden = false; });
    bindControls();
    buildChooser();
    lastVisible = "";
    lastSelection = state.selected && Object.keys(state.selected).length ? "" : "[]";
    showMessage(applyQuery());
    update();
  }

  document.addEventListener("stellar:render", render);
})();
