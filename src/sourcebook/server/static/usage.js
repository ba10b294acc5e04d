// The Usage tab: what the tenant used, by day and API key (GET /v1/usage, admin keys only), so
// an operator sees the LLM tokens behind the bill and how close a tenant is to its quotas.

import { ApiError, getJSON } from "./api.js";
import { h } from "./render.js";

const $ = (id) => document.getElementById(id);
const COUNTS = ["requests", "llm_calls", "input_tokens", "output_tokens", "embedding_calls", "embedded_texts"];
const number = new Intl.NumberFormat();

/** Load the last 31 days of usage into the table; a key that is not an admin's gets a plain note. */
export async function loadUsage(fail) {
  const since = new Date(Date.now() - 30 * 86400000).toISOString().slice(0, 10);
  try {
    const data = await getJSON(`/v1/usage?since=${since}`);
    const rows = data.usage;
    const tokens = rows.reduce((sum, r) => sum + r.input_tokens + r.output_tokens, 0);
    const requests = rows.reduce((sum, r) => sum + r.requests, 0);
    $("usage-summary").textContent = rows.length
      ? `Tenant ${data.tenant} since ${since}: ${number.format(requests)} requests, ${number.format(tokens)} LLM tokens.`
      : `No usage recorded for tenant ${data.tenant} since ${since}.`;
    $("usage-rows").replaceChildren(...rows.map((r) => h("tr", {},
      h("td", {}, r.day), h("td", {}, r.api_key || "ingestion"),
      ...COUNTS.map((name) => h("td", { class: "num" }, number.format(r[name]))))));
    $("usage-table").hidden = !rows.length;
  } catch (error) {
    $("usage-table").hidden = true;
    if (error instanceof ApiError && error.status === 403) {
      $("usage-summary").textContent = "Usage is shown to admin keys only.";
      return;
    }
    fail(error);
  }
}
