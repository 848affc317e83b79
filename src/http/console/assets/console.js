// sre-agent console: follows a running investigation's event stream and appends each step
// to its timeline as it arrives; reloads the page when the final status comes, so the
// server renders the finding. Text goes in with textContent only (never as HTML).
(function () {
  "use strict";
  var live = document.getElementById("live");
  var list = document.getElementById("timeline");
  if (!live || !list || !window.EventSource) { return; }
  var seen = list.querySelectorAll("li[data-seq]").length;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function render(seq, ev) {
    var li = el("li", "ev ev-" + ev.kind);
    li.setAttribute("data-seq", String(seq));
    var head = el("div", "ev-head");
    var body = null;
    if (ev.kind === "llm_call") {
      var what = ev.tool_calls.length ? "calls " + ev.tool_calls.join(", ") : "answer";
      var tokens = ev.tokens.prompt + ev.tokens.completion;
      head.textContent = "Step " + ev.step + " · LLM " + what + " · " + tokens +
        " tokens · " + ev.latency_ms + " ms · $" + Number(ev.cost_usd).toFixed(4);
    } else if (ev.kind === "tool_call") {
      li.id = "call-" + ev.id;
      head.textContent = "Step " + ev.step + " · tool " + ev.name + " (" + ev.id + ") · " +
        ev.duration_ms + " ms · " + (ev.ok ? "ok" : "error");
      body = el("div");
      body.appendChild(el("code", null, JSON.stringify(ev.arguments)));
      body.appendChild(el("pre", null, ev.output_excerpt));
    } else {
      head.textContent = "Step " + ev.step + " · " + ev.kind + ": " + ev.message;
    }
    li.appendChild(head);
    if (body) { li.appendChild(body); }
    return li;
  }

  var status = live.querySelector("[data-role=status]") || live;
  var source = new EventSource(live.getAttribute("data-events"));
  source.addEventListener("step", function (msg) {
    var seq = parseInt(msg.lastEventId, 10);
    if (isNaN(seq) || seq < seen) { return; }
    seen = seq + 1;
    list.appendChild(render(seq, JSON.parse(msg.data)));
    status.textContent = "Running: " + seen + " events so far…";
  });
  source.addEventListener("status", function (msg) {
    source.close();
    var s = JSON.parse(msg.data);
    status.textContent = "Ended: " + s.status + ". Loading the finding…";
    window.location.reload();
  });
})();
