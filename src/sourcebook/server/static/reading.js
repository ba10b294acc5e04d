// A document's summary and the documents like it (beside the documents panel), and the
// "you may also want to read" list under an answer. Talks to /v1/documents/{id}/summary and
// /v1/documents/{id}/related; every citation and related document opens its passage.

import { getJSON } from "./api.js";
import { answerParagraphs, h, sourceList } from "./render.js";

const $ = (id) => document.getElementById(id);

/** The related documents as a list of buttons, each opening the passage that matched. */
export function relatedList(documents, open, label) {
  if (!documents || !documents.length) return null;
  return h("ol", { class: "sources related", "aria-label": label }, documents.map((d) =>
    h("li", {}, h("button", { type: "button", onclick: () => open(d) },
      h("span", {}, h("span", { class: "title" }, d.title), " ",
        h("span", { class: "where" }, d.collection)),
    ))));
}

/** "You may also want to read" under an answer, or null when it cited everything it found. */
export function suggestions(answer, open) {
  const list = relatedList(answer.related, open, "You may also want to read");
  return list ? h("div", { class: "suggestions" }, h("p", { class: "suggestions-head" }, "You may also want to read"), list) : null;
}

/** Open the summary-and-related drawer of `doc`; `openPassage(ref)` shows a cited or related passage. */
export async function showInsight(doc, openPassage, fail) {
  const dialog = $("insight");
  const open = (ref) => { dialog.close(); openPassage(ref); };
  $("insight-title").textContent = doc.title;
  $("insight-meta").textContent = `${doc.source} · ${doc.collection}`;
  $("insight-summary").replaceChildren(h("p", { class: "muted" }, "Summarizing…"));
  $("insight-related").replaceChildren(h("p", { class: "muted" }, "Looking for similar documents…"));
  if (!dialog.open) dialog.showModal();
  const id = encodeURIComponent(doc.id);
  const [summary, related] = await Promise.allSettled([
    getJSON(`/v1/documents/${id}/summary`), getJSON(`/v1/documents/${id}/related`),
  ]);
  if (summary.status === "fulfilled") {
    const s = summary.value;
    $("insight-summary").replaceChildren(
      ...answerParagraphs(s.summary || "Nothing to summarize.", s.citations, open),
      sourceList(s.citations, open) || "",
      h("p", { class: "muted small-text" }, s.summarizer === "extractive"
        ? "Sentences quoted from the document." : `Written by ${s.summarizer}, every sentence checked against its source.`),
    );
  } else {
    $("insight-summary").replaceChildren(h("p", { class: "error" }, summary.reason.message));
  }
  if (related.status === "fulfilled") {
    const list = relatedList(related.value.documents, open, "Related documents");
    $("insight-related").replaceChildren(list || h("p", { class: "muted" }, "No similar documents."));
  } else {
    $("insight-related").replaceChildren(h("p", { class: "error" }, related.reason.message));
    fail(related.reason);
  }
}

$("insight-close").addEventListener("click", () => $("insight").close());
$("insight").addEventListener("click", (event) => { if (event.target === $("insight")) $("insight").close(); });
