// loopwright's viewer: one page, routes in the URL's hash, data from /api.
// Everything a run holds is untrusted: it reaches the document only as text nodes
// (el() below) or, for an info entry's markdown, as the server's sanitised HTML.
"use strict";

const main = document.getElementById("main");
const where = document.getElementById("where");
const liveBadge = document.getElementById("live");
let generation = 0; // bumped on every route change: stale loads and timers stop
const PAGE = 100;
const MAX_ROWS = 600; // the transcript never holds more rows than this in the document

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : String(kid));
  }
  return e;
}

// untrusted text in a line of the page's own, isolated: a bidi override cannot reorder what follows
const u = (v) => (v === null || v === undefined || v === "" ? "" : el("bdi", {}, String(v)));

function link(route, params, ...kids) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return el("a", { href: "#" + route + (s ? "?" + s : "") }, ...kids);
}

function go(route, params) { location.hash = link(route, params).getAttribute("href"); }

async function api(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const url = "/api/" + path + (q.toString() ? "?" + q : "");
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  if (!r.ok) {
    const text = (await r.text()).slice(0, 2000); let why = text || r.statusText;
    try { why = JSON.parse(text).error || why; } catch (err) { /* the guard's: plain text */ }
    throw new Error(why);
  }
  return r.json();
}

const json = (v) => el("pre", { class: "json" }, JSON.stringify(v, null, 2));
// an item the server cut to a page's bounds (a 50 MB answer): its whole is a download
function whole(run, item, kind) {
  if (!item || !item.cut || !item.id) return null;
  const href = `/api/runs/${encodeURIComponent(run.id)}/${kind}s/${encodeURIComponent(item.id)}/whole`;
  return el("div", { class: "cut muted" }, `cut to fit the page: `, el("a", { href, download: "" }, `the whole ${kind} (JSON)`));
}
const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString() : "");
// a cost: "$0.0123"; "≥$0.0123" when some calls had no known price; "unknown" when none had
const fmtCost = (c, unpriced) => (typeof c !== "number" ? (unpriced ? "unknown" : "")
  : (unpriced ? "≥" : "") + "$" + (c < 100 ? c.toFixed(4) : c.toFixed(2)));
const fmtDur = (s) => (s === null || s === undefined ? "" : s < 1 ? (s * 1000).toFixed(0) + " ms" : s.toFixed(2) + " s");
const STATUSES = new Set(["running", "success", "error", "limit", "cancelled", "interrupted", "waiting", "stopped", "damaged"]);
const status = (s) => el("span", { class: "status status-" + (STATUSES.has(s) ? s : "other"), "data-status": s },
  s === "waiting" ? "waiting for approval" : u(s));
// a run resumed after it stopped unfinished (lw.resume): one run, in parts
const resumed = (r) => r.resumes ? el("span", { class: "resumed muted", title: "resumed after it stopped unfinished; the transcript marks each part" }, ` resumed ${r.resumes}x`) : null;

function textOf(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (typeof v === "object" && v.message) return textOf(v.message.content);
  if (Array.isArray(v)) return v.map((p) => (p && p.type === "text" ? p.text : JSON.stringify(p))).join("\n");
  return JSON.stringify(v);
}

function parseHash() {
  const h = location.hash.slice(1) || "/";
  const [path, query] = h.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: Object.fromEntries(new URLSearchParams(query || "")) };
}

async function route() {
  const gen = ++generation;
  liveBadge.textContent = "";
  const { parts, params } = parseHash();
  try {
    if (parts[0] === "run" && parts[1]) await runView(parts[1], params, gen);
    else await runsView(params, gen);
  } catch (err) {
    if (gen === generation) main.replaceChildren(el("p", { class: "error" }, "error: " + err.message));
  }
}

