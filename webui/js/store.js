// Conversations kept in the browser (localStorage), each a tree of messages so that an edit or a regenerate
// makes a branch instead of replacing history; search, and export/import as one JSON file.
//
// conversation: { id, title, created, updated, system, model, leaf, roots: [messageId],
//                 messages: { [id]: { id, parent (null at the top), role, content, reasoning, tool_calls,
//                                     children: [id], created } } }
// The messages shown are the path from the top to `leaf`.

const ITEM = 'lazyslot.conversations.v1';
export const EXPORT_FORMAT = 'lazyslot-conversations';

export function newId() {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export class Store {
  constructor(storage = globalThis.localStorage) {
    this.storage = storage;
    this.conversations = this.load();
  }

  load() {
    try {
      const parsed = JSON.parse(this.storage.getItem(ITEM) || '[]');
      return Array.isArray(parsed) ? parsed.filter(isConversation) : [];
    } catch {
      return [];
    }
  }

  // Writes every conversation; a full storage throws an Error that says so.
  persist() {
    try {
      this.storage.setItem(ITEM, JSON.stringify(this.conversations));
    } catch (e) {
      throw new Error(`the browser's storage is full (${e.message}): export and delete old conversations`);
    }
  }

  list() {
    return [...this.conversations].sort((a, b) => b.updated - a.updated);
  }

  get(id) {
    return this.conversations.find((c) => c.id === id) || null;
  }

  create(system = '', model = '') {
    const now = Date.now();
    const c = { id: newId(), title: 'New conversation', created: now, updated: now, system, model,
                leaf: null, roots: [], messages: {} };
    this.conversations.push(c);
    return c;
  }

  save(conversation) {
    conversation.updated = Date.now();
    if (!this.get(conversation.id)) this.conversations.push(conversation);
    this.persist();
  }

  remove(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    this.persist();
  }

  // Conversations whose title or any message contains every word of `query` (case-insensitive).
  search(query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return this.list();
    return this.list().filter((c) => {
      const text = [c.title, c.system, ...Object.values(c.messages).map((m) => m.content || '')]
        .join('\n').toLowerCase();
      return words.every((w) => text.includes(w));
    });
  }

  exportJson() {
    return JSON.stringify({ format: EXPORT_FORMAT, version: 1, exported: new Date().toISOString(),
                            conversations: this.conversations }, null, 1);
  }

  // Adds the conversations of an exported file (a conversation already here, by id, is replaced by the
  // file's). Throws an Error naming what is wrong with a file that is not one.
  importJson(text) {
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new Error(`not a JSON file (${e.message})`);
    }
    if (!parsed || parsed.format !== EXPORT_FORMAT || !Array.isArray(parsed.conversations)) {
      throw new Error(`not a lazyslot export (expected {"format": "${EXPORT_FORMAT}", "conversations": [...]})`);
    }
    const good = parsed.conversations.filter(isConversation);
    const skipped = parsed.conversations.length - good.length;
    for (const c of good) {
      this.conversations = this.conversations.filter((x) => x.id !== c.id);
      this.conversations.push(c);
    }
    this.persist();
    return { added: good.length, skipped };
  }
}

// A stored conversation's shape, checked on load and import (so that the page never renders a broken tree).
export function isConversation(c) {
  if (!c || typeof c !== 'object' || typeof c.id !== 'string' || typeof c.title !== 'string') return false;
  if (!c.messages || typeof c.messages !== 'object' || !Array.isArray(c.roots)) return false;
  for (const [id, m] of Object.entries(c.messages)) {
    if (!m || m.id !== id || typeof m.content !== 'string' || !Array.isArray(m.children)) return false;
    if (!['user', 'assistant', 'system', 'tool'].includes(m.role)) return false;
    if (m.parent !== null && !c.messages[m.parent]) return false;
    if (m.children.some((k) => !c.messages[k])) return false;
  }
  if (c.roots.some((k) => !c.messages[k])) return false;
  if (c.leaf !== null && c.leaf !== undefined && !c.messages[c.leaf]) return false;
  return typeof c.updated === 'number';
}

// The messages from the top to `leaf` (default: the conversation's), oldest first.
export function pathTo(c, leaf = c.leaf) {
  const path = [];
  const seen = new Set();
  for (let id = leaf; id && c.messages[id] && !seen.has(id); id = c.messages[id].parent) {
    seen.add(id);
    path.unshift(c.messages[id]);
  }
  return path;
}

// Adds a message under `parent` (null: a new top) and makes it the leaf.
export function addMessage(c, parent, fields) {
  const m = { id: newId(), parent, role: fields.role, content: fields.content || '', reasoning: fields.reasoning || '',
              tool_calls: fields.tool_calls || null, children: [], created: Date.now() };
  if (fields.tool_call_id) m.tool_call_id = fields.tool_call_id;
  c.messages[m.id] = m;
  if (parent) c.messages[parent].children.push(m.id);
  else c.roots.push(m.id);
  c.leaf = m.id;
  if (c.title === 'New conversation' && m.role === 'user') c.title = m.content.slice(0, 60).trim() || c.title;
  return m;
}

// The message's siblings (itself included), in order.
export function siblingsOf(c, id) {
  const m = c.messages[id];
  return m.parent ? c.messages[m.parent].children : c.roots;
}

// The newest descendant along the last children from `id`: where switching to a branch lands.
export function lastLeafFrom(c, id) {
  let m = c.messages[id];
  while (m.children.length) m = c.messages[m.children[m.children.length - 1]];
  return m.id;
}
