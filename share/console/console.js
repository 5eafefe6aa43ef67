// lev's web console.  Every piece of text a run, a model or a tool wrote is
// put on the page with textContent, never as HTML; the page's CSP allows
// scripts from this server only.  It decides nothing: an answer is sent to
// the same daemon request `lev respond` sends, bound to the digest of the
// call this page showed.
"use strict";

const state = { token: sessionStorage.getItem("lev-token") || "", run: null, stream: null,
                shown: new Map() };

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function api(method, path, body) {
  const opts = { method, headers: { "Authorization": "Bearer " + state.token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const j = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}

function say(text, bad) {
  const s = document.getElementById("state");
  s.textContent = text;
  s.className = bad ? "error" : "";
}

// The digest of the call as this page shows it (docs/daemon.md): the
// SHA-256 of "lev-call-v1\n" and the call's text.
async function digestOf(q) {
  if (!window.crypto || !crypto.subtle) return q.digest;
  const data = new TextEncoder().encode("lev-call-v1\n" + q.call);
  const h = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  return Array.from(h, b => b.toString(16).padStart(2, "0")).join("");
}

async function answer(q, fields, box) {
  const body = Object.assign({ request: q.id }, fields);
  if (q.kind !== "question") body.digest = await digestOf(q);
  try {
    await api("POST", "/api/agents/" + encodeURIComponent(q.run) + "/interaction", body);
    box.replaceChildren(el("p", "answered", "empty"));
  } catch (e) {
    box.append(el("p", e.message, "error"));
  }
}

function button(label, q, fields, box, id) {
  const b = el("button", label);
  if (id) b.id = id;
  b.addEventListener("click", () => answer(q, fields, box));
  return b;
}

// The same choices as the terminal prompt of `lev run` and `lev respond`.
function choices(q, box) {
  const div = el("div", null, "choices");
  if (q.kind === "permission" || q.kind === "taint") {
    div.append(button("Approve once", q, { answer: "approve", scope: "once" }, box,
                      "approve-" + q.id));
    if (q.kind === "permission")
      div.append(button(q.stage_label || "Allow for this stage", q,
                        { answer: "approve", scope: "stage" }, box));
    div.append(button(q.run_label || "Allow for this run", q, { answer: "approve", scope: "run" },
                      box));
    div.append(button("Deny", q, { answer: "deny" }, box, "deny-" + q.id));
  } else if (q.question_kind === "choice") {
    (q.choices || []).forEach((c, i) => div.append(button(c, q, { choice: i }, box)));
  } else if (q.question_kind === "confirm") {
    div.append(button("Yes", q, { answer: "approve" }, box, "approve-" + q.id));
    div.append(button("No", q, { answer: "deny" }, box, "deny-" + q.id));
  } else {
    const input = el("input");
    input.type = "text";
    const send = el("button", "Send");
    send.addEventListener("click", () => answer(q, { text: input.value }, box));
    div.append(input, send);
  }
  return div;
}

function questionBox(q) {
  const box = el("div", null, "question");
  box.dataset.request = q.id;
  box.append(el("p", "run " + q.run + " (agent " + (q.agent || "?") + "), stage " +
                (q.stage || ""), "empty"));
  box.append(el("p", q.prompt || "", "prompt"));
  if (q.detail) box.append(el("p", q.detail));
  if (q.kind !== "question") {
    box.append(el("p", "The call, in full:"));
    box.append(el("pre", q.call || "(not shown: nothing to approve)", "call"));
  }
  box.append(choices(q, box));
  return box;
}

function renderQuestions(list) {
  const root = document.getElementById("questions");
  const open = new Set(list.map(q => q.id + "/" + q.digest));
  for (const [key, node] of state.shown)
    if (!open.has(key)) { node.remove(); state.shown.delete(key); }
  for (const q of list) {
    const key = q.id + "/" + q.digest;
    if (state.shown.has(key)) continue;
    const box = questionBox(q);
    state.shown.set(key, box);
    root.append(box);
  }
  root.querySelector(".empty-all")?.remove();
  if (!list.length && !root.querySelector(".question"))
    root.replaceChildren(el("p", "No run waits for an answer.", "empty empty-all"));
}

function reads(r) {
  const rp = r.read_paths || {};
  return rp.declared > 0 ? rp.granted + "/" + rp.declared : "-";
}

function renderRuns(items) {
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  for (const r of items) {
    const tr = el("tr");
    tr.dataset.run = r.id;
    const status = r.status === "error" && r.error ? "error: " + r.error : r.status;
    for (const v of [r.id, r.agent, status, r.stage || "-", reads(r)]) tr.append(el("td", v));
    tr.addEventListener("click", () => openRun(r.id));
    body.append(tr);
  }
}

async function showRun(id) {
  const r = await api("GET", "/api/agents/" + encodeURIComponent(id) + "/result");
  const meta = document.getElementById("run-meta");
  meta.replaceChildren();
  for (const k of ["status", "error", "record"])
    if (r[k]) meta.append(el("dt", k), el("dd", r[k]));
  document.getElementById("run-output").textContent =
    typeof r.result === "string" ? r.result : (r.result ? JSON.stringify(r.result, null, 2) : "");
}

// Server-sent events read with fetch(), so the token goes in a header, never the URL.
async function follow(id) {
  const ctl = new AbortController();
  state.stream = ctl;
  const list = document.getElementById("events");
  list.replaceChildren();
  try {
    const r = await fetch("/api/runs/" + encodeURIComponent(id) + "/events",
                          { headers: { "Authorization": "Bearer " + state.token },
                            signal: ctl.signal });
    if (!r.ok) throw new Error("events: HTTP " + r.status);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const chunk = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let name = "message", data = "";
        for (const line of chunk.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (chunk.startsWith(":")) continue;
        list.append(el("li", name + " " + data));
        if (name === "end") showRun(id).catch(() => {});
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") list.append(el("li", e.message, "error"));
  }
}

function openRun(id) {
  if (state.stream) state.stream.abort();
  state.run = id;
  document.getElementById("run").hidden = false;
  document.getElementById("run-id").textContent = id;
  showRun(id).catch(e => say(e.message, true));
  follow(id);
}

async function refresh() {
  try {
    const [runs, qs] = await Promise.all([api("GET", "/api/runs"), api("GET", "/api/interactions")]);
    renderRuns(runs.items || []);
    renderQuestions(qs.requests || []);
    if (state.run) await showRun(state.run);
    say("connected");
  } catch (e) {
    say(e.message, true);
  }
}

function start() {
  document.getElementById("login").hidden = true;
  document.getElementById("app").hidden = false;
  refresh();
  setInterval(refresh, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", ev => {
    ev.preventDefault();
    state.token = document.getElementById("token").value;
    sessionStorage.setItem("lev-token", state.token);
    start();
  });
  if (state.token) start();
});
