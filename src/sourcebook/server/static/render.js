// DOM building for the page. Text from documents and answers is only ever set with
// textContent (never innerHTML), so a document cannot inject markup into the page.

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

/** h("p", {class: "x", onclick: f}, "text", child) -> element. */
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** The same for SVG: s("circle", {r: 4}). */
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);
}

/** Where a hit, citation or chunk is in its document: the server's `location` ("page 3",
 * "slide 2: Pricing", "sheet Sales, rows 2-40", "Section › Subsection"); answers stored
 * before it existed are described from their heading path and page. */
export function where(item) {
  if (typeof item.location === "string") return item.location;
  const parts = [];
  const path = sectionPath(item.heading_path, item.title);
  if (path) parts.push(path);
  if (item.page) parts.push(`page ${item.page}`);
  return parts.join(" · ");
}

/** A heading path as "A › B", without a leading heading that only repeats the title. */
export function sectionPath(headings = [], title = "") {
  const path = headings.length && headings[0] === title ? headings.slice(1) : headings;
  return path.join(" › ");
}

// Highlighting ---------------------------------------------------------------------------
const STOPWORDS = new Set(
  ("a an and are as at be by do does for from has have how i in is it its of on or our that the their " +
   "there this to was we what when where which who why will with you your can my me").split(" "),
);

/** Crude English stem so "policies" finds "policy" and "leaving" finds "leave". */
function stem(word) {
  for (const suffix of ["ies", "ing", "ed", "es", "s", "ly"]) {
    if (word.length - suffix.length >= 3 && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  }
  return word;
}

/** A regexp matching the query's content words (and their inflections), or null. */
export function termsPattern(query) {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 1 && !STOPWORDS.has(w));
  const stems = [...new Set(words.map(stem))].sort((a, b) => b.length - a.length);
  if (!stems.length) return null;
  const escaped = stems.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${escaped.join("|")})[\\p{L}\\p{N}]*`, "giu");
}

/** `text` as nodes, with each match of `pattern` in a <mark>. */
export function highlighted(text, pattern) {
  if (!pattern) return [document.createTextNode(text)];
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    nodes.push(h("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** `text` with the first occurrence of `quote` (whitespace-insensitive) in a <mark>. */
export function withQuote(text, quote) {
  if (!quote) return [document.createTextNode(text)];
  const words = quote.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const match = new RegExp(words.join("\\s+")).exec(text);
  if (!match) return [document.createTextNode(text)];
  return [
    document.createTextNode(text.slice(0, match.index)),
    h("mark", { class: "quote" }, match[0]),
    document.createTextNode(text.slice(match.index + match[0].length)),
  ];
}

// Answers -------------------------------------------------------------------------------
/** The answer's paragraphs, each [n] a button that opens citation n. */
export function answerParagraphs(text, citations, open) {
  const byNumber = new Map();
  for (const c of citations) if (!byNumber.has(c.n)) byNumber.set(c.n, c);
  return text.split(/\n{2,}/).filter((p) => p.trim()).map((paragraph) => {
    const p = h("p");
    let last = 0;
    for (const match of paragraph.matchAll(/\[(\d+)\]/g)) {
      const citation = byNumber.get(Number(match[1]));
      if (!citation) continue;
      p.append(paragraph.slice(last, match.index));
      p.append(h("button", {
        type: "button", class: "cite", "aria-label": `Source ${citation.n}: ${citation.title}`,
        title: `${citation.title}${where(citation) ? " — " + where(citation) : ""}`,
        onclick: () => open(citation),
      }, String(citation.n)));
      last = match.index + match[0].length;
    }
    p.append(paragraph.slice(last));
    return p;
  });
}

/** The numbered sources under an answer. */
export function sourceList(citations, open) {
  const seen = new Set();
  const items = citations.filter((c) => !seen.has(c.n) && seen.add(c.n)).map((c) =>
    h("li", {}, h("button", { type: "button", onclick: () => open(c) },
      h("span", { class: "n" }, `[${c.n}]`),
      h("span", {}, h("span", { class: "title" }, c.title), " ", h("span", { class: "where" }, where(c))),
    )));
  return items.length ? h("ol", { class: "sources", "aria-label": "Sources" }, items) : null;
}

export function confidenceBadge(answer) {
  if (answer.abstained) return h("span", { class: "badge low" }, "Not in the documents");
  const pct = Math.round(answer.confidence * 100);
  const level = pct >= 70 ? "high" : pct >= 40 ? "mid" : "low";
  return h("span", { class: `badge ${level}`, title: "How sure Sourcebook is of this answer" }, `Confidence ${pct}%`);
}

export function timeAgo(iso) {
  const then = new Date(iso.endsWith("Z") || iso.includes("+") ? iso : iso + "Z");
  const seconds = (Date.now() - then.getTime()) / 1000;
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return then.toLocaleDateString();
}
