// The page's controller: the model picker, conversations (store.js) with streaming, stop, edit, regenerate,
// continue and branches, the settings (defaults from /props), the API-key prompt, and the memory tab
// (memory.js). Everything it sends goes to this server's own API (/v1/chat/completions, /v1/models, /props,
// /models/load, /tokenize, /health, /memory/stream).
import { api, events, ApiError, apiKey, setApiKey } from './api.js';
import { Store, addMessage, pathTo, siblingsOf, lastLeafFrom } from './store.js';
import { renderMarkdown, escapeHtml } from './markdown.js';
import { MemoryView } from './memory.js';
import { McpServer, toolDefinition } from './mcp.js';

const $ = (sel) => document.querySelector(sel);
const SETTINGS_ITEM = 'lazyslot.settings';
const SAMPLING_FIELDS = ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'repeat_penalty'];
const MAX_TOOL_ROUNDS = 10;        // tool calls answered in a row before the page stops and says so
const MAX_PASTE_CHARS = 1_000_000;  // a paste above this is refused before it reaches the composer
const TOKENIZE_ABOVE = 2000;        // pastes longer than this are counted in tokens against the context

const state = {
  store: null,
  conv: null,
  models: [],      // /v1/models data
  router: false,   // the server lists several models with a status (router mode)
  model: '',
  props: null,     // /props of the model
  streaming: null, // { abort, convId, msgId }
  settings: {},
  tools: [],       // GET /tools: the server's built-in tools (--tools), each {tool, display_name, definition}
  mcp: [],         // connected MCP servers (settings, through /cors-proxy)
  keyPrompt: null, // the promise of an open key dialog
};

// ---------------------------------------------------------------------------------------------- errors
function showError(message) {
  $('#error-text').textContent = message;
  $('#error-banner').hidden = false;
}
function clearError() {
  $('#error-banner').hidden = true;
}

// Opens the key dialog (once, however many requests got a 401) and resolves when a key was entered.
function askForKey(reason) {
  if (state.keyPrompt) return state.keyPrompt;
  const dialog = $('#key-dialog');
  $('#key-reason').textContent = reason ||
    'This server needs an API key (--api-key). It is kept in this browser only.';
  $('#key-input').value = '';
  state.keyPrompt = new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      const key = $('#key-input').value.trim();
      if (key) setApiKey(key);
      state.keyPrompt = null;
      resolve(Boolean(key));
    }, { once: true });
  });
  dialog.showModal();
  return state.keyPrompt;
}

// Runs fn; a 401 asks for the key (saying why the last one was refused) and tries again, until the key
// works or the dialog is closed empty.
async function withKey(fn) {
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 401) throw e;
      const reason = apiKey() ? `The server refused this API key (${e.message}). Enter the right one.` : undefined;
      if (!(await askForKey(reason))) throw e;
    }
  }
}

// ---------------------------------------------------------------------------------------------- settings
function loadSettings() {
  try {
    state.settings = JSON.parse(localStorage.getItem(SETTINGS_ITEM) || '{}') || {};
  } catch {
    state.settings = {};
  }
}
function saveSettings() {
  localStorage.setItem(SETTINGS_ITEM, JSON.stringify(state.settings));
}
function serverDefault(field) {
  const p = state.props?.default_generation_settings?.params || {};
  if (field === 'max_tokens') return p.n_predict ?? p.max_tokens ?? -1;
  return p[field];
}
function fillSettingsForm() {
  $('#set-system').value = state.settings.system || '';
  for (const f of SAMPLING_FIELDS) {
    const input = $(`#set-${f}`);
    input.value = state.settings[f] ?? '';
    const d = serverDefault(f);
    input.placeholder = d === undefined ? '' : String(Math.round(d * 1000) / 1000);
  }
  $('#set-api-key').value = apiKey();
  $('#set-mcp').value = state.settings.mcpServers || '';
}
function readSettingsForm() {
  state.settings.system = $('#set-system').value;
  for (const f of SAMPLING_FIELDS) {
    const v = $(`#set-${f}`).value.trim();
    if (v === '') delete state.settings[f];
    else state.settings[f] = Number(v);
  }
  setApiKey($('#set-api-key').value.trim());
  state.settings.toolsOff = [...document.querySelectorAll('#set-tools input[type=checkbox]')]
    .filter((i) => !i.checked).map((i) => i.value);
  const mcp = $('#set-mcp').value.trim();
  const mcpChanged = mcp !== (state.settings.mcpServers || '');
  state.settings.mcpServers = mcp;
  saveSettings();
  if (mcpChanged) connectMcp();
}

