// percsim report: click or hover a transaction to see its ops and cells;
// click a finding to highlight its transactions. No network, no libraries.
window.addEventListener("error", function (e) {
  document.body.setAttribute("data-script-error", String(e.message));
});
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var panel = document.getElementById("panel");
  var tip = document.getElementById("tip");
  var svg = document.getElementById("timeline-svg");
  var byId = {};
  data.txns.forEach(function (t, i) { byId[t.id] = i; });

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function val(v) { return v === null ? "null" : '"' + esc(v) + '"'; }
  function ms(ns) { return ns === null ? "never" : (ns / 1e6).toFixed(3) + " ms"; }

  function opText(o) {
    if (o[0] === "delete") return "delete " + esc(o[1]) + "." + esc(o[2]);
    return o[0] + " " + esc(o[1]) + "." + esc(o[2]) + " = " + val(o[3]);
  }

  function cellsOf(t) {
    var seen = {}, out = [];
    t.ops.forEach(function (o) {
      var key = o[1] + "\u0000" + o[2];
      if (seen[key]) return;
      seen[key] = true;
      var versions = data.cells[key] || [];
      var rows = versions.map(function (v) {
        var mine = v[0] === t.start_ts ? ' class="mine"' : "";
        return "<tr" + mine + "><td>" + v[0] + "</td><td>" + v[1] + "</td><td>" + v[2] +
          "</td><td>" + val(v[3]) + "</td></tr>";
      });
      out.push("<h4>" + esc(o[1]) + "." + esc(o[2]) + " (" + versions.length + " versions" +
        (versions.length > data.versions_shown ? ", last " + data.versions_shown + " shown" : "") + ")</h4>" +
        "<table><tr><th>start_ts</th><th>commit_ts</th><th>kind</th><th>value</th></tr>" +
        rows.slice(-data.versions_shown).join("") + "</table>");
    });
    return out.join("");
  }

  var selected = null;
  function show(i) {
    var t = data.txns[i];
    if (selected) selected.classList.remove("hl");
    selected = document.getElementById("t" + t.id);
    if (selected) selected.classList.add("hl");
    panel.innerHTML = "<button id=\"close\">close</button><h3>T" + t.id + " (" + t.outcome + ")</h3>" +
      (t.html !== undefined ? t.html : txnBody(t));
    panel.hidden = false;
    document.getElementById("close").onclick = function () { panel.hidden = true; };
  }

  // A transaction history's panel: its ops and the cells they touched (a
  // stream history's transactions bring their panel ready-made, as html).
  function txnBody(t) {
    return "<p>" + esc(t.lane) + "; start_ts " + t.start_ts + ", commit_ts " + (t.commit_ts === null ? "none" : t.commit_ts) +
      "<br>invoked " + ms(t.invoke_ns) + ", completed " + ms(t.complete_ns) +
      (t.abort_reason ? "<br>abort reason: " + esc(t.abort_reason) : "") + "</p>" +
      "<h4>operations</h4><ol>" + t.ops.map(function (o) { return "<li>" + opText(o) + "</li>"; }).join("") + "</ol>" +
      "<h4>cells touched, with their final versions (this transaction's are marked)</h4>" + cellsOf(t);
  }

  svg.addEventListener("click", function (e) {
    var i = e.target.getAttribute && e.target.getAttribute("data-i");
    if (i !== null && i !== undefined) show(+i);
  });
  svg.addEventListener("mousemove", function (e) {
    var i = e.target.getAttribute && e.target.getAttribute("data-i");
    if (i === null || i === undefined) { tip.hidden = true; return; }
    var t = data.txns[+i];
    tip.textContent = t.tip !== undefined ? t.tip : "T" + t.id + " " + t.outcome + ", start_ts " + t.start_ts +
      (t.commit_ts === null ? "" : ", commit_ts " + t.commit_ts) + ", " + t.ops.length + " ops";
    tip.style.left = (e.pageX + 12) + "px";
    tip.style.top = (e.pageY + 12) + "px";
    tip.hidden = false;
  });

  function highlight(ids) {
    document.querySelectorAll(".txn.hl").forEach(function (r) { r.classList.remove("hl"); });
    var first = null;
    ids.forEach(function (id) {
      var r = document.getElementById("t" + id);
      if (r) { r.classList.add("hl"); first = first || r; }
    });
    if (first) {
      var box = document.getElementById("timeline");
      box.scrollLeft = Math.max(0, first.x.baseVal.value - 200);
    }
  }

  document.querySelectorAll(".finding").forEach(function (card) {
    card.addEventListener("click", function (e) {
      var t = e.target.closest("[data-t]");
      if (t && byId[t.getAttribute("data-t")] !== undefined) {
        show(byId[t.getAttribute("data-t")]);
        return;
      }
      highlight(card.getAttribute("data-txns").split(" ").filter(Boolean));
    });
  });

  // A link to report.html#T42 opens transaction 42.
  var m = /^#T(\d+)$/.exec(window.location.hash);
  if (m && byId[m[1]] !== undefined) show(byId[m[1]]);

  var shown = document.querySelectorAll(".finding.violation").length;
  document.getElementById("status").textContent =
    "rendered: " + data.txns.length + " transactions, " + shown + " violations shown";
  document.body.setAttribute("data-rendered", "ok");
  document.body.setAttribute("data-violations", String(shown));
})();
