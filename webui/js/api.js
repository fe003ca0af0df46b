// Requests from the page to this server: the API key (kept in the browser's localStorage and sent as
// `Authorization: Bearer`), OpenAI-style error bodies turned into ApiError, and a reader of Server-Sent Events
// over fetch (EventSource cannot send the key).

const KEY_ITEM = 'lazyslot.apiKey';

export class ApiError extends Error {
  // status: the HTTP status (0: the server could not be reached or the connection broke)
  constructor(status, message, type = '') {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function apiKey() {
  try {
    return localStorage.getItem(KEY_ITEM) || '';
  } catch {
    return '';
  }
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_ITEM, key);
  else localStorage.removeItem(KEY_ITEM);
}

function headers(json, extra = {}) {
  const h = { ...extra };
  if (json) h['Content-Type'] = 'application/json';
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

// The error a failed response carries: its OpenAI-style body's message when there is one.
async function errorOf(res) {
  let message = `${res.status} ${res.statusText}`;
  let type = '';
  try {
    const body = await res.json();
    if (body && body.error) {
      message = typeof body.error === 'string' ? body.error : body.error.message || message;
      type = body.error.type || '';
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, message, type);
}

// extraHeaders: added to the request as they are (the MCP client's x-llama-server-proxy-header-* ones).
export async function send(path, { method = 'GET', body, signal, extraHeaders } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headers(body !== undefined, extraHeaders),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `the server cannot be reached (${e.message})`);
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

// A JSON request: the parsed body, or an ApiError.
export async function api(path, options = {}) {
  const res = await send(path, options);
  return res.json();
}

// Server-Sent Events of a GET or POST: yields {event, data} (data: the text of its data lines). A stream that
// breaks throws ApiError(0, ...); an abort (signal) throws the AbortError.
export async function* events(path, options = {}) {
  yield* readEvents(await send(path, options));
}

// The Server-Sent Events of a response already received (its headers read by the caller).
export async function* readEvents(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, `the connection to the server broke (${e.message})`);
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      let event = 'message';
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) continue;  // a comment (keep-alive)
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length) yield { event, data: data.join('\n') };
    }
  }
}
