/// The report page's inline style and script (`ReportPage`). Both are fixed text: the page's
/// Content-Security-Policy names them by their SHA-256.
extension ReportPage {
  static let style = """

    :root{color-scheme:light;--fg:#1d2329;--muted:#5f6b76;--line:#d8dee4;--bg:#fff;--band:#f6f8fa;\
    --bad:#b42318;--bad-bg:#fdecea;--warn:#8a5a00;--warn-bg:#fff4d6;--ok:#1a7f37;--accent:#0b5cad}
    *{box-sizing:border-box}
    body{margin:0 auto;max-width:1400px;padding:16px 24px 48px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",\
    Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
    h1{font-size:22px;margin:8px 0 4px}h1 .manifest{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;\
    font-size:19px;color:var(--accent);overflow-wrap:anywhere}
    h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
    code,.id,.url,.sha{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
    .facts{color:var(--muted);margin:4px 0 12px}
    .counts{display:flex;flex-wrap:wrap;gap:10px;margin:0}
    .count{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:104px;background:var(--band)}
    .count dt{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
    .count dd{margin:0;font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
    .count.failed:not(.zero){border-color:var(--bad);background:var(--bad-bg)}.count.failed:not(.zero) dd{color:var(--bad)}
    .count.completed:not(.zero) dd{color:var(--ok)}
    .count.deferred:not(.zero),.count.cancelled:not(.zero){border-color:#d4a72c;background:var(--warn-bg)}
    .count.zero dd{color:var(--muted);font-weight:400}
    .none{color:var(--muted)}
    details.group{border-bottom:1px solid var(--line);padding:4px 0}
    details.group summary{cursor:pointer;padding:2px 0}
    details.group .code{color:var(--bad);font-weight:600;background:var(--bad-bg);padding:1px 6px;border-radius:4px}
    details.group .times{font-weight:600;margin-right:6px}
    ol.failures{margin:4px 0 6px;padding-left:36px}
    ol.failures>li{padding:3px 0}
    ol.failures .id{font-weight:600;overflow-wrap:anywhere}
    ol.failures .status,ol.failures .attempts{color:var(--muted)}
    .message{white-space:pre-wrap;overflow-wrap:anywhere}
    ol.failures .url{color:var(--muted);overflow-wrap:anywhere;font-size:12px}
    ul.sources{margin:2px 0 0;padding-left:20px;color:var(--muted)}
    .more{color:var(--muted);font-style:italic}
    .charts{display:flex;flex-wrap:wrap;gap:8px 24px}
    .chart{flex:1 1 520px;max-width:800px;margin:4px 0}.chart svg{width:100%;height:auto;display:block}
    .chart text{font:12px system-ui,sans-serif;fill:var(--muted)}
    .chart .title{font-weight:600;fill:var(--fg);font-size:13px}
    .chart .labels.y text{text-anchor:end}.chart .labels.x text,.chart .axis{text-anchor:middle}
    .chart .grid line{stroke:#eaeef2}.chart .tick,.chart .axis-line{stroke:#8c959f}
    .chart .area{stroke-width:1.2;stroke-linejoin:round}
    .chart.flight .area{fill:rgba(11,92,173,.18);stroke:var(--accent)}
    .chart.rate .area{fill:rgba(26,127,55,.18);stroke:var(--ok)}
    .nojs .needs-js{display:none}
    .tools{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin:4px 0 8px}
    .tools input{flex:1 1 320px;max-width:480px;padding:5px 8px;font:inherit;border:1px solid var(--line);\
    border-radius:6px}
    .tools select,.tools button{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;\
    background:var(--band)}
    .tools button:disabled{opacity:.45}
    #shown{color:var(--muted);margin-left:auto;font-variant-numeric:tabular-nums}
    .tools.pager{justify-content:flex-end;margin-top:8px}
    .scroll{overflow-x:auto}
    table{border-collapse:collapse;width:100%;font-size:13px}
    th{position:sticky;top:0;background:var(--band);border-bottom:2px solid var(--line);text-align:left;\
    white-space:nowrap;padding:0}
    th button{all:unset;cursor:pointer;display:block;padding:6px 8px;font-weight:600}
    th button:focus-visible{outline:2px solid var(--accent)}
    th.num button{text-align:right}
    th[aria-sort=ascending] button::after{content:" ▲";font-size:10px}
    th[aria-sort=descending] button::after{content:" ▼";font-size:10px}
    td{padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
    td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
    td.id{max-width:280px;overflow-wrap:anywhere}
    td.url{max-width:420px;overflow-wrap:anywhere;color:var(--muted)}
    td small{display:block;color:var(--muted);font-size:11.5px}
    td.outcome{white-space:nowrap;font-weight:600}
    tr.failed td.outcome,tr.failed td.outcome small{color:var(--bad)}tr.failed{background:var(--bad-bg)}
    tr.cancelled,tr.deferred{background:var(--warn-bg)}tr.cancelled td.outcome,tr.deferred td.outcome{color:var(--warn)}
    tr.completed td.outcome{color:var(--ok)}tr.unchanged td.outcome{color:var(--muted)}
    tbody tr:hover{outline:1px solid #afb8c1}

    """

