// Sourcebook's web page: ask (streamed, cited answers kept as conversations), search,
// documents (drag-and-drop upload with live status; a summary and related documents beside
// each, reading.js) and the knowledge graph (graph.js).
// Talks only to the /v1 API.

import { ApiError, apiKey, events, getJSON, request, stream } from "./api.js";
import { initGraph } from "./graph.js";
import { showInsight, suggestions } from "./reading.js";
import { loadUsage } from "./usage.js";
import {
  answerParagraphs, confidenceBadge, h, highlighted, sourceList, termsPattern, timeAgo, where, withQuote,
} from "./render.js";

const $ = (id) => document.getElementById(id);
const state = { auth: true, sessionId: null, documents: [], busy: false };

// Status messages and errors -------------------------------------------------------------
let toastTimer;
function say(message) {
  const toast = $("status");
  toast.textContent = message;
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { toast.hidden = true; }, 4000);
}

/** Report a failed call; a 401 asks for the key again. */
function fail(error) {
  if (error instanceof ApiError && error.status === 401) {
    openKeyDialog(error.message);
    return;
  }
  say(error instanceof ApiError ? error.message : `Something went wrong: ${error.message}`);
  console.error(error);
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// Tabs (WAI-ARIA tabs: arrow keys move between them) ---------------------------------------
const tabs = [...document.querySelectorAll('[role="tab"]')];
function selectTab(tab) {
  for (const t of tabs) {
    const selected = t === tab;
    t.setAttribute("aria-selected", String(selected));
    t.tabIndex = selected ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !selected;
  }
  if (tab.id === "tab-documents") loadDocuments();
  if (tab.id === "tab-graph") graph.load();
  if (tab.id === "tab-usage") loadUsage(fail);
}
for (const tab of tabs) {
  tab.addEventListener("click", () => selectTab(tab));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length];
    next.focus();
    selectTab(next);
  });
}

// The API key -----------------------------------------------------------------------------
function showKeyState() {
  const button = $("key-button");
  button.hidden = !state.auth;
  button.dataset.state = apiKey.get() ? "set" : "missing";
  button.textContent = apiKey.get() ? "API key" : "Enter API key";
}

function openKeyDialog(message = "") {
  $("key-error").textContent = message;
  $("key-input").value = apiKey.get();
  if (!$("key-dialog").open) $("key-dialog").showModal();
  $("key-input").focus();
}

$("key-button").addEventListener("click", () => openKeyDialog());
$("key-forget").addEventListener("click", () => {
  apiKey.forget();
  $("key-input").value = "";
  showKeyState();
  $("key-error").textContent = "The key is forgotten.";
});
$("key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const previous = apiKey.get();
  apiKey.set($("key-input").value);
  try {
    await request("/v1/chat/sessions");  // any authenticated call: does the key work?
  } catch (error) {
    if (previous) apiKey.set(previous); else apiKey.forget();
    $("key-error").textContent = error instanceof ApiError ? error.message : String(error);
    return;
  }
  $("key-dialog").close();
  showKeyState();
  say("Key saved in this browser.");
  refresh();
});

