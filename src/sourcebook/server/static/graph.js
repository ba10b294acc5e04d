// The Graph view: the knowledge graph drawn on an SVG (force layout, nodes sized by mentions),
// zoom and pan, a box to find an entity, and a side panel with the selected entity's passages
// and its neighbours, each with the relation and the passages behind it. Nodes are buttons:
// Tab reaches them, Enter or Space opens one.

import { getJSON, request } from "./api.js";
import { forceLayout } from "./layout.js";
import { h, highlighted, s, where } from "./render.js";

const LIMIT = 150;            // entities drawn: the most mentioned
const LABELLED = 30;          // the most mentioned always show their name; the others on hover and focus
const TYPES = ["name", "acronym", "code", "phrase", "person", "organization", "product", "technology"];
const $ = (id) => document.getElementById(id);

const radius = (mentions) => 5 + 4 * Math.sqrt(mentions);
const colour = (type) => {
  const i = TYPES.indexOf(type);
  return `c${i >= 0 ? i : [...type].reduce((sum, ch) => sum + ch.charCodeAt(0), 0) % TYPES.length}`;
};
const plural = (n, word, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;

/** A case-insensitive regexp matching any of `names`, or null. */
function namesPattern(names) {
  const words = [...new Set(names.filter((n) => n && n.length > 1))].sort((a, b) => b.length - a.length);
  if (!words.length) return null;
  return new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
}

/** About `width` characters of `text` around the first match of `pattern`, the matches marked. */
function quote(text, pattern, width = 240) {
  const flat = text.replace(/\s+/g, " ").trim();
  const at = pattern ? Math.max(0, flat.search(pattern)) : 0;
  const start = Math.max(0, Math.min(at - width / 3, flat.length - width));
  let piece = flat.slice(start, start + width);
  if (start > 0) piece = "…" + piece.replace(/^\S*\s/, "");
  if (start + width < flat.length) piece = piece.replace(/\s\S*$/, "") + "…";
  return highlighted(piece, pattern);
}

export function initGraph({ openPassage, fail, say }) {
  const svg = $("graph-svg");
  const viewport = $("graph-viewport");
  const state = { graph: null, byId: new Map(), elements: new Map(), box: null, selected: null, loading: null };

  // Zoom and pan: the viewBox is the window onto the layout; its aspect follows the element's.
  function size() {
    return { w: svg.clientWidth || 1, h: svg.clientHeight || 1 };
  }
  function setBox(box) {
    state.box = box;
    state.scale = box.w / size().w;  // layout units per screen pixel
    svg.setAttribute("viewBox", `${box.x} ${box.y} ${box.w} ${box.h}`);
    viewport.setAttribute("font-size", String(12.5 * (box.w / size().w)));  // labels stay 12.5px on screen
  }
  function fit() {
    const nodes = state.graph ? state.graph.nodes : [];
    if (!nodes.length) return;
    const xs = nodes.flatMap((n) => [n.x - n.r, n.x + n.r + 60]);
    const ys = nodes.flatMap((n) => [n.y - n.r, n.y + n.r]);
    const pad = 20;
    let w = Math.max(...xs) - Math.min(...xs) + 2 * pad;
    let hgt = Math.max(...ys) - Math.min(...ys) + 2 * pad;
    const { w: cw, h: ch } = size();
    if (w / hgt < cw / ch) w = (hgt * cw) / ch; else hgt = (w * ch) / cw;
    const cx = (Math.max(...xs) + Math.min(...xs)) / 2;
    const cy = (Math.max(...ys) + Math.min(...ys)) / 2;
    setBox({ x: cx - w / 2, y: cy - hgt / 2, w, h: hgt });
  }
  function zoom(factor, px = size().w / 2, py = size().h / 2) {
    const box = state.box;
    if (!box) return;
    const scale = box.w / size().w;
    const x = box.x + px * scale;
    const y = box.y + py * scale;
    const w = Math.min(Math.max(box.w / factor, 50), 50000);
    const hgt = (w * box.h) / box.w;
    setBox({ x: x - ((x - box.x) * w) / box.w, y: y - ((y - box.y) * hgt) / box.h, w, h: hgt });
  }
  function centreOn(node) {
    const box = state.box;
    if (!box) return;
    const inside = node.x > box.x && node.x < box.x + box.w && node.y > box.y && node.y < box.y + box.h;
    if (!inside) setBox({ ...box, x: node.x - box.w / 2, y: node.y - box.h / 2 });
  }

  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const rect = svg.getBoundingClientRect();
    zoom(Math.pow(1.0015, -event.deltaY), event.clientX - rect.left, event.clientY - rect.top);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.target.closest(".node") || !state.box) return;
    drag = { x: event.clientX, y: event.clientY, box: state.box };
    svg.setPointerCapture(event.pointerId);
    svg.classList.add("panning");
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const scale = drag.box.w / size().w;
    setBox({ ...drag.box, x: drag.box.x - (event.clientX - drag.x) * scale, y: drag.box.y - (event.clientY - drag.y) * scale });
  });
  for (const name of ["pointerup", "pointercancel"]) {
    svg.addEventListener(name, () => { drag = null; svg.classList.remove("panning"); });
  }
  new ResizeObserver(() => {  // keep the centre and the scale when the element changes size
    const box = state.box;
    if (!box || !svg.clientWidth) return;
    const { w, h: hgt } = size();
    setBox({ x: box.x + box.w / 2 - (w * state.scale) / 2, y: box.y + box.h / 2 - (hgt * state.scale) / 2, w: w * state.scale, h: hgt * state.scale });
  }).observe(svg);
  $("zoom-in").addEventListener("click", () => zoom(1.4));
  $("zoom-out").addEventListener("click", () => zoom(1 / 1.4));
  $("zoom-fit").addEventListener("click", fit);

  // Drawing -----------------------------------------------------------------------------
  function draw(graph) {
    const nodes = graph.nodes.map((n) => ({ ...n, r: radius(n.mentions) }));
    forceLayout(nodes, graph.edges);
    state.graph = { ...graph, nodes };
    state.byId = new Map(nodes.map((n) => [n.id, n]));
    state.elements = new Map();
    const edges = graph.edges.filter((e) => state.byId.has(e.source) && state.byId.has(e.target)).map((e) => {
      const a = state.byId.get(e.source);
      const b = state.byId.get(e.target);
      const line = s("line", {
        class: "edge", x1: a.x.toFixed(1), y1: a.y.toFixed(1), x2: b.x.toFixed(1), y2: b.y.toFixed(1),
        "stroke-width": (1 + Math.log2(e.weight)).toFixed(2), "data-source": e.source, "data-target": e.target,
      }, s("title", {}, `${a.name} → ${e.relation} → ${b.name}`));
      return line;
    });
    const drawn = nodes.map((n, rank) => {
      const label = `${n.name} (${n.type}, ${plural(n.mentions, "mention")})`;
      const g = s("g", {
        class: `node ${colour(n.type)}${rank < LABELLED ? " labelled" : ""}`, transform: `translate(${n.x.toFixed(1)} ${n.y.toFixed(1)})`,
        tabindex: 0, role: "button", "aria-label": label, "data-id": n.id,
        onclick: () => select(n.name),
        onkeydown: (event) => {
          if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(n.name, { focusPanel: true }); }
        },
        onfocus: () => centreOn(n),
      }, s("circle", { r: n.r.toFixed(1) }), s("text", { x: n.r.toFixed(1), dx: "0.3em", dy: "0.35em" }, n.name));
      state.elements.set(n.id, g);
      return g;
    });
    // DOM order is Tab order: the most mentioned first (the small ones paint over them, staying visible).
    viewport.replaceChildren(s("g", { class: "edges" }, edges), s("g", { class: "nodes" }, drawn));
    fit();
    legend(nodes);
  }

  function legend(nodes) {
    const counts = new Map();
    for (const n of nodes) counts.set(n.type, (counts.get(n.type) || 0) + 1);
    $("graph-legend").replaceChildren(...[...counts].sort((a, b) => b[1] - a[1]).map(([type, count]) =>
      h("li", {}, h("span", { class: `swatch ${colour(type)}`, "aria-hidden": "true" }), `${type} `, h("span", { class: "muted" }, String(count)))));
  }

  function highlight(entity) {
    const near = new Set(entity ? entity.neighbours.map((n) => n.entity) : []);
    const id = entity ? entity.entity.key : null;
    svg.classList.toggle("focused", Boolean(entity));
    for (const [key, g] of state.elements) {
      g.classList.toggle("selected", key === id);
      g.classList.toggle("near", near.has(key));
      if (key === id) g.setAttribute("aria-current", "true"); else g.removeAttribute("aria-current");
    }
    for (const line of viewport.querySelectorAll(".edge")) {
      line.classList.toggle("hl", line.dataset.source === id || line.dataset.target === id);
    }
    if (id && state.byId.has(id)) centreOn(state.byId.get(id));
  }

  // The filter box: matching nodes stand out; Enter opens the best match (or asks the server) --
  function matches(text) {
    const q = text.trim().toLowerCase();
    if (!q || !state.graph) return [];
    return state.graph.nodes.filter((n) => n.name.toLowerCase().includes(q) || n.aliases.some((a) => a.includes(q)));
  }
  $("graph-filter").addEventListener("input", () => {
    const found = matches($("graph-filter").value);
    const ids = new Set(found.map((n) => n.id));
    const filtering = Boolean($("graph-filter").value.trim());
    svg.classList.toggle("filtering", filtering);
    for (const [key, g] of state.elements) g.classList.toggle("match", ids.has(key));
    $("graph-matches").textContent = filtering ? `${plural(found.length, "entity", "entities")} shown match${found.length === 1 ? "es" : ""}` : "";
  });
  $("graph-find").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("graph-filter").value.trim();
    if (!text) return;
    const [drawn] = matches(text);
    if (drawn) {
      await select(drawn.name);
      state.elements.get(drawn.id).focus();
      return;
    }
    try {
      const { entities } = await getJSON(`/v1/graph/entities?${new URLSearchParams({ q: text, limit: "1" })}`);
      if (entities.length) await select(entities[0].name, { focusPanel: true });
      else $("graph-matches").textContent = `No entity matches “${text}”.`;
    } catch (error) {
      fail(error);
    }
  });

  // The side panel ------------------------------------------------------------------------
  function passageList(passages, pattern) {
    return h("ol", { class: "entity-passages" }, passages.map((p) => h("li", {},
      h("div", { class: "passage-head" },
        h("button", { type: "button", class: "link-like bare", onclick: () => openPassage(p, pattern) }, p.title),
        h("span", { class: "where" }, where(p))),
      h("blockquote", {}, quote(p.text, pattern)))));
  }

  function neighbourItem(entity, n) {
    const other = n.outgoing ? n.target_name : n.source_name;
    const link = h("button", {
      type: "button", class: "neighbour-link", onclick: () => select(other, { focusPanel: true }),
      "aria-label": `Show ${other}`,
    }, other);
    const self = h("span", { class: "self" }, entity.name);
    const sentence = n.outgoing ? [self, h("span", { class: "rel" }, ` → ${n.relation} → `), link]
      : [link, h("span", { class: "rel" }, ` → ${n.relation} → `), self];
    const pattern = namesPattern([entity.name, other, ...entity.aliases]);
    return h("li", { class: "neighbour" },
      h("p", { class: "relation" }, ...sentence, h("span", { class: "weight muted" }, ` ${plural(n.passages.length, "passage")}`)),
      n.passages.length ? passageList(n.passages, pattern) : null);
  }

  function showEntity(view) {
    const e = view.entity;
    const pattern = namesPattern([e.name, ...e.aliases]);
    const meta = [e.type, `${plural(e.mentions, "mention")} in ${plural(e.documents, "document")}`];
    if (e.aliases.length) meta.push(`also ${e.aliases.join(", ")}`);
    $("entity-panel").replaceChildren(...[
      h("h2", { id: "entity-title", tabindex: "-1" }, e.name),
      h("p", { class: "entity-meta muted" }, meta.join(" · ")),
      e.summary ? h("p", { class: "entity-summary" }, e.summary) : null,
      h("h3", {}, `Passages (${view.passages.length})`),
      view.passages.length ? passageList(view.passages, pattern) : h("p", { class: "muted" }, "No passages."),
      h("h3", {}, `Neighbours (${view.neighbours.length})`),
      view.neighbours.length ? h("ul", { class: "neighbours" }, view.neighbours.map((n) => neighbourItem(e, n)))
        : h("p", { class: "muted" }, "No relations."),
    ].filter(Boolean));
    $("entity-panel").scrollTop = 0;
  }

  /** Open an entity by name in the panel and mark it (and its neighbours) in the drawing. */
  async function select(name, { focusPanel = false } = {}) {
    const ticket = (state.loading = {});
    try {
      const view = await getJSON(`/v1/graph/entities/${encodeURIComponent(name)}`);
      if (state.loading !== ticket) return;  // a later click won
      state.selected = view;
      showEntity(view);
      highlight(view);
      if (focusPanel) $("entity-title").focus();
    } catch (error) {
      fail(error);
    }
  }

  // Loading, the empty state, building and export ------------------------------------------
  function showEmpty(message, canBuild) {
    $("graph-body").hidden = true;
    $("graph-empty").hidden = false;
    $("graph-empty-text").textContent = message;
    $("graph-build").hidden = !canBuild;
    $("graph-update").hidden = true;
    $("graph-export").hidden = true;
  }

  async function load() {
    $("graph-summary").textContent = "Loading…";
    let graph;
    try {
      graph = await getJSON(`/v1/graph?limit=${LIMIT}`);
    } catch (error) {
      $("graph-summary").textContent = "";
      if (error.status === 403) showEmpty(error.message, false); else fail(error);
      return;
    }
    const { stats } = graph;
    if (!graph.nodes.length) {
      $("graph-summary").textContent = "";
      showEmpty(graph.can_build
        ? "Build it from the documents: the entities they name (names, acronyms, code identifiers, key phrases) and the " +
          "relations between them, each with the passages it came from."
        : "An API key with the write role on every collection can build it (or run sourcebook graph build).", graph.can_build);
      return;
    }
    $("graph-empty").hidden = true;
    $("graph-body").hidden = false;
    $("graph-update").hidden = !graph.can_build;
    $("graph-export").hidden = false;
    const shown = graph.nodes.length < stats.entities ? `the ${graph.nodes.length} most mentioned of ${stats.entities} entities`
      : plural(stats.entities, "entity", "entities");
    $("graph-summary").textContent = `${shown} · ${plural(stats.relations, "relation")} · from ${plural(stats.documents, "document")}`;
    draw(graph);
    svg.setAttribute("aria-label", `Knowledge graph: ${plural(graph.nodes.length, "entity", "entities")}, most mentioned first`);
    if (state.selected) highlight(state.selected);
  }

  async function build(button) {
    const label = button.textContent;
    button.disabled = true;
    button.textContent = "Building…";
    $("view-graph").setAttribute("aria-busy", "true");
    try {
      const report = await getJSON("/v1/graph/build", { method: "POST" });
      say(report.documents || report.up_to_date
        ? `Graph built from ${plural(report.documents, "document")} (${report.up_to_date} up to date): ` +
          `${plural(report.graph.entities, "entity", "entities")}, ${plural(report.graph.relations, "relation")}.`
        : "No ready documents to build a graph from: add some under Documents.");
      await load();
    } catch (error) {
      fail(error);
    } finally {
      button.disabled = false;
      button.textContent = label;
      $("view-graph").setAttribute("aria-busy", "false");
    }
  }
  $("graph-build").addEventListener("click", () => build($("graph-build")));
  $("graph-update").addEventListener("click", () => build($("graph-update")));

  $("graph-export").addEventListener("click", async () => {
    try {
      const blob = await (await request("/v1/graph/export?format=graphml")).blob();
      const url = URL.createObjectURL(blob);
      h("a", { href: url, download: "graph.graphml" }).click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    } catch (error) {
      fail(error);
    }
  });

  return { load };
}