// --- the runs list --------------------------------------------------------------------
async function runsView(params, gen) {
  where.textContent = "runs";
  const offset = Number(params.offset || 0);
  const data = await api("runs", { ...params, offset, limit: 50 });
  if (gen !== generation) return;
  const field = (name, label) => el("input", { name, placeholder: label, value: params[name] || "" });
  const select = el("select", { name: "status" }, ["", "running", "success", "error", "limit", "cancelled", "interrupted", "waiting", "damaged"].map(
    (s) => el("option", { value: s, selected: (params.status || "") === s }, s || "any status")));
  const form = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    go("/", Object.fromEntries(new FormData(form)));
  } }, select, field("model", "model"), field("name", "name"), field("q", "search"), el("button", {}, "Filter"));
  const rows = data.runs.map((r) => {
    const stats = el("td", { class: "stats" });
    const tokens = el("td", { class: "tokens" });
    api(`runs/${encodeURIComponent(r.id)}/stats`).then((s) => {
      stats.textContent = s.model_calls; tokens.textContent = s.tokens.toLocaleString();
    }).catch(() => {});
    const score = r.metrics ? Object.entries(r.metrics).map(([sc, m]) =>
      sc + ": " + Object.entries(m).map(([k, v]) => `${k} ${v === null ? "-" : Number(v).toFixed(3)}`).join(", ")).join("; ") : "";
    return el("tr", { class: "run", "data-id": r.id },
      el("td", {}, link(`/run/${encodeURIComponent(r.id)}`, {}, r.name || r.id),
        // a row that cannot be read (lw.list_runs' placeholder): why, as text
        r.status === "damaged" ? el("div", { class: "why muted" }, r.error || "") : null),
      el("td", {}, status(r.status), resumed(r)), el("td", {}, r.model || ""), el("td", {}, fmtTime(r.created)),
      el("td", {}, fmtDur(r.duration)), stats, tokens, el("td", { class: "cost" }, fmtCost(r.cost, r.unpriced_calls)),
      el("td", {}, r.samples ? `${r.samples} samples ` : "", score));
  });
  const pager = el("div", { class: "pager" },
    offset > 0 ? link("/", { ...params, offset: Math.max(0, offset - 50) }, "← newer") : null,
    data.more ? link("/", { ...params, offset: offset + 50 }, "older →") : null);
  main.replaceChildren(form, data.runs.length ? el("table", { id: "runs" },
    el("tr", {}, ["run", "status", "model", "started", "duration", "model calls", "tokens", "cost", "eval"].map((h) => el("th", {}, h))),
    rows) : el("p", { class: "muted" }, "No runs match."), pager);
  if (data.runs.some((r) => r.status === "running")) {
    // live: the list is read again while a run on it is going (not while you type a filter)
    liveBadge.textContent = "● live";
    const again = () => {
      if (gen !== generation) return;
      if (form.contains(document.activeElement)) setTimeout(again, 3000);
      else route();
    };
    setTimeout(again, 3000);
  }
}

// --- a run ----------------------------------------------------------------------------
async function runView(id, params, gen) {
  const sample = params.sample || "";
  const run = await api(`runs/${encodeURIComponent(id)}`, { sample });
  if (gen !== generation) return;
  where.replaceChildren(link("/", {}, "runs"), " / ", u(run.name || run.id), sample ? [" / sample ", u(sample)] : "");
  const isEval = run.samples > 0 && !sample;
  const tab = params.tab || (params.event ? "transcript" : isEval ? "samples" : "conversation");
  const tabs = (isEval ? ["samples", "transcript", "store", "config"] : ["conversation", "transcript", "store", "config"]);
  const base = `/run/${encodeURIComponent(id)}`;
  const head = el("div", { class: "runhead" },
    el("h2", {}, u(run.name || run.id), " ", status(run.status), resumed(run)),
    el("div", { class: "muted" }, u(run.model), " · started ", fmtTime(run.created), " · ", fmtDur(run.duration), " · id ", u(run.id)),
    run.error ? el("pre", { class: "error" }, run.error) : null,
    run.metrics ? metricsView(run.metrics) : null,
    run.pending ? pendingView(run) : null,
    sample ? sampleHead(run.sample) : null);
  const nav = el("nav", { class: "tabs" }, tabs.map((t) => {
    const a = link(base, { tab: t, sample }, t);
    if (t === tab) a.className = "on";
    return a;
  }));
  const body = el("section", { id: "tab-" + tab });
  main.replaceChildren(head, nav, body);
  const views = { conversation: conversationView, transcript: transcriptView, store: storeView, config: configView, samples: samplesView };
  await (views[tab] || conversationView)(run, body, params, gen);
  if (run.status === "running" && tab !== "transcript") {
    // live: the transcript follows new events itself; the other tabs are read again
    liveBadge.textContent = "● live";
    setTimeout(() => { if (gen === generation) route(); }, 2000);
  }
}