// The passage a citation or a hit points to -----------------------------------------------
async function openPassage(ref, pattern = null) {
  const dialog = $("passage");
  const body = $("passage-body");
  $("passage-title").textContent = ref.title || "Passage";
  $("passage-meta").textContent = where(ref);
  body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  if (!dialog.open) dialog.showModal();
  try {
    const { document: doc, chunks } = await getJSON(`/v1/documents/${encodeURIComponent(ref.document_id)}/chunks`);
    $("passage-title").textContent = doc.title;
    $("passage-meta").textContent = [doc.source, where(ref)].filter(Boolean).join(" · ");
    let cited = null;
    let place = "";
    const nodes = chunks.map((chunk) => {
      const isCited = chunk.chunk_id === ref.chunk_id;
      const here = where(chunk);  // a label where the page, slide, rows or section change
      const label = here && here !== place ? h("span", { class: "section" }, here) : null;
      place = here;
      const text = isCited ? (ref.quote ? withQuote(chunk.text, ref.quote) : highlighted(chunk.text, pattern)) : [chunk.text];
      const el = h("div", { class: isCited ? "chunk cited" : "chunk", "data-chunk-id": chunk.chunk_id }, label, ...text);
      if (isCited) cited = el;
      return el;
    });
    body.replaceChildren(...nodes);
    if (cited) {
      cited.setAttribute("aria-label", "The cited passage");
      cited.tabIndex = -1;
      cited.scrollIntoView({ block: "center" });
      cited.focus({ preventScroll: true });
    }
  } catch (error) {
    body.replaceChildren(h("p", { class: "error" }, error.message));
  }
}
$("passage-close").addEventListener("click", () => $("passage").close());
$("passage").addEventListener("click", (event) => { if (event.target === $("passage")) $("passage").close(); });

// Ask -------------------------------------------------------------------------------------
function questionBubble(text) {
  return h("div", { class: "turn-question" }, text);
}

/** An answer bubble; `.finish(answer)` renders the final answer with its citations. */
function answerBubble() {
  const text = h("div", { class: "answer-text streaming" });
  const bubble = h("article", { class: "turn-answer", "aria-label": "Answer" }, text);
  let raw = "";
  return {
    element: bubble,
    append(delta) {
      raw += delta;
      text.textContent = raw;
      bubble.scrollIntoView({ block: "end" });
    },
    finish(answer) {
      text.classList.remove("streaming");
      bubble.classList.toggle("abstained", answer.abstained);
      text.replaceChildren(...answerParagraphs(answer.answer, answer.citations, (c) => openPassage(c)));
      const followups = (answer.follow_up_questions || []).map((q) =>
        h("button", { type: "button", onclick: () => ask(q) }, q));
      bubble.append(
        h("div", { class: "answer-meta" }, confidenceBadge(answer),
          answer.answerer && answer.answerer !== "extractive" ? h("span", { class: "badge" }, answer.answerer) : null),
        sourceList(answer.citations, (c) => openPassage(c)),
        suggestions(answer, (d) => openPassage(d)),
        followups.length ? h("div", { class: "followups", "aria-label": "Follow-up questions" }, followups) : null,
      );
    },
    error(message) {
      text.classList.remove("streaming");
      text.replaceChildren(h("p", { class: "error" }, message));
    },
  };
}

function showThread(nodes) {
  $("welcome").hidden = nodes.length > 0;
  $("thread").replaceChildren($("welcome"), ...nodes);
}

async function ask(question) {
  question = question.trim();
  if (!question || state.busy) return;
  state.busy = true;
  $("ask-submit").disabled = true;
  $("thread").setAttribute("aria-busy", "true");
  $("welcome").hidden = true;
  const bubble = answerBubble();
  $("thread").append(questionBubble(question), bubble.element);
  $("question").value = "";
  try {
    if (!state.sessionId) {
      const session = await getJSON("/v1/chat/sessions", { method: "POST", json: { title: question.slice(0, 200) } });
      state.sessionId = session.id;
    }
    for await (const { event, data } of stream(`/v1/chat/sessions/${state.sessionId}/messages/stream`, { content: question })) {
      if (event === "token") bubble.append(data.text);
      else if (event === "answer") bubble.finish(data);
      else if (event === "error") bubble.error(data.error.message);
    }
    loadSessions();
  } catch (error) {
    bubble.error(error.message);
    fail(error);
  } finally {
    state.busy = false;
    $("ask-submit").disabled = false;
    $("thread").setAttribute("aria-busy", "false");
    $("question").focus();
  }
}

$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  ask($("question").value);
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ask($("question").value);
  }
});
$("new-chat").addEventListener("click", () => {
  state.sessionId = null;
  showThread([]);
  markCurrentSession();
  $("question").focus();
});

function markCurrentSession() {
  for (const button of $("sessions").querySelectorAll("button.open")) {
    button.setAttribute("aria-current", String(button.dataset.id === state.sessionId));
  }
}

