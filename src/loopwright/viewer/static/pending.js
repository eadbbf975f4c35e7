"use strict";
// loopwright viewer: a waiting run's calls (loaded before app.js; uses its el() and u(),
// defined by the time a page is drawn)

// the calls a run waits for (deferred approval): text nodes only, bounded and escaped
// by the server as `loopwright runs approve` shows them (a bidi override, a zero-width
// character arrive as \u202e, \u200b; the commands quoted for a shell); a call cut is
// never approved by --all
function pendingView(run) {
  const p = run.pending;
  return el("div", { class: "pending" },
    el("b", {}, "waiting for approval: ", u(p.command)),
    el("div", { class: "pending-tools" }, "calls waiting: ", u(p.tools),
      p.more ? [" and more not listed here: ", u(p.command), " lists them all"] : ""),
    p.calls.map((c) => el("div", { class: "pending-call" },
      el("div", {}, "call ", el("code", {}, u(c.id)), " · tool ", el("code", {}, u(c.tool)),
        " · deferred by ", u(c.approver), c.decision ? [" · decided: ", u(c.decision)] : ""),
      c.explanation ? el("div", { class: "muted" }, c.explanation) : null,
      el("pre", {}, c.arguments),
      c.notes.map((n) => el("div", { class: "pending-note" }, "note: ", n)),
      el("div", { class: "muted" }, "arguments hash ", c.hash),
      c.state === "pending" ? el("div", { class: "pending-approve" },
        c.whole ? "approve it: " : "cut: read it whole first: ", el("code", {}, c.approve)) : null)));
}