// ---------------------------------------------------------------------------------------------- models
function modelStatus(m) {
  return typeof m.status === 'object' && m.status ? m.status.value : m.status || 'loaded';
}

async function loadModels() {
  const list = await withKey(() => api('/v1/models'));
  state.models = list.data || [];
  state.router = state.models.some((m) => typeof m.status === 'object' && m.status);
  const select = $('#model-select');
  const wanted = state.model || state.settings.model;
  select.replaceChildren(...state.models.map((m) => {
    const o = document.createElement('option');
    o.value = m.id;
    o.textContent = state.router ? `${m.id} (${modelStatus(m)})` : m.id;
    o.dataset.status = modelStatus(m);
    return o;
  }));
  const pick = state.models.find((m) => m.id === wanted) ||
               state.models.find((m) => modelStatus(m) === 'loaded') || state.models[0];
  if (pick) {
    select.value = pick.id;
    state.model = pick.id;
  }
  $('#model-select').disabled = state.models.length < 2;
  renderModelState();
}

function renderModelState() {
  const m = state.models.find((x) => x.id === state.model);
  $('#model-state').textContent = m && state.router ? modelStatus(m) : '';
  $('#model-state').dataset.status = m ? modelStatus(m) : '';
}

// The model's /props. In router mode with ?autoload=false: opening the page must not load a model (only a
// pick does), so a model that is not loaded has no props yet (400 or 503).
async function loadProps() {
  const q = state.router ? `?model=${encodeURIComponent(state.model)}&autoload=false` : '';
  const m = state.models.find((x) => x.id === state.model);
  if (state.router && (!m || modelStatus(m) !== 'loaded')) {
    state.props = null;
    return;
  }
  try {
    state.props = await withKey(() => api(`/props${q}`));
  } catch (e) {
    state.props = null;
    if (!(e instanceof ApiError && (e.status === 503 || (state.router && e.status === 400)))) throw e;
  }
}