async function loadSessions() {
  try {
    const { sessions } = await getJSON("/v1/chat/sessions");
    $("sessions-empty").hidden = sessions.length > 0;
    $("sessions").replaceChildren(...sessions.map((s) => h("li", {},
      h("button", { type: "button", class: "open", "data-id": s.id, onclick: () => openSession(s.id) },
        h("span", { class: "title" }, s.title || "Untitled"),
        h("span", { class: "when" }, `${timeAgo(s.updated_at)} · ${plural(Math.floor(s.message_count / 2), "question")}`)),
      h("button", {
        type: "button", class: "delete", "aria-label": `Delete conversation: ${s.title || "Untitled"}`,
        onclick: () => deleteSession(s),
      }, "✕"))));
    markCurrentSession();
  } catch (error) {
    fail(error);
  }
}

async function deleteSession(session) {
  if (!confirm(`Delete the conversation “${session.title || "Untitled"}”?`)) return;
  try {
    await request(`/v1/chat/sessions/${encodeURIComponent(session.id)}`, { method: "DELETE" });
    if (state.sessionId === session.id) {
      state.sessionId = null;
      showThread([]);
    }
    loadSessions();
  } catch (error) {
    fail(error);
  }
}

async function openSession(id) {
  try {
    const { messages } = await getJSON(`/v1/chat/sessions/${encodeURIComponent(id)}`);
    state.sessionId = id;
    showThread(messages.map((m) => {
      if (m.role === "user") return questionBubble(m.content);
      const bubble = answerBubble();
      if (m.answer) bubble.finish(m.answer); else bubble.append(m.content);
      return bubble.element;
    }));
    markCurrentSession();
    $("question").focus();
  } catch (error) {
    fail(error);
  }
}

// Search ----------------------------------------------------------------------------------
$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const query = $("search-query").value.trim();
  if (!query) return;
  $("search-summary").textContent = "Searching…";
  try {
    const { hits } = await getJSON("/v1/search", {
      method: "POST", json: { query, mode: $("search-mode").value, top_k: 10, per_document: 3 },
    });
    const pattern = termsPattern(query);
    $("search-summary").textContent = hits.length ? `${hits.length} passages` : "Nothing matches.";
    $("hits").replaceChildren(...hits.map((hit) => h("li", { class: "hit" },
      h("div", { class: "hit-head" },
        h("button", { type: "button", onclick: () => openPassage(hit, pattern) }, hit.title),
        h("span", { class: "where" }, where(hit)),
        h("span", { class: "score", title: "score" }, hit.score.toFixed(3))),
      h("p", {}, ...highlighted(hit.text, pattern)))));
  } catch (error) {
    $("search-summary").textContent = "";
    fail(error);
  }
});

// Documents -------------------------------------------------------------------------------
const FINAL = new Set(["ready", "error"]);

function statusLabel(status, detail = "") {
  return h("span", { class: `status ${status}` }, detail ? `${status}: ${detail}` : status);
}

function renderDocuments() {
  const text = $("doc-filter").value.trim().toLowerCase();
  const status = $("doc-status").value;
  const collection = $("doc-collection").value;
  const shown = state.documents.filter((d) =>
    (!status || d.status === status) && (!collection || d.collection === collection) &&
    (!text || d.title.toLowerCase().includes(text) || d.source.toLowerCase().includes(text)));
  $("docs-empty").hidden = state.documents.length > 0;
  $("doc-rows").replaceChildren(...shown.map((d) => h("tr", {},
    h("td", {}, h("span", {}, d.title), h("span", { class: "source" }, d.source),
      d.error ? h("span", { class: "doc-error" }, d.error) : null),
    h("td", {}, d.collection),
    h("td", {}, statusLabel(d.status)),
    h("td", { class: "num" }, String(d.chunk_count)),
    h("td", { class: "actions" },
      d.status === "ready" ? h("button", {
        type: "button", class: "ghost small", "aria-label": `Summary and related documents of ${d.title}`,
        onclick: () => showInsight(d, openPassage, fail),
      }, "Summary") : null,
      h("button", {
        type: "button", class: "ghost small danger-text", "aria-label": `Delete ${d.title}`,
        onclick: () => deleteDocument(d),
      }, "Delete")))));
}