function metricsView(metrics) {
  return el("div", { class: "metrics" }, Object.entries(metrics).map(([scorer, m]) =>
    el("div", {}, el("b", {}, scorer), " ", Object.entries(m).map(([k, v]) => `${k}: ${v === null ? "-" : Number(v).toFixed(3)}`).join(" · "))));
}

function sampleHead(s) {
  return el("table", { class: "sample" },
    el("tr", {}, el("th", {}, "input"), el("td", {}, el("pre", {}, textOf(s.input)))),
    el("tr", {}, el("th", {}, "target"), el("td", {}, el("pre", {}, textOf(s.target)))),
    el("tr", {}, el("th", {}, "answer"), el("td", {}, el("pre", {}, textOf(s.output)))),
    el("tr", {}, el("th", {}, "scores"), el("td", {}, json(s.scores))));
}

async function samplesView(run, body, params, gen) {
  const offset = Number(params.offset || 0);
  const data = await api(`runs/${encodeURIComponent(run.id)}/samples`, { offset, status: params.status, score: params.score });
  if (gen !== generation) return;
  const base = `/run/${encodeURIComponent(run.id)}`;
  const select = el("select", { name: "status" }, ["", "success", "error", "limit", "cancelled", "running"].map(
    (s) => el("option", { value: s, selected: (params.status || "") === s }, s || "any status")));
  const form = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    go(base, { tab: "samples", ...Object.fromEntries(new FormData(form)) });
  } }, select, el("input", { name: "score", placeholder: "score (e.g. 1)", value: params.score || "" }), el("button", {}, "Filter"));
  const rows = data.samples.map((s) => el("tr", { class: "sample-row", "data-key": s.key },
    el("td", {}, link(base, { sample: s.key }, u(s.id)), s.epoch > 1 ? ` (epoch ${s.epoch})` : ""),
    el("td", {}, status(s.status)), el("td", {}, textOf(s.input).slice(0, 300)), el("td", {}, textOf(s.target).slice(0, 200)),
    el("td", {}, textOf(s.output).slice(0, 300)),
    el("td", {}, s.scores ? Object.entries(s.scores).map(([k, v]) => `${k}: ${v.value}`).join(", ") : s.error || "")));
  const pager = el("div", { class: "pager" },
    offset > 0 ? link(base, { ...params, offset: Math.max(0, offset - 50) }, "← previous") : null,
    data.more ? link(base, { ...params, offset: offset + 50 }, "next →") : null);
  body.replaceChildren(form, el("table", { id: "samples" },
    el("tr", {}, ["sample", "status", "input", "target", "answer", "scores"].map((h) => el("th", {}, h))), rows), pager);
}

// --- the conversation -----------------------------------------------------------------
function contentView(content) {
  if (typeof content === "string") return el("div", { class: "text" }, content);
  return el("div", { class: "text" }, textOf(content));
}