// Router mode: a model that is not loaded is loaded when picked (POST /models/load), then its defaults read.
async function pickModel(id) {
  state.model = id;
  state.settings.model = id;
  saveSettings();
  const m = state.models.find((x) => x.id === id);
  try {
    if (state.router && m && modelStatus(m) !== 'loaded') {
      $('#model-state').textContent = 'loading...';
      $('#model-state').dataset.status = 'loading';
      await withKey(() => api('/models/load', { method: 'POST', body: { model: id } }));
      await loadModels();
    }
    await loadProps();
    clearError();
  } catch (e) {
    showError(`Could not load ${id}: ${e.message}`);
    await loadModels().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------- sidebar
function renderSidebar() {
  const query = $('#search').value;
  const list = state.store.search(query);
  $('#conv-list').replaceChildren(...list.map((c) => {
    const li = document.createElement('li');
    li.className = 'conv-item' + (state.conv && c.id === state.conv.id ? ' active' : '');
    li.dataset.id = c.id;
    const title = document.createElement('span');
    title.className = 'conv-title';
    title.textContent = c.title;
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'conv-delete';
    del.title = 'Delete';
    del.textContent = '×';
    li.append(title, del);
    return li;
  }));
}

function openConversation(id) {
  state.conv = id ? state.store.get(id) : null;
  renderSidebar();
  renderMessages();
}

function newConversation() {
  state.conv = null;  // created on the first message
  renderSidebar();
  renderMessages();
  $('#prompt').focus();
}

function exportConversations() {
  const blob = new Blob([state.store.exportJson()], { type: 'application/json' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `lazyslot-conversations-${new Date().toISOString().slice(0, 10)}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importConversations(file) {
  try {
    const { added, skipped } = state.store.importJson(await file.text());
    renderSidebar();
    showError(`Imported ${added} conversation(s)` + (skipped ? `; ${skipped} malformed one(s) skipped` : ''));
  } catch (e) {
    showError(`Import failed: ${e.message}`);
  }
}

// ---------------------------------------------------------------------------------------------- messages
function messageBody(m) {
  const parts = [];
  if (m.reasoning) {
    parts.push(`<details class="reasoning"><summary>Reasoning</summary><div class="reasoning-text">${renderMarkdown(m.reasoning)}</div></details>`);
  }
  if (m.role === 'assistant') parts.push(`<div class="content markdown">${renderMarkdown(m.content)}</div>`);
  else if (m.role === 'tool') {
    parts.push(`<details class="tool-result"><summary>result</summary><pre class="content">${escapeHtml(m.content)}</pre></details>`);
  } else parts.push(`<div class="content plain">${escapeHtml(m.content)}</div>`);
  for (const call of m.tool_calls || []) {
    const fn = call.function || {};
    parts.push(`<div class="tool-call"><span class="tool-label">tool call</span> <code class="tool-name">${escapeHtml(fn.name || '')}</code><pre class="tool-args">${escapeHtml(fn.arguments || '')}</pre></div>`);
  }
  if (m.stopped) parts.push('<div class="note">stopped</div>');
  if (m.error) parts.push(`<div class="note error-note">${escapeHtml(m.error)}</div>`);
  return parts.join('');
}

function messageElement(m, isLast) {
  const c = state.conv;
  const el = document.createElement('div');
  el.className = `msg role-${m.role}`;
  el.dataset.id = m.id;
  el.dataset.role = m.role;
  const head = document.createElement('div');
  head.className = 'msg-head';
  const who = document.createElement('span');
  who.className = 'msg-role';
  who.textContent = m.role === 'user' ? 'You' : m.role === 'tool' ? `tool ${m.tool_name || ''}` : state.conv.model || m.role;
  head.append(who);
  const sibs = siblingsOf(c, m.id);
  if (sibs.length > 1) {
    const i = sibs.indexOf(m.id);
    const nav = document.createElement('span');
    nav.className = 'branch-nav';
    nav.innerHTML = `<button type="button" class="branch-prev" ${i === 0 ? 'disabled' : ''}>‹</button>` +
      `<span class="branch-pos">${i + 1}/${sibs.length}</span>` +
      `<button type="button" class="branch-next" ${i === sibs.length - 1 ? 'disabled' : ''}>›</button>`;
    head.append(nav);
  }
  const body = document.createElement('div');
  body.className = 'msg-body';
  body.innerHTML = messageBody(m);
  const actions = document.createElement('div');
  actions.className = 'msg-actions';
  const busy = Boolean(state.streaming);
  const buttons = m.role === 'tool' ? [['act-copy', 'Copy']] : [['act-copy', 'Copy'], ['act-edit', 'Edit']];
  if (m.role === 'assistant') buttons.push(['act-regenerate', 'Regenerate']);
  if (m.role === 'assistant' && isLast) buttons.push(['act-continue', 'Continue']);
  for (const [cls, label] of buttons) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = cls;
    b.textContent = label;
    b.disabled = busy && cls !== 'act-copy';
    actions.append(b);
  }
  el.append(head, body, actions);
  return el;
}

function renderMessages() {
  const box = $('#messages');
  if (!state.conv) {
    const hello = document.createElement('div');
    hello.className = 'empty';
    hello.textContent = 'Send a message to start a conversation. The Memory tab shows what the server holds.';
    box.replaceChildren(hello);
    return;
  }
  const path = pathTo(state.conv);
  box.replaceChildren(...path.map((m, i) => messageElement(m, i === path.length - 1)));
  box.scrollTop = box.scrollHeight;
}

let redrawPending = false;
function redrawStreaming() {
  if (redrawPending) return;
  redrawPending = true;
  requestAnimationFrame(() => {
    redrawPending = false;
    const s = state.streaming;
    if (!s || !state.conv || state.conv.id !== s.convId) return;
    const el = document.querySelector(`.msg[data-id="${s.msgId}"] .msg-body`);
    if (!el) return;
    const box = $('#messages');
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    el.innerHTML = messageBody(state.conv.messages[s.msgId]);
    if (atBottom) box.scrollTop = box.scrollHeight;
  });
}

function setBusy(busy) {
  $('#stop').hidden = !busy;
  $('#send').disabled = busy;
  document.body.dataset.streaming = busy ? '1' : '0';
}

// The request's messages: the system prompt, then the path to `upTo` (its last message included).
function requestMessages(conv, upTo) {
  const out = [];
  if (conv.system) out.push({ role: 'system', content: conv.system });
  for (const m of pathTo(conv, upTo)) {
    const msg = { role: m.role, content: m.content };
    if (m.tool_calls && m.tool_calls.length) msg.tool_calls = m.tool_calls;
    if (m.role === 'tool') msg.tool_call_id = m.tool_call_id || '';
    out.push(msg);
  }
  return out;
}

// Streams an answer to the path ending at `parentId` into a new assistant message, or, with `into`, onto the
// end of that assistant message (continue: it is sent as the last message and the model goes on from it).
async function generate(parentId, into = null) {
  const conv = state.conv;
  const target = into || addMessage(conv, parentId, { role: 'assistant', content: '' });
  target.stopped = false;
  target.error = '';
  conv.model = conv.model || state.model;
  const body = { model: state.model, messages: requestMessages(conv, into ? into.id : parentId), stream: true,
                 stream_options: { include_usage: true } };
  for (const f of SAMPLING_FIELDS) if (state.settings[f] !== undefined) body[f] = state.settings[f];
  const tools = activeTools();
  if (tools.length) body.tools = tools.map((t) => t.definition);
  const abort = new AbortController();
  state.streaming = { abort, convId: conv.id, msgId: target.id };
  setBusy(true);
  renderMessages();
  let finished = false;
  try {
    await withKey(async () => {
      for await (const ev of events('/v1/chat/completions', { method: 'POST', body, signal: abort.signal })) {
        if (ev.data === '[DONE]') {
          finished = true;
          break;
        }
        const chunk = JSON.parse(ev.data);
        if (chunk.error) throw new ApiError(chunk.error.code || 500, chunk.error.message || 'error');
        for (const choice of chunk.choices || []) {
          const d = choice.delta || {};
          if (d.content) target.content += d.content;
          if (d.reasoning_content) target.reasoning += d.reasoning_content;
          for (const tc of d.tool_calls || []) mergeToolCall(target, tc);
          if (choice.finish_reason) target.finish = choice.finish_reason;
        }
        redrawStreaming();
      }
    });
    if (!finished) throw new ApiError(0, 'the answer ended before the server finished it (the connection closed)');
    clearError();
  } catch (e) {
    if (e.name === 'AbortError') {
      target.stopped = true;
    } else {
      target.error = e.status === 0 ? `Connection lost: ${e.message}. The partial answer is kept.` : `Error: ${e.message}`;
      showError(target.error);
    }
  } finally {
    state.streaming = null;
    setBusy(false);
    try {
      state.store.save(conv);
    } catch (e) {
      showError(e.message);
    }
    renderSidebar();
    renderMessages();
  }
  if (finished && target.tool_calls && target.tool_calls.length) await answerToolCalls(conv, target);
}

// ---------------------------------------------------------------------------------------------- tools
// The tools offered to the model: the server's built-in ones not unticked, then the MCP servers' (a name
// already taken is skipped). Each: {tool, definition, run(params) -> text}.
function activeTools() {
  const off = state.settings.toolsOff || [];
  const out = state.tools.filter((t) => !off.includes(t.tool)).map((t) => ({
    tool: t.tool, definition: t.definition,
    run: async (params) => {
      const result = await withKey(() => api('/tools', { method: 'POST', body: { tool: t.tool, params } }));
      return typeof result.plain_text_response === 'string' && !result.error
        ? result.plain_text_response : JSON.stringify(result);
    },
  }));
  for (const server of state.mcp) {
    for (const t of server.tools) {
      if (out.some((x) => x.tool === t.name)) continue;
      out.push({ tool: t.name, definition: toolDefinition(t), run: (params) => server.call(t.name, params) });
    }
  }
  return out;
}

// Connects to the MCP servers of the settings (one URL per line) and lists their tools.
async function connectMcp() {
  const urls = (state.settings.mcpServers || '').split('\n').map((u) => u.trim()).filter(Boolean);
  const status = $('#mcp-status');
  state.mcp = [];
  if (!urls.length) {
    status.textContent = '';
    return;
  }
  if (!state.props?.cors_proxy_enabled) {
    status.textContent = 'The server\'s MCP proxy is off: start it with --ui-mcp-proxy.';
    return;
  }
  const notes = [];
  for (const url of urls) {
    const server = new McpServer(url);
    try {
      await withKey(() => server.connect());
      state.mcp.push(server);
      notes.push(`${url}: ${server.tools.length} tool(s)`);
    } catch (e) {
      notes.push(`${url}: ${e.message}`);
      showError(`MCP server ${url}: ${e.message}`);
    }
  }
  status.textContent = notes.join('; ');
  document.body.dataset.mcpTools = String(state.mcp.reduce((n, m) => n + m.tools.length, 0));
}

// Runs the server's built-in tools the answer called (POST /tools), adds each result as a tool message and
// asks the model to go on, up to MAX_TOOL_ROUNDS answers in a row. A call of a tool the page did not offer
// gets an error result, so the model sees why.
async function answerToolCalls(conv, answer) {
  let rounds = 0;
  for (let m = answer; m && m.role !== 'user'; m = m.parent ? conv.messages[m.parent] : null) {
    if (m.role === 'assistant' && m.tool_calls && m.tool_calls.length) ++rounds;
  }
  if (rounds > MAX_TOOL_ROUNDS) {
    showError(`Stopped after ${MAX_TOOL_ROUNDS} rounds of tool calls in a row; send a message to go on.`);
    return;
  }
  const offered = activeTools();
  let parent = answer.id;
  for (const call of answer.tool_calls) {
    const name = call.function?.name || '';
    const tool = offered.find((t) => t.tool === name);
    let content;
    if (!tool) {
      content = JSON.stringify({ error: `the tool '${name}' is not available here` });
    } else {
      try {
        let params = {};
        try {
          params = call.function.arguments ? JSON.parse(call.function.arguments) : {};
        } catch (e) {
          throw new Error(`the arguments are not JSON (${e.message})`);
        }
        content = await tool.run(params);
      } catch (e) {
        content = JSON.stringify({ error: e.message });
      }
    }
    const result = addMessage(conv, parent, { role: 'tool', content, tool_call_id: call.id || '' });
    result.tool_name = name;
    parent = result.id;
  }
  state.store.save(conv);
  renderMessages();
  await generate(parent);
}

async function loadTools() {
  state.tools = [];
  if (!state.props || !Array.isArray(state.props.tools) || !state.props.tools.length) return renderToolSettings();
  try {
    state.tools = await withKey(() => api('/tools'));
  } catch (e) {
    showError(`Cannot list the server's tools: ${e.message}`);
  }
  renderToolSettings();
}

function renderToolSettings() {
  const box = $('#set-tools');
  box.hidden = !state.tools.length;
  const off = state.settings.toolsOff || [];
  box.querySelector('.tool-list').replaceChildren(...state.tools.map((t) => {
    const label = document.createElement('label');
    label.className = 'tool-toggle';
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.value = t.tool;
    input.checked = !off.includes(t.tool);
    label.append(input, ` ${t.display_name || t.tool}${t.permissions?.write ? ' (writes files)' : ''}`);
    return label;
  }));
}

function mergeToolCall(m, delta) {
  m.tool_calls = m.tool_calls || [];
  const i = delta.index ?? m.tool_calls.length;
  const call = m.tool_calls[i] || (m.tool_calls[i] = { id: '', type: 'function', function: { name: '', arguments: '' } });
  if (delta.id) call.id = delta.id;
  if (delta.function?.name) call.function.name += delta.function.name;
  if (delta.function?.arguments) call.function.arguments += delta.function.arguments;
}

async function send(text) {
  if (state.streaming || !text.trim()) return;
  if (!state.conv) {
    state.conv = state.store.create(state.settings.system || '', state.model);
  }
  const user = addMessage(state.conv, state.conv.leaf, { role: 'user', content: text });
  $('#prompt').value = '';
  $('#composer-note').textContent = '';
  await generate(user.id);
}

function startEdit(id) {
  const m = state.conv.messages[id];
  const el = document.querySelector(`.msg[data-id="${id}"]`);
  const body = el.querySelector('.msg-body');
  const area = document.createElement('textarea');
  area.className = 'edit-area';
  area.value = m.content;
  area.rows = Math.min(12, m.content.split('\n').length + 1);
  const save = document.createElement('button');
  save.type = 'button';
  save.className = 'edit-save';
  save.textContent = m.role === 'user' ? 'Save and send' : 'Save';
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'edit-cancel';
  cancel.textContent = 'Cancel';
  body.replaceChildren(area, save, cancel);
  area.focus();
  cancel.onclick = () => renderMessages();
  save.onclick = async () => {
    // An edit is a new branch beside the original, which stays reachable with ‹ ›.
    const edited = addMessage(state.conv, m.parent, { role: m.role, content: area.value });
    if (m.role === 'user') await generate(edited.id);
    else {
      state.store.save(state.conv);
      renderMessages();
    }
  };
}

function onMessageClick(e) {
  const button = e.target.closest('button');
  if (!button) return;
  if (button.classList.contains('copy-code')) {
    const code = button.closest('.code-block')?.querySelector('code');
    copyText(code ? code.textContent : '', button);
    return;
  }
  const el = button.closest('.msg');
  if (!el || !state.conv) return;
  const m = state.conv.messages[el.dataset.id];
  if (button.classList.contains('act-copy')) copyText(m.content, button);
  else if (button.classList.contains('act-edit')) startEdit(m.id);
  else if (button.classList.contains('act-regenerate')) generate(m.parent);
  else if (button.classList.contains('act-continue')) generate(m.parent, m);
  else if (button.classList.contains('branch-prev') || button.classList.contains('branch-next')) {
    const sibs = siblingsOf(state.conv, m.id);
    const j = sibs.indexOf(m.id) + (button.classList.contains('branch-next') ? 1 : -1);
    if (j < 0 || j >= sibs.length) return;
    state.conv.leaf = lastLeafFrom(state.conv, sibs[j]);
    state.store.save(state.conv);
    renderMessages();
  }
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  const old = button.textContent;
  button.textContent = 'Copied';
  setTimeout(() => { button.textContent = old; }, 1200);
}

// A paste that is too big for one message is refused with the reason; a long one is counted in tokens.
async function onPaste(e) {
  const text = e.clipboardData?.getData('text') || '';
  const area = $('#prompt');
  const total = area.value.length + text.length;
  if (total > MAX_PASTE_CHARS) {
    e.preventDefault();
    showError(`The pasted text is too long: ${total.toLocaleString()} characters, more than the ` +
              `${MAX_PASTE_CHARS.toLocaleString()} this page sends in one message. Nothing was pasted.`);
    return;
  }
  if (total < TOKENIZE_ABOVE) return;
  setTimeout(() => countTokens(area.value), 0);
}

async function countTokens(text) {
  const note = $('#composer-note');
  try {
    const r = await withKey(() => api('/tokenize', { method: 'POST', body: { content: text, model: state.model } }));
    const n = r.tokens.length;
    const ctx = state.props?.default_generation_settings?.n_ctx || 0;
    note.textContent = `${n.toLocaleString()} tokens` + (ctx ? ` of the ${ctx.toLocaleString()}-token context` : '');
    if (ctx && n >= ctx) {
      showError(`This message is too long for the model: ${n.toLocaleString()} tokens, and a conversation ` +
                `holds at most ${ctx.toLocaleString()} (the server's --ctx-size per slot). Shorten it.`);
    }
  } catch (err) {
    note.textContent = '';
  }
}

// ---------------------------------------------------------------------------------------------- status
async function pollHealth() {
  const el = $('#server-status');
  try {
    const res = await fetch('/health');
    const body = await res.json().catch(() => ({}));
    el.textContent = res.ok ? 'server ready' : `server: ${body.error?.message || body.status || res.status}`;
    el.dataset.state = res.ok ? 'ok' : 'busy';
  } catch {
    el.textContent = 'server unreachable';
    el.dataset.state = 'down';
  }
}

// ---------------------------------------------------------------------------------------------- tabs
let memoryView = null;
function showTab(name) {
  const memory = name === 'memory';
  $('#chat-view').hidden = memory;
  $('#memory-view').hidden = !memory;
  $('#tab-chat').classList.toggle('active', !memory);
  $('#tab-memory').classList.toggle('active', memory);
  if (memory && !memoryView) {
    memoryView = new MemoryView($('#memory-view'), { onAuth: () => askForKey().then((ok) => {
      if (ok) { memoryView.stop(); memoryView.start(); }
    }) });
    window.lazyslotUi.memory = memoryView;
    memoryView.start();
  } else if (memory) {
    memoryView.draw();
  }
  if (location.hash !== (memory ? '#memory' : '')) history.replaceState(null, '', memory ? '#memory' : location.pathname);
}

// ---------------------------------------------------------------------------------------------- start
async function main() {
  state.store = new Store();
  window.lazyslotUi = { state, store: state.store, memory: null };
  loadSettings();
  $('#composer').addEventListener('submit', (e) => {
    e.preventDefault();
    send($('#prompt').value);
  });
  $('#prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send($('#prompt').value);
    }
  });
  $('#prompt').addEventListener('paste', onPaste);
  $('#stop').addEventListener('click', () => state.streaming?.abort.abort());
  $('#messages').addEventListener('click', onMessageClick);
  $('#new-chat').addEventListener('click', newConversation);
  $('#search').addEventListener('input', renderSidebar);
  $('#conv-list').addEventListener('click', (e) => {
    const li = e.target.closest('.conv-item');
    if (!li) return;
    if (e.target.closest('.conv-delete')) {
      if (!confirm('Delete this conversation?')) return;
      state.store.remove(li.dataset.id);
      if (state.conv?.id === li.dataset.id) state.conv = null;
      openConversation(state.conv?.id);
    } else {
      openConversation(li.dataset.id);
    }
  });
  $('#export').addEventListener('click', exportConversations);
  $('#import-file').addEventListener('change', (e) => {
    if (e.target.files[0]) importConversations(e.target.files[0]);
    e.target.value = '';
  });
  $('#error-close').addEventListener('click', clearError);
  $('#model-select').addEventListener('change', (e) => pickModel(e.target.value));
  $('#tab-chat').addEventListener('click', () => showTab('chat'));
  $('#tab-memory').addEventListener('click', () => showTab('memory'));
  $('#open-settings').addEventListener('click', () => {
    fillSettingsForm();
    $('#settings').showModal();
  });
  $('#settings-reset').addEventListener('click', () => {
    for (const f of SAMPLING_FIELDS) $(`#set-${f}`).value = '';
  });
  $('#settings').addEventListener('close', () => {
    if ($('#settings').returnValue !== 'save') return;
    readSettingsForm();
    if (state.conv && !Object.keys(state.conv.messages).length) state.conv.system = state.settings.system;
  });

  const recent = state.store.list()[0];
  openConversation(recent ? recent.id : null);
  setBusy(false);
  pollHealth();
  setInterval(pollHealth, 5000);
  showTab(location.hash === '#memory' ? 'memory' : 'chat');
  try {
    await loadModels();
    await loadProps();
    await loadTools();
    await connectMcp();
    document.body.dataset.ready = '1';
  } catch (e) {
    showError(`Cannot talk to the server: ${e.message}`);
  }
}

// The service worker (/sw.js) only explains an unreachable server; a page without it works the same.
if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {});
main();