async function loadDocuments() {
  try {
    const { documents } = await getJSON("/v1/documents");
    state.documents = documents.sort((a, b) => a.title.localeCompare(b.title));
    const select = $("doc-collection");
    const chosen = select.value;
    const names = [...new Set(documents.map((d) => d.collection))].sort();
    select.replaceChildren(h("option", { value: "" }, "All"), ...names.map((n) => h("option", { value: n }, n)));
    select.value = names.includes(chosen) ? chosen : "";
    renderDocuments();
  } catch (error) {
    fail(error);
  }
}

async function deleteDocument(doc) {
  if (!confirm(`Delete “${doc.title}” and its passages?`)) return;
  try {
    await request(`/v1/documents/${encodeURIComponent(doc.id)}`, { method: "DELETE" });
    say(`Deleted ${doc.title}.`);
    loadDocuments();
  } catch (error) {
    fail(error);
  }
}

for (const id of ["doc-filter", "doc-status", "doc-collection"]) $(id).addEventListener("input", renderDocuments);

/** Follow one uploaded document's status until it is ready or failed. */
async function follow(doc, row) {
  try {
    const response = await request(`/v1/documents/${encodeURIComponent(doc.id)}/events`);
    for await (const { event, data } of events(response)) {
      if (event !== "status") continue;
      const detail = data.status === "ready" ? `${data.chunk_count} passages` : data.error || "";
      row.querySelector(".status").replaceWith(statusLabel(data.status, detail));
      if (FINAL.has(data.status)) break;
    }
  } catch (error) {
    row.querySelector(".status").replaceWith(statusLabel("error", error.message));
  }
  loadDocuments();
}

async function upload(files) {
  if (!files.length) return;
  const collection = $("upload-collection").value.trim() || "default";
  const rows = files.map((f) => h("li", {}, h("span", { class: "name" }, f.name), statusLabel("uploading")));
  $("uploads").prepend(...rows);
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  form.append("collection", collection);
  try {
    const { documents } = await getJSON("/v1/documents", { method: "POST", form });
    documents.forEach((doc, i) => {
      rows[i].querySelector(".status").replaceWith(statusLabel(doc.status));
      follow(doc, rows[i]);
    });
    loadDocuments();
  } catch (error) {
    for (const row of rows) row.querySelector(".status").replaceWith(statusLabel("error", error.message));
    fail(error);
  }
}

const dropzone = $("dropzone");
$("choose-files").addEventListener("click", () => $("file-input").click());
$("file-input").addEventListener("change", () => {
  upload([...$("file-input").files]);
  $("file-input").value = "";
});
for (const name of ["dragenter", "dragover"]) {
  dropzone.addEventListener(name, (event) => {
    event.preventDefault();
    dropzone.classList.add("dragging");
  });
}
for (const name of ["dragleave", "drop"]) {
  dropzone.addEventListener(name, () => dropzone.classList.remove("dragging"));
}
dropzone.addEventListener("drop", (event) => {
  event.preventDefault();
  upload([...event.dataTransfer.files]);
});

// Graph -----------------------------------------------------------------------------------
const graph = initGraph({ openPassage, fail, say });

// Start -----------------------------------------------------------------------------------
function refresh() {
  loadSessions();
  if (!$("view-documents").hidden) loadDocuments();
  if (!$("view-graph").hidden) graph.load();
}

async function start() {
  try {
    state.auth = (await getJSON("/healthz")).auth;
  } catch (error) {
    say(`The server does not answer: ${error.message}`);
  }
  showKeyState();
  if (state.auth && !apiKey.get()) openKeyDialog();
  else refresh();
}

start();