async function conversationView(run, body, params, gen) {
  const offset = Number(params.offset || 0);
  const data = await api(`runs/${encodeURIComponent(run.id)}/conversation`, { sample: params.sample, offset });
  if (gen !== generation) return;
  const results = new Map();
  for (const m of data.messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const shown = new Set();
  const items = [];
  for (const m of data.messages) {
    if (m.role === "tool" && shown.has(m.tool_call_id)) continue;
    const calls = (m.tool_calls || []).map((c) => {
      shown.add(c.id);
      const res = results.get(c.id);
      return el("details", { class: "call", "data-call": c.id },
        el("summary", {}, "tool call ", el("b", {}, u(c.function)), res && res.error ? " (error)" : ""),
        el("div", { class: "muted" }, "arguments"), json(c.arguments),
        el("div", { class: "muted" }, "result"),
        res ? el("pre", { class: "result" }, textOf(res.content)) : el("p", { class: "muted" }, "no result"),
        whole(run, res, "message"),
        res && res.error ? el("pre", { class: "error" }, JSON.stringify(res.error)) : null);
    });
    items.push(el("div", { class: "msg " + m.role }, el("div", { class: "role" }, m.role), contentView(m.content), calls, whole(run, m, "message")));
  }
  const base = `/run/${encodeURIComponent(run.id)}`;
  const pager = el("div", { class: "pager" },
    offset > 0 ? link(base, { ...params, offset: Math.max(0, offset - 200) }, "← earlier") : null,
    offset + data.messages.length < data.total ? link(base, { ...params, offset: offset + 200 }, "later →") : null,
    el("span", { class: "muted" }, `${data.total} messages`));
  body.replaceChildren(items.length ? el("div", {}, items) : el("p", { class: "muted" }, "No conversation recorded yet."), pager);
}

// --- the transcript -------------------------------------------------------------------
function summaryOf(e) {
  switch (e.event) {
    case "model": return [u(e.model), e.output && e.output.model && e.output.model !== e.model ? [" → ", u(e.output.model)] : "",
      e.usage ? ` · ${e.usage.total_tokens} tokens` : "", typeof e.cost === "number" ? ` · ${fmtCost(e.cost, 0)}` : "", " · ", fmtDur(e.duration), e.pending ? " · pending" : "", e.error ? " · error" : ""];
    case "tool": return [u(e.call.function), " · ", fmtDur(e.duration), e.pending ? " · pending" : "", e.error ? " · error" : "", e.failure ? " · failed" : ""];
    case "span_begin": return [u(e.name), e.type ? [" (", u(e.type), ")"] : ""];
    case "span_end": return ["end", e.error ? [" · ", u(e.error)] : ""];
    case "subtask": return [u(e.name), " (", u(e.type), ")", " · ", fmtDur(e.duration), e.pending ? " · pending" : ""];
    case "store": return [`${e.changes.length} change(s)`];
    case "info": return [u(e.source), typeof e.data === "string" ? [" ", u(e.data.split("\n")[0].slice(0, 120))] : ""];
    case "logger": return [u(e.level), " ", u(e.logger), ": ", u(e.message.split("\n")[0].slice(0, 160))];
    case "limit": return [u(e.message)];
    case "error": return [u(e.error), ": ", u(e.message.split("\n")[0].slice(0, 160))];
    case "sandbox": return [u(e.action), " ", u(e.cmd ? JSON.stringify(e.cmd).slice(0, 120) : e.file || "")];
    default: return [];
  }
}

function messageView(m) {
  return el("div", { class: "msg " + m.role }, el("div", { class: "role" }, m.role), contentView(m.content),
    (m.tool_calls || []).map((c) => el("div", {}, "→ ", el("b", {}, u(c.function)), json(c.arguments))), m.cut ? el("div", { class: "cut muted" }, "cut to fit the page") : null);
}

function detailOf(e, run) {
  const kids = [];
  if (e.event === "model") {
    if (e.input_base_count) {
      const input = el("div", {}, el("div", { class: "muted" }, "full input"));
      const more = el("button", { onclick: async () => { // a page of them at a time
        const shown = input.childElementCount - 1;
        const d = await api(`runs/${encodeURIComponent(run.id)}/events/${encodeURIComponent(e.id)}/input`, { offset: shown });
        if (!input.isConnected) more.before(input);
        input.append(...d.messages.map(messageView));
        const now = shown + d.messages.length;
        if (now < d.total) more.textContent = `show more of the input (${now} of ${d.total} shown)`; else more.remove();
      } }, `show the ${e.input_base_count} earlier input messages`);
      kids.push(more);
    }
    kids.push(el("div", { class: "muted" }, "new input"), e.input_messages.map(messageView));
    if (e.output) kids.push(el("div", { class: "muted" }, "output"), messageView(e.output.message));
    if (e.usage) kids.push(el("div", { class: "muted" }, "usage"), json(e.usage));
    kids.push(el("div", { class: "muted" }, `latency ${fmtDur(e.duration)}, waited ${fmtDur(e.wait_time)}, retries ${e.retries}; tools: ${e.tools.join(", ")}`));
    if (e.error) kids.push(el("pre", { class: "error" }, e.error));
  } else if (e.event === "tool") {
    kids.push(el("div", { class: "muted" }, "arguments"), json(e.call.arguments));
    if (e.result) kids.push(el("div", { class: "muted" }, "result"), el("pre", { class: "result" }, textOf(e.result.content)));
    if (e.error) kids.push(el("div", { class: "muted" }, "error"), json(e.error));
    if (e.failure) kids.push(el("pre", { class: "error" }, e.failure, "\n", e.traceback || ""));
    if (e.approval) kids.push(el("div", { class: "muted" }, "approval"), json(e.approval));
  } else if (e.event === "store") {
    kids.push(json(e.changes));
    const btn = el("button", { onclick: async () => {
      const d = await api(`runs/${encodeURIComponent(run.id)}/store`, { sample: e.sample, upto: e.seq });
      btn.replaceWith(el("div", {}, el("div", { class: "muted" }, "the store at this point"), json(d.store)));
    } }, "show the store at this point");
    kids.push(btn);
  } else if (e.event === "info") {
    if (e.html !== undefined) {
      const md = el("div", { class: "md" });
      md.innerHTML = e.html; // markdown-it on the server: raw HTML escaped, unsafe links dropped
      kids.push(md);
    } else kids.push(json(e.data));
  } else if (e.event === "logger") kids.push(el("pre", {}, e.message));
  else if (e.event === "error") kids.push(el("pre", { class: "error" }, e.message, "\n\n", e.traceback || ""));
  else {
    const rest = { ...e };
    delete rest.depth; delete rest.seq; delete rest.sample;
    kids.push(json(rest));
  }
  kids.push(whole(run, e, "event"));
  return kids;
}

const folded = new Set(); // containers whose events are hidden in the transcript

function hideFolded(row) {
  row.hidden = row.dataset.parents.split(" ").some((p) => folded.has(p));
  return row;
}

function foldButton(e) {
  const btn = el("button", { class: "fold", title: "hide or show the events within" }, "fold");
  btn.addEventListener("click", (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    if (folded.has(e.id)) folded.delete(e.id); else folded.add(e.id);
    btn.textContent = folded.has(e.id) ? "unfold" : "fold";
    for (const r of document.querySelectorAll("#events details.ev")) hideFolded(r);
  });
  return btn;
}

function eventView(e, run, target) {
  const href = link(`/run/${encodeURIComponent(run.id)}`, { tab: "transcript", event: e.id }, "#").getAttribute("href");
  const container = e.event === "span_begin" || e.event === "tool" || e.event === "subtask";
  const row = el("details", { class: "ev ev-" + e.event + (e.id === target ? " target" : ""), id: "ev-" + e.id, "data-seq": e.seq, "data-id": e.id, "data-parents": e.parents.join(" "), open: e.id === target },
    el("summary", {}, el("span", { class: "kind" }, e.event), summaryOf(e),
      el("a", { class: "link", href, title: "a link to this event" }, "#" + e.seq),
      container ? foldButton(e) : null));
  row.style.marginLeft = Math.min(e.depth, 20) * 1.2 + "em";
  hideFolded(row);
  let filled = false;
  const fill = () => { if (!filled) { filled = true; row.append(el("div", { class: "body" }, detailOf(e, run))); } };
  if (row.open) fill();
  row.addEventListener("toggle", fill);
  return row;
}

async function transcriptView(run, body, params, gen) {
  folded.clear();
  const runPath = `runs/${encodeURIComponent(run.id)}/events`;
  const q = { sample: params.sample, limit: PAGE };
  if (params.event) q.event = params.event;
  else if (params.after) q.after = params.after;
  else if (params.before) q.before = params.before;
  else if (run.status === "running") q.before = -1; // a run going opens at its newest events
  const data = await api(runPath, q);
  if (gen !== generation) return;
  const list = el("div", { id: "events" });
  const base = `/run/${encodeURIComponent(run.id)}`;
  const sample = data.sample;
  let last = data.events.length ? data.events[data.events.length - 1].seq : null;
  const first = data.events.length ? data.events[0].seq : null;
  for (const e of data.events) list.append(eventView(e, run, params.event));
  const pager = el("div", { class: "pager" },
    link(base, { tab: "transcript", sample }, "⇤ first"),
    first !== null && first > data.first_seq ? link(base, { tab: "transcript", sample, before: first }, "← previous") : null,
    last !== null && last < data.last_seq ? link(base, { tab: "transcript", sample, after: last }, "next →") : null,
    link(base, { tab: "transcript", sample, before: -1 }, "last ⇥"),
    el("span", { class: "muted", id: "position" }, data.events.length ? `events #${first}–#${last} of #${data.first_seq}–#${data.last_seq}` : "no events yet"));
  body.replaceChildren(pager, list);
  if (params.event) {
    const t = document.getElementById("ev-" + params.event);
    if (t) t.scrollIntoView({ block: "center" });
  }
  // live: a run still going, seen up to its end, gains its new events as they are written
  const atEnd = last === null || last >= (data.last_seq ?? -1);
  if (data.status !== "running" || !atEnd) return;
  liveBadge.textContent = "● live";
  const tick = async () => {
    if (gen !== generation) return;
    const pending = [...list.querySelectorAll("details.ev")].filter((d) => d.dataset.pending).map((d) => d.dataset.id);
    try {
      const d = await api(runPath, { sample, after: last ?? -1, limit: PAGE, refresh: pending.slice(-100).join(",") });
      if (gen !== generation) return;
      for (const e of d.refreshed) {
        const old = document.getElementById("ev-" + e.id);
        if (old) old.replaceWith(mark(eventView(e, run, null), e));
      }
      for (const e of d.events) {
        list.append(mark(eventView(e, run, null), e));
        last = e.seq;
      }
      while (list.childElementCount > MAX_ROWS) list.firstElementChild.remove();
      document.getElementById("position").textContent = `events up to #${last ?? "-"} (live)`;
      if (d.status !== "running" && d.events.length < PAGE) {
        liveBadge.textContent = "";
        const s = document.querySelector(".runhead .status");
        if (s) s.replaceWith(status(d.status));
        return;
      }
    } catch (err) { /* the next tick tries again */ }
    setTimeout(tick, 1000);
  };
  for (const e of data.events) if (e.pending) document.getElementById("ev-" + e.id).dataset.pending = "1";
  setTimeout(tick, 1000);
}

function mark(row, e) { if (e.pending) row.dataset.pending = "1"; return row; }

// --- the store and the configuration --------------------------------------------------
async function storeView(run, body, params, gen) {
  const data = await api(`runs/${encodeURIComponent(run.id)}/store`, { sample: params.sample });
  if (gen !== generation) return;
  body.replaceChildren(el("div", { class: "muted" }, "the store as last recorded", data.cut ? " (cut to fit the page)" : ""), json(data.store));
}

async function configView(run, body) {
  const { id, name, model, input, metadata, limit, host, pid, created, finished, output } = run;
  body.replaceChildren(el("div", {}, run.cut ? el("div", { class: "cut muted" }, "cut to fit the page") : null,
    json({ id, name, model, input, metadata, limit, host, pid, created, finished, output })));
}

window.addEventListener("hashchange", route);
route();
