// The /v1 API as the page uses it: the API key, JSON requests, and server-sent events
// read from fetch() (EventSource can neither POST nor send an Authorization header).

const KEY_STORAGE = "sourcebook.apiKey";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const apiKey = {
  get: () => localStorage.getItem(KEY_STORAGE) || "",
  set: (value) => localStorage.setItem(KEY_STORAGE, value.trim()),
  forget: () => localStorage.removeItem(KEY_STORAGE),
};

function headers(extra = {}) {
  const key = apiKey.get();
  return key ? { Authorization: `Bearer ${key}`, ...extra } : extra;
}

async function failure(response) {
  let code = "http_error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) ({ code, message } = body.error);
  } catch { /* not JSON: keep the status line */ }
  return new ApiError(response.status, code, message);
}

/** fetch() with the key; `json` is sent as a JSON body, `form` as multipart. Throws ApiError. */
export async function request(path, { method = "GET", json, form, signal } = {}) {
  const init = { method, signal, headers: headers() };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers = headers({ "Content-Type": "application/json" });
  } else if (form !== undefined) {
    init.body = form;
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response;
}

export async function getJSON(path, options) {
  return (await request(path, options)).json();
}

/** The (event, data) pairs of a server-sent event stream, as they arrive; data parsed as JSON. */
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
    }
  }
}

/** POST `json` to `path` and yield its server-sent events. */
export async function* stream(path, json, signal) {
  yield* events(await request(path, { method: "POST", json, signal }));
}