  /// Draws the task table from `#data`: `{outcomes, kinds, sessions, rows}`, each row
  /// `[id, session, kind, outcome, status, size, sha256, attempts, started, seconds, url, to,
  /// error code, error message, source]` (session, kind and outcome index their lists, outcomes in
  /// failures-first order; `to` is 1 when it is the id, shown only when it is not, and 0 when there
  /// is none). Rows come sorted
  /// failures first, then by id; a click on a header sorts by that column (again: the other way),
  /// ties keep that order. The address's fragment keeps the view
  /// (`#sort=-size&q=text&outcome=failed&page=2`).
  static let script = """

    (function () {
      "use strict";
      var data = JSON.parse(document.getElementById("data").textContent);
      var rows = data.rows, sessions = data.sessions, kinds = data.kinds, outcomes = data.outcomes;
      var body = document.querySelector("#table tbody"), filter = document.getElementById("filter");
      var outcome = document.getElementById("outcome"), shown = document.getElementById("shown");
      var prev = document.querySelectorAll(".prev"), next = document.querySelectorAll(".next");
      var table = document.getElementById("table");
      var heads = Array.prototype.slice.call(document.querySelectorAll("#table th"));
      var names = heads.map(function (th) { return th.getAttribute("data-column"); });
      var PAGE = 250, page = 0, view = rows, sortKey = "outcome", sortDir = 1, haystack = null;
      document.documentElement.classList.remove("nojs");

      function to(r) { return r[11] === 0 ? "" : r[11] === 1 ? r[0] : r[11]; }
      function took(r) { return r[8] === null || r[9] === null ? null : Math.max(0, r[9] - r[8]); }
      function fixed(v) { return v === null ? "" : v.toFixed(3); }
      function size(n) {
        if (n === null) return "";
        var units = ["B", "KB", "MB", "GB", "TB"], v = n, i = 0;
        while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
        return i === 0 ? n + " B" : v.toFixed(1) + " " + units[i];
      }
      function cell(tr, text, cls, title) {
        var td = document.createElement("td");
        td.textContent = text;
        if (cls) td.className = cls;
        if (title) td.title = title;
        tr.appendChild(td);
        return td;
      }
      function note(td, text) {
        var small = document.createElement("small");
        small.textContent = text;
        td.appendChild(small);
      }
      function field(i) { return function (r) { return r[i]; }; }
      function number(key) {
        return {key: key, cell: function (tr, r) { var v = key(r); cell(tr, v === null ? "" : String(v), "num"); }};
      }
      function seconds(key) {
        return {key: key, cell: function (tr, r) { cell(tr, fixed(key(r)), "num"); }};
      }
      var columns = {
        id: {key: field(0), cell: function (tr, r) { cell(tr, r[0], "id"); }},
        session: {key: function (r) { return sessions[r[1]]; }, cell: function (tr, r) { cell(tr, sessions[r[1]]); }},
        kind: {key: function (r) { return kinds[r[2]]; }, cell: function (tr, r) { cell(tr, kinds[r[2]]); }},
        outcome: {key: field(3), cell: function (tr, r) {
          var td = cell(tr, outcomes[r[3]], "outcome");
          if (r[12]) { note(td, r[12]); td.title = r[13]; }
          else if (r[14] && r[14] !== "network") note(td, r[14]);
        }},
        status: number(field(4)),
        size: {key: field(5), cell: function (tr, r) {
          cell(tr, size(r[5]), "num", r[5] === null ? "" : r[5] + " bytes");
        }},
        sha256: {key: field(6), cell: function (tr, r) {
          cell(tr, r[6] ? r[6].slice(0, 12) + "…" : "", "sha", r[6]);
        }},
        attempts: number(field(7)),
        started: seconds(field(8)),
        took: seconds(took),
        ended: seconds(field(9)),
        url: {key: field(10), cell: function (tr, r) {
          var td = cell(tr, r[10], "url");
          if (r[11] !== 0 && r[11] !== 1) note(td, "→ " + r[11]);
        }}
      };

      function compare(key) {
        return function (a, b) {
          var x = key(a), y = key(b);
          if (x === y) return 0;
          if (x === null || x === "") return 1;
          if (y === null || y === "") return -1;
          return x < y ? -sortDir : sortDir;
        };
      }
      function update() {
        var text = filter.value.trim().toLowerCase(), wanted = outcome.value, result = [];
        if (text && !haystack) {
          haystack = rows.map(function (r) {
            return [r[0], r[10], to(r), r[12], r[13], sessions[r[1]], kinds[r[2]], outcomes[r[3]], r[6], r[14]]
              .join("\\n").toLowerCase();
          });
        }
        for (var i = 0; i < rows.length; i++) {
          if (wanted && outcomes[rows[i][3]] !== wanted) continue;
          if (text && haystack[i].indexOf(text) < 0) continue;
          result.push(rows[i]);
        }
        result.sort(compare(columns[sortKey].key));
        view = result;
        page = 0;
        render();
        remember();
      }
      function render() {
        var start = page * PAGE, end = Math.min(view.length, start + PAGE);
        var fragment = document.createDocumentFragment();
        for (var i = start; i < end; i++) {
          var r = view[i], tr = document.createElement("tr");
          tr.className = outcomes[r[3]];
          for (var c = 0; c < names.length; c++) columns[names[c]].cell(tr, r);
          fragment.appendChild(tr);
        }
        body.textContent = "";
        body.appendChild(fragment);
        shown.textContent = view.length === 0 ? "no task matches" :
          (start + 1) + "–" + end + " of " + view.length + (view.length < rows.length ? " (" + rows.length + " in all)" : "");
        for (var b = 0; b < prev.length; b++) prev[b].disabled = page === 0;
        for (b = 0; b < next.length; b++) next[b].disabled = end >= view.length;
        heads.forEach(function (th, i) {
          th.setAttribute("aria-sort", names[i] !== sortKey ? "none" : sortDir > 0 ? "ascending" : "descending");
        });
      }
      function remember() {
        var parts = [];
        if (sortKey !== "outcome" || sortDir !== 1) parts.push("sort=" + (sortDir < 0 ? "-" : "") + sortKey);
        if (filter.value) parts.push("q=" + encodeURIComponent(filter.value));
        if (outcome.value) parts.push("outcome=" + outcome.value);
        if (page > 0) parts.push("page=" + (page + 1));
        try {
          history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
        } catch (e) {
          // Where the address cannot change, the view just is not kept.
        }
      }

      heads.forEach(function (th, i) {
        th.querySelector("button").addEventListener("click", function () {
          if (sortKey === names[i]) sortDir = -sortDir; else { sortKey = names[i]; sortDir = 1; }
          update();
        });
      });
      filter.addEventListener("input", update);
      outcome.addEventListener("change", update);
      function turn(by, button) {
        var target = page + by;
        if (target < 0 || target * PAGE >= view.length) return;
        page = target;
        render();
        remember();
        // From the pager under the table, go back to the top of the new page.
        if (button.parentNode.classList.contains("pager")) table.scrollIntoView();
      }
      Array.prototype.forEach.call(prev, function (button) {
        button.addEventListener("click", function () { turn(-1, button); });
      });
      Array.prototype.forEach.call(next, function (button) {
        button.addEventListener("click", function () { turn(1, button); });
      });

      var params = new URLSearchParams(location.hash.slice(1));
      filter.value = params.get("q") || "";
      if (outcomes.indexOf(params.get("outcome")) >= 0) outcome.value = params.get("outcome");
      update();
      var sort = params.get("sort") || "", descending = sort.charAt(0) === "-";
      var index = names.indexOf(descending ? sort.slice(1) : sort);
      if (index >= 0) {
        var button = heads[index].querySelector("button");
        if (names[index] !== sortKey) button.click();
        if (descending !== (sortDir < 0)) button.click();
      }
      var wantedPage = parseInt(params.get("page"), 10);
      if (wantedPage > 1 && (wantedPage - 1) * PAGE < view.length) {
        page = wantedPage - 1;
        render();
        remember();
      }
    })();

    """
}
