// Safe, streaming-tolerant Markdown -> HTML renderer and small code highlighter for the lazyslot chat page.
// All input text is HTML-escaped; the only markup in the output is produced here, and links are emitted
// only for http:, https: and mailto: URLs. Blocks are joined without whitespace (safe under pre-wrap).

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s) {
  return (s == null ? '' : String(s)).replace(/[&<>"']/g, (c) => ESC[c]);
}

// ---------------------------------------------------------------- blocks

const MAX_DEPTH = 16; // nesting limit for quotes/lists (deeper input stays text)
const FENCE = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const FENCE_END = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}>/;
const LIST = /^( *)([-*+]|(\d{1,9})[.)])(?:([ \t]+)(.*))?$/;

export function renderMarkdown(text) {
  const src = (text == null ? '' : String(text)).replace(/\r\n?/g, '\n').replace(/\0/g, '\uFFFD');
  return renderBlocks(src.split('\n'), 0, false);
}

const isBlank = (l) => /^[ \t]*$/.test(l);
const indentOf = (l) => /^ */.exec(l)[0].length;

function isFence(l) {
  const m = FENCE.exec(l);
  return m && !(m[2][0] === '`' && m[3].includes('`')) ? m : null;
}

// Leading tabs -> spaces (tab stops of 4), so list indentation can be measured.
function expandTabs(line) {
  if (!/^ *\t/.test(line)) return line;
  let col = 0, k = 0;
  for (; line[k] === ' ' || line[k] === '\t'; k++) col = line[k] === '\t' ? col + 4 - (col % 4) : col + 1;
  return ' '.repeat(col) + line.slice(k);
}

function listMatch(raw) {
  const m = LIST.exec(expandTabs(raw));
  if (!m) return null;
  const sp = m[4] ? m[4].length : 0, ordered = m[3] !== undefined;
  return { indent: m[1].length, ordered, start: ordered ? parseInt(m[3], 10) : 1, rest: m[5] || '',
    contentIndent: m[1].length + m[2].length + (sp >= 1 && sp <= 4 ? sp : 1) };
}

// Does line i start a block that ends a running paragraph?
function interrupts(lines, i) {
  const l = lines[i];
  if (isFence(l) || HEADING.test(l) || HR.test(l) || QUOTE.test(l)) return true;
  const m = listMatch(l);
  if (m && m.rest.trim() && (!m.ordered || m.start === 1)) return true;
  return isTableStart(lines, i);
}

function renderBlocks(lines, depth, tight) {
  const out = [], n = lines.length;
  let i = 0, m;
  while (i < n) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }
    if ((m = isFence(line))) {
      // Fenced code: runs to the closing fence, or to the end while streaming.
      const ind = m[1].length, fence = m[2];
      const lang = m[3].trim().split(/\s+/)[0] || '';
      const body = [], strip = new RegExp(`^ {0,${ind}}`);
      for (i++; i < n; i++) {
        const e = FENCE_END.exec(lines[i]);
        if (e && e[1][0] === fence[0] && e[1].length >= fence.length) { i++; break; }
        body.push(lines[i].replace(strip, ''));
      }
      out.push(codeBlock(body.join('\n'), lang));
    } else if ((m = HEADING.exec(line))) {
      const content = (m[2] || '').replace(/(?:^|[ \t]+)#+[ \t]*$/, ''); // drop closing #s
      out.push(`<h${m[1].length}>${renderInline(content)}</h${m[1].length}>`);
      i++;
    } else if (HR.test(line)) {
      out.push('<hr>');
      i++;
    } else if (depth < MAX_DEPTH && QUOTE.test(line)) {
      const inner = [];
      while (i < n) {
        const l = lines[i];
        const q = /^ {0,3}> ?/.exec(l);
        if (q) inner.push(l.slice(q[0].length));
        else if (isBlank(l) || isBlank(inner[inner.length - 1]) || interrupts(lines, i)) break;
        else inner.push(l); // lazy continuation of a quoted paragraph
        i++;
      }
      out.push(`<blockquote>${renderBlocks(inner, depth + 1, false)}</blockquote>`);
    } else if (depth < MAX_DEPTH && listMatch(line)) {
      i = parseList(lines, i, depth, out);
    } else if (isTableStart(lines, i)) {
      i = parseTable(lines, i, out);
    } else { // paragraph: consecutive lines; newlines become <br> in renderInline
      const para = [line.trim()];
      for (i++; i < n && !isBlank(lines[i]) && !interrupts(lines, i); i++) para.push(lines[i].trim());
      const html = renderInline(para.join('\n'));
      out.push(tight ? html : `<p>${html}</p>`);
    }
  }
  return out.join('');
}

function codeBlock(code, lang) {
  const l = escapeHtml(lang);
  return '<div class="code-block"><div class="code-head"><span class="code-lang">' + (l || 'text') +
    '</span><button type="button" class="copy-code" title="Copy">Copy</button></div><pre><code' +
    (l ? ` class="language-${l}"` : '') + '>' + highlight(code, lang) + '</code></pre></div>';
}

// Lists: siblings sit less than 2 columns deeper than the first marker;
// anything indented 2+ columns belongs to the current item (nested blocks).
function parseList(lines, i, depth, out) {
  const first = listMatch(lines[i]);
  const base = first.indent, ordered = first.ordered;
  const items = [];
  let cur = null, loose = false, blank = false;
  for (; i < lines.length; i++) {
    if (isBlank(lines[i])) { cur.lines.push(''); blank = true; continue; }
    const line = expandTabs(lines[i]);
    const ind = indentOf(line);
    const m = ind < base + 2 && !HR.test(line) ? listMatch(line) : null;
    if (m) {
      if (m.ordered !== ordered) break;
      if (blank) loose = true;
      cur = { lines: [m.rest], ci: m.contentIndent };
      items.push(cur);
    } else if (ind >= base + 2) {
      const inner = line.slice(Math.min(ind, cur.ci));
      // A blank line followed by more direct content of the item makes the list loose.
      if (blank && indentOf(inner) < 2 && !listMatch(inner)) loose = true;
      cur.lines.push(inner);
    } else if (!blank && !interrupts(lines, i)) {
      cur.lines.push(line.trim()); // lazy continuation line
    } else break;
    blank = false;
  }
  const tag = ordered ? 'ol' : 'ul';
  let html = `<${tag}${ordered && first.start !== 1 ? ` start="${first.start}"` : ''}>`;
  for (const it of items) {
    while (it.lines.length && isBlank(it.lines[it.lines.length - 1])) it.lines.pop();
    html += `<li>${renderBlocks(it.lines, depth + 1, !loose)}</li>`;
  }
  out.push(html + `</${tag}>`);
  return i;
}

// Split a table row on unescaped pipes; `\|` becomes a literal pipe.
function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === '\\' && k + 1 < s.length) { cur += s[k + 1] === '|' ? '|' : c + s[k + 1]; k++; }
    else if (c === '|') { cells.push(cur.trim()); cur = ''; }
    else cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function isTableStart(lines, i) {
  const h = lines[i], d = lines[i + 1];
  if (d === undefined || !h.includes('|') || !d.includes('|') || !/^[ \t|:-]+$/.test(d)) return false;
  const dc = splitRow(d);
  return dc.every((c) => /^:?-+:?$/.test(c)) && splitRow(h).length === dc.length;
}

function parseTable(lines, i, out) {
  const head = splitRow(lines[i]);
  const align = splitRow(lines[i + 1]).map((c) =>
    c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : c.startsWith(':') ? 'left' : '');
  const cell = (tag, txt, k) =>
    `<${tag}${align[k] ? ` style="text-align:${align[k]}"` : ''}>${renderInline(txt || '')}</${tag}>`;
  let html = '<table><thead><tr>' + head.map((c, k) => cell('th', c, k)).join('') + '</tr></thead>';
  let body = '';
  for (i += 2; i < lines.length && lines[i].includes('|') && !isBlank(lines[i]) && !interrupts(lines, i); i++) {
    const cells = splitRow(lines[i]);
    body += '<tr>' + head.map((_, k) => cell('td', cells[k], k)).join('') + '</tr>';
  }
  if (body) html += `<tbody>${body}</tbody>`;
  out.push(html + '</table>');
  return i;
}

// ---------------------------------------------------------------- inline

const ASCII_PUNCT = /^[!-/:-@[-`{-~]$/;
const isWs = (c) => c === undefined || /\s/.test(c);
const isPunct = (c) => c !== undefined && /[\p{P}\p{S}]/u.test(c);
const AUTOLINK = /<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>/y;
const EMAIL = /<([\w.!#$%&'*+/=?^`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)>/y;
const BARE_URL = /https?:\/\/[^\s<>`]+/iy;

// Returns the URL if it may become a link, else null.
function safeUrl(raw) {
  const u = raw.trim();
  if (/[\0-\x1f\x7f]/.test(u) || !/^(?:https?:\/\/|mailto:)[^\s]/i.test(u)) return null;
  return u.replace(/ /g, '%20');
}

function anchor(url, html, title) {
  return `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer"` +
    (title ? ` title="${escapeHtml(title)}"` : '') + `>${html}</a>`;
}

// Code spans: map opening-run index -> [run length, index of closing run].
// Each run is paired with the next run of equal length (linear time).
function codeSpans(src) {
  const runs = [];
  for (let i = src.indexOf('`'), j; i >= 0; i = src.indexOf('`', j)) {
    for (j = i; src[j] === '`'; j++);
    runs.push([i, j - i]);
  }
  const nextSame = [], seen = new Map(), spans = new Map();
  for (let r = runs.length - 1; r >= 0; r--) nextSame[r] = seen.get(runs[r][1]) ?? -1, seen.set(runs[r][1], r);
  for (let r = 0; r < runs.length; ) {
    const [s, len] = runs[r];
    let bs = 0;
    while (src[s - 1 - bs] === '\\') bs++;
    if (bs % 2 === 1 || nextSame[r] < 0) { r++; continue; } // escaped or never closed
    spans.set(s, [len, runs[nextSame[r]][0]]);
    r = nextSame[r] + 1;
  }
  return spans;
}

// Pair [ with ], skipping escapes and code spans: map '[' index -> ']' index.
function matchBrackets(src, spans) {
  const close = new Map(), stack = [];
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (c === '`' && spans.has(i)) { const [len, e] = spans.get(i); i = e + len - 1; }
    else if (c === '[') stack.push(i);
    else if (c === ']' && stack.length) close.set(stack.pop(), i);
  }
  return close;
}

// Parse "(dest "title")" right after the ']' at index `close`.
function parseLinkTail(src, close) {
  if (src[close + 1] !== '(') return null;
  let p = close + 2;
  const skipWs = () => { while (p < src.length && /[ \t\n]/.test(src[p])) p++; };
  skipWs();
  let dest;
  if (src[p] === '<') {
    const e = src.indexOf('>', p + 1);
    if (e < 0 || /[\n<]/.test((dest = src.slice(p + 1, e)))) return null;
    p = e + 1;
  } else {
    const s = p;
    let depth = 0;
    for (; p < src.length && p - s < 2048; p++) { // bounded scans keep streaming fast
      const c = src[p];
      if (c === '\\' && ASCII_PUNCT.test(src[p + 1] || '')) p++;
      else if (c <= ' ') break;
      else if (c === '(' && ++depth > 32) return null;
      else if (c === ')') { if (depth === 0) break; depth--; }
    }
    if (depth) return null;
    dest = src.slice(s, p);
  }
  const beforeTitle = p;
  skipWs();
  let title = '', q = src[p];
  if ((q === '"' || q === "'" || q === '(') && p > beforeTitle) { // title needs whitespace before it
    if (q === '(') q = ')';
    let e = p + 1;
    for (; e < src.length && src[e] !== q && e - p < 1024; e++) if (src[e] === '\\') e++;
    if (src[e] !== q) return null;
    title = unescapePunct(src.slice(p + 1, e));
    p = e + 1;
    skipWs();
  }
  if (src[p] !== ')') return null;
  return { end: p + 1, dest: unescapePunct(dest), title };
}

const unescapePunct = (s) => s.replace(/\\([!-/:-@[-`{-~])/g, '$1');

// Trim trailing punctuation off a bare URL; ')' only when unbalanced.
function trimUrl(url) {
  let open = 0, close = 0, e = url.length;
  for (const ch of url) { if (ch === '(') open++; else if (ch === ')') close++; }
  while (e > 0) {
    const ch = url[e - 1];
    if ('?!.,:;*_~\'"'.includes(ch)) e--;
    else if (ch === ')' && close > open) { close--; e--; }
    else break;
  }
  return url.slice(0, e);
}

function renderInline(src, inLink = false) {
  const n = src.length;
  const spans = codeSpans(src);
  const brackets = inLink ? null : matchBrackets(src, spans);
  const special = /[\\`<![*_~\nhH]/g;
  const nodes = [], delims = []; // nodes: html strings and delimiter-run objects
  let text = '', i = 0, m; // text: pending raw text, escaped when flushed
  const push = (html) => { if (text) nodes.push(escapeHtml(text)); text = ''; nodes.push(html); };
  while (i < n) {
    special.lastIndex = i;
    const sm = special.exec(src);
    if (!sm) { text += src.slice(i); break; }
    text += src.slice(i, sm.index);
    i = sm.index;
    const c = src[i];
    if (c === '\\') {
      const d = src[i + 1];
      if (d === '\n') { i++; } // backslash hard break: the newline does the work
      else if (d !== undefined && ASCII_PUNCT.test(d)) { text += d; i += 2; }
      else { text += c; i++; }
    } else if (c === '`') {
      let j = i;
      while (src[j] === '`') j++;
      const span = spans.get(i);
      if (span) {
        let code = src.slice(j, span[1]).replace(/\n/g, ' ');
        if (code.length > 2 && code[0] === ' ' && code.endsWith(' ') && /[^ ]/.test(code)) code = code.slice(1, -1);
        push(`<code>${escapeHtml(code)}</code>`);
        i = span[1] + span[0];
      } else { text += src.slice(i, j); i = j; }
    } else if (c === '<') {
      AUTOLINK.lastIndex = EMAIL.lastIndex = i;
      if (!inLink && (m = AUTOLINK.exec(src))) {
        const url = safeUrl(m[1]);
        if (url) push(anchor(url, escapeHtml(m[1]))); else text += m[0];
        i += m[0].length;
      } else if (!inLink && (m = EMAIL.exec(src))) {
        push(anchor('mailto:' + m[1], escapeHtml(m[1])));
        i += m[0].length;
      } else { text += c; i++; }
    } else if ((c === '[' || (c === '!' && src[i + 1] === '[')) && !inLink) {
      // Link or image; images become plain links (the page loads no remote content).
      const open = c === '!' ? i + 1 : i;
      const close = brackets.get(open);
      const tail = close === undefined ? null : parseLinkTail(src, close);
      if (!tail) { text += c; i++; continue; }
      const label = src.slice(open + 1, close);
      const url = safeUrl(tail.dest);
      if (!url) text += src.slice(i, tail.end); // refused scheme: show the source as text
      else push(anchor(url, label ? renderInline(label, true) : escapeHtml(url), tail.title));
      i = tail.end;
    } else if (c === '*' || c === '_' || c === '~') {
      let j = i;
      while (src[j] === c) j++;
      const before = src[i - 1], after = src[j];
      const lf = !isWs(after) && (!isPunct(after) || isWs(before) || isPunct(before));
      const rf = !isWs(before) && (!isPunct(before) || isWs(after) || isPunct(after));
      let canOpen = lf, canClose = rf;
      if (c === '_') { // no intra-word emphasis with underscores
        canOpen = lf && (!rf || isPunct(before));
        canClose = rf && (!lf || isPunct(after));
      }
      if ((c === '~' && j - i !== 2) || (!canOpen && !canClose)) text += src.slice(i, j);
      else push(delims[delims.push({ ch: c, n: j - i, orig: j - i, open: canOpen, close: canClose, pre: '', post: '' }) - 1]);
      i = j;
    } else if (c === '\n') {
      let e = text.length;
      while (e && (text[e - 1] === ' ' || text[e - 1] === '\t')) e--;
      text = text.slice(0, e);
      push('<br>');
      for (i++; src[i] === ' ' || src[i] === '\t'; i++);
    } else if ((c === 'h' || c === 'H') && !inLink && !/[\p{L}\p{N}]/u.test(src[i - 1] || '')) {
      BARE_URL.lastIndex = i;
      const url = (m = BARE_URL.exec(src)) ? trimUrl(m[0]) : '';
      if (/^https?:\/\/[^/]/i.test(url)) { push(anchor(url, escapeHtml(url))); i += url.length; }
      else { text += c; i++; }
    } else { text += c; i++; }
  }
  if (text) nodes.push(escapeHtml(text));
  processEmphasis(delims);
  let html = '';
  for (const nd of nodes) html += typeof nd === 'string' ? nd : nd.pre + nd.ch.repeat(nd.n) + nd.post;
  return html;
}

// Pair delimiter runs into <em>/<strong>/<del> (CommonMark-style, with the
// "multiple of 3" rule and a per-kind lower bound to stay near-linear).
function processEmphasis(ds) {
  ds.forEach((d, k) => { d.k = k; d.prev = ds[k - 1] || null; d.next = ds[k + 1] || null; });
  const unlink = (d) => { if (d.prev) d.prev.next = d.next; if (d.next) d.next.prev = d.prev; };
  const bottom = Object.create(null);
  for (let cl = ds[0]; cl; cl = cl.next) {
    if (!cl.close) continue;
    const key = cl.ch + (cl.open ? 1 : 0) + (cl.orig % 3);
    while (cl.n > 0) {
      const lo = key in bottom ? bottom[key] : -1;
      let op = cl.prev;
      for (; op && op.k > lo; op = op.prev) {
        if (op.ch !== cl.ch || !op.open || op.n === 0) continue;
        if (cl.ch === '~') { if (op.n === cl.n) break; continue; }
        if ((op.close || cl.open) && (op.orig + cl.orig) % 3 === 0 && (op.orig % 3 || cl.orig % 3)) continue;
        break;
      }
      if (!op || op.k <= lo) { // nothing to close: remember, so later searches stop here
        bottom[key] = cl.k - 1;
        if (!cl.open) unlink(cl);
        break;
      }
      const use = cl.ch === '~' || (op.n >= 2 && cl.n >= 2) ? 2 : 1;
      const tag = cl.ch === '~' ? 'del' : use === 2 ? 'strong' : 'em';
      op.n -= use, cl.n -= use;
      op.post = `<${tag}>` + op.post; // later matches wrap the earlier ones
      cl.pre += `</${tag}>`;
      op.next = cl, cl.prev = op; // runs between the pair stay literal
      if (op.n === 0) unlink(op);
    }
    if (cl.n === 0) unlink(cl);
  }
}

// ---------------------------------------------------------------- highlight

const LANGS = Object.create(null);
const words = (s) => new Set(s ? s.split(' ') : []);
function lang(names, opts, kw, types) {
  const spec = { quotes: '"\'', ml: '', noEsc: '', ...opts, kw: words(kw), types: words(types) };
  for (const name of names.split(' ')) LANGS[name] = spec;
}
const C_LIKE = { line: ['//'], block: ['/*', '*/'] };
lang('js javascript jsx mjs cjs ts typescript tsx json jsonc json5', { ...C_LIKE, quotes: '"\'`', ml: '`', caps: true },
  'break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield async await as interface type enum implements private protected public readonly declare namespace abstract keyof satisfies true false null undefined NaN Infinity',
  'string number boolean any unknown never object symbol bigint');
lang('python py python3 py3', { line: ['#'], triple: true, caps: true, prefix: /^(?:[rbuf]|rb|br|fr|rf)$/i },
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self',
  'int float str bool list dict set tuple bytes object type complex frozenset');
lang('c cpp c++ cc cxx h hpp hh hxx objc cuda', { ...C_LIKE, caps: true, preproc: true, prefix: /^(?:u8|u|U|L)?R?$/ },
  'alignas alignof asm auto break case catch class const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete do dynamic_cast else enum explicit export extern false for friend goto if inline mutable namespace new noexcept nullptr operator private protected public register reinterpret_cast return sizeof static static_assert static_cast struct switch template this thread_local throw true try typedef typeid typename union using virtual volatile while override final NULL',
  'void bool char short int long float double signed unsigned size_t ssize_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t wchar_t char8_t char16_t char32_t');
lang('rust rs', { ...C_LIKE, caps: true, rust: true, macro: true, prefix: /^(?:b|r|br)$/ },
  'as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while union',
  'i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str');
lang('go golang', { ...C_LIKE, quotes: '"\'`', ml: '`', noEsc: '`' },
  'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var true false nil iota',
  'bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any');
lang('java kotlin kt scala cs csharp', { ...C_LIKE, triple: true, caps: true },
  'abstract assert break case catch class const continue default do else enum extends final finally for goto if implements import instanceof interface native new package private protected public return static strictfp super switch synchronized this throw throws transient try volatile while var val fun record sealed permits yield true false null',
  'boolean byte char double float int long short void');
lang('bash sh shell zsh console shellsession', { wsLine: ['#'], quotes: '"\'`', ml: '"\'`', noEsc: "'" },
  'if then else elif fi for while until do done case esac in function select time return exit break continue local export readonly declare unset shift source alias set trap eval exec');
lang('sql mysql postgres postgresql sqlite', { line: ['--'], block: ['/*', '*/'], quotes: '"\'`', ci: true },
  'select from where and or not insert into values update set delete create table drop alter add index primary key foreign references join inner left right outer full cross on as group by order having limit offset union all distinct case when then else end null is in exists between like ilike view if begin commit rollback transaction default unique constraint asc desc returning with recursive cascade database schema grant revoke true false',
  'int integer bigint smallint tinyint varchar char text boolean bool date time timestamp timestamptz float double real decimal numeric serial bigserial blob json jsonb uuid');
lang('yaml yml', { wsLine: ['#'], yaml: true }, 'true false null yes no on off True False Null');
lang('html xml htm xhtml svg vue', { mode: 'markup' });
lang('css scss less', { mode: 'css' });
lang('', { quotes: '"\'`', wsLine: ['//', '#'], strict: true }, // generic: any other language
  'if else elif for while do return function func fn def class struct import export from let const var true false null nil None True False new this self public private static void int string bool');
const GENERIC = LANGS[''];

export function highlight(code, lang) {
  code = code == null ? '' : String(code);
  const spec = LANGS[String(lang == null ? '' : lang).trim().toLowerCase()] || GENERIC;
  try {
    return spec.mode === 'markup' ? hlMarkup(code) : spec.mode === 'css' ? hlCss(code) : hlCode(code, spec);
  } catch {
    return escapeHtml(code); // never throw on odd input
  }
}

// Collects output: text between tokens is emitted escaped, so stripping the
// spans and unescaping always gives back the source exactly.
function emitter(code) {
  let out = '', pos = 0;
  return {
    tok(cls, a, b) {
      b = Math.min(b, code.length);
      if (b <= a) return a;
      out += escapeHtml(code.slice(pos, a)) + `<span class="tok-${cls}">${escapeHtml(code.slice(a, b))}</span>`;
      return (pos = b);
    },
    end: () => out + escapeHtml(code.slice(pos)),
    until: (a, s) => { const e = code.indexOf(s, a); return e < 0 ? code.length + 1 : e + s.length; },
  };
}

// Scan a string body from p; returns [end, closed].
function scanStr(code, p, q, multiline, escapes) {
  for (const n = code.length; p < n; p++) {
    if (code[p] === '\\' && escapes) p++;
    else if (code.startsWith(q, p)) return [p + q.length, true];
    else if (code[p] === '\n' && !multiline) return [p, false];
  }
  return [code.length, false];
}

const IDENT = /[\p{L}_$][\p{L}\p{N}_$]*/uy;
const NUM = /(?:0[xX][\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)[a-zA-Z]*/y;
const RUST_CHAR = /'(?:\\(?:x[\da-fA-F]{2}|u\{[\da-fA-F]{1,6}\}|.)|[^\\'\n])'/uy;
const YAML_KEY = /([ \t]*(?:- +)*)[\w"'./$][^\n:#]*?(?=[ \t]*:(?:\s|$))/y;
const isIdentChar = (c) => c !== undefined && /[\p{L}\p{N}_$]/u.test(c);
const atLineStart = (code, i) => {
  while (i > 0 && (code[i - 1] === ' ' || code[i - 1] === '\t')) i--;
  return i === 0 || code[i - 1] === '\n';
};
const startsAny = (code, i, list) => list && list.some((t) => code.startsWith(t, i));

function hlCode(code, L) {
  const n = code.length, { tok, end, until } = emitter(code);
  let i = 0, m;
  const sticky = (re) => { re.lastIndex = i; return re.exec(code); };
  while (i < n) {
    const c = code[i];
    const prev = i ? code[i - 1] : '\n';
    if (L.yaml && prev === '\n' && (m = sticky(YAML_KEY))) { i = tok('attr', i + m[1].length, i + m[0].length); continue; }
    if (L.block && code.startsWith(L.block[0], i)) { i = tok('com', i, until(i + 2, L.block[1])); continue; }
    if (startsAny(code, i, L.line) || (/\s/.test(prev) && startsAny(code, i, L.wsLine))) {
      i = tok('com', i, until(i, '\n') - 1); // stop before the newline (or at the end)
      continue;
    }
    if (L.preproc && c === '#' && atLineStart(code, i) && (m = sticky(/#[ \t]*[a-z]+/y))) {
      i = tok('kw', i, i + m[0].length);
      const inc = /^[ \t]*<[^>\n]*>/.exec(code.slice(i, i + 200)); // #include <file>
      if (/include|import/.test(m[0]) && inc) { const s = i + inc[0].indexOf('<'); i = tok('str', s, i + inc[0].length); }
      continue;
    }
    if (L.triple && (code.startsWith('"""', i) || code.startsWith("'''", i))) { i = tok('str', i, scanStr(code, i + 3, code.slice(i, i + 3), true, true)[0]); continue; }
    if (L.quotes.includes(c)) {
      if (c === "'" && isIdentChar(code[i - 1])) { i++; continue; } // apostrophe / digit separator
      if (L.rust && c === "'") { i = (m = sticky(RUST_CHAR)) ? tok('str', i, i + m[0].length) : i + 1; continue; } // else a lifetime
      const [e, closed] = scanStr(code, i + 1, c, L.ml.includes(c), !L.noEsc.includes(c));
      i = L.strict && !closed ? i + 1 : tok('str', i, e);
      continue;
    }
    if ((c >= '0' && c <= '9') || (c === '.' && /\d/.test(code[i + 1] || ''))) {
      if (!isIdentChar(code[i - 1]) && (m = sticky(NUM))) { i = tok('num', i, i + m[0].length); continue; }
    }
    if ((m = sticky(IDENT))) {
      const w = m[0], e = i + w.length, q = code[e];
      if (w === '$') { i = e; continue; }
      if (L.prefix && L.prefix.test(w) && (q === '"' || q === "'" || (L.rust && q === '#' && w.includes('r')))) {
        const se = prefixedString(code, e, w, L);
        if (se > e) { i = tok('str', i, se); continue; }
      }
      const lw = L.ci ? w.toLowerCase() : w;
      let p = e, cls = null;
      while (code[p] === ' ') p++;
      if (L.kw.has(lw)) cls = 'kw';
      else if (L.types.has(lw)) cls = 'type';
      else if (code[p] === '(' || (L.macro && code[p] === '!' && code[p + 1] !== '=')) cls = 'fn';
      else if (L.caps && /^[A-Z]/.test(w) && /[a-z]/.test(w)) cls = 'type';
      i = cls ? tok(cls, i, e) : e;
      continue;
    }
    i++;
  }
  return end();
}

// End index of a string with a prefix (r"..", b'..', f"""..""", R"x(..)x", r#".."#).
function prefixedString(code, e, w, L) {
  if (L.rust && w.includes('r')) {
    const h = /^#*/.exec(code.slice(e, e + 256))[0];
    if (code[e + h.length] !== '"') return e; // not a raw string after all
    const stop = code.indexOf('"' + h, e + h.length + 1);
    return stop < 0 ? code.length : stop + 1 + h.length;
  }
  if (L.preproc && w.endsWith('R') && code[e] === '"') {
    const d = /^"([^()\\\s]{0,16})\(/.exec(code.slice(e, e + 20));
    if (d) {
      const stop = code.indexOf(')' + d[1] + '"', e + d[0].length);
      return stop < 0 ? code.length : stop + d[1].length + 2;
    }
  }
  if (L.triple && (code.startsWith('"""', e) || code.startsWith("'''", e))) return scanStr(code, e + 3, code.slice(e, e + 3), true, true)[0];
  return scanStr(code, e + 1, code[e], false, true)[0];
}

function hlMarkup(code) {
  const n = code.length, { tok, end, until } = emitter(code);
  const ATTR = /[^\s=>/"'<]+/y, TAG = /<\/?[A-Za-z!?][\w:.-]*/y;
  let i = 0, m;
  while (i < n) {
    if (code.startsWith('<!--', i)) { i = tok('com', i, until(i + 4, '-->')); continue; }
    if (code.startsWith('<![CDATA[', i)) { i = tok('str', i, until(i + 9, ']]>')); continue; }
    TAG.lastIndex = i;
    if (code[i] !== '<' || !(m = TAG.exec(code))) { i++; continue; }
    i = tok('tag', i, i + m[0].length);
    while (i < n) { // inside a tag: attributes, values, closing bracket
      const c = code[i];
      if (c === '<') break;
      if (c === '>') { i = tok('tag', i, i + 1); break; }
      if ((c === '/' || c === '?') && code[i + 1] === '>') { i = tok('tag', i, i + 2); break; }
      if (c === '"' || c === "'") { i = tok('str', i, until(i + 1, c)); continue; }
      ATTR.lastIndex = i;
      if ((m = ATTR.exec(code))) { i = tok(code[i - 1] === '=' ? 'str' : 'attr', i, i + m[0].length); continue; }
      i++;
    }
  }
  return end();
}

const CSS_KW = words('important inherit initial unset none auto');
function hlCss(code) {
  const n = code.length, { tok, end, until } = emitter(code);
  let i = 0, depth = 0, m;
  const sticky = (re) => { re.lastIndex = i; return re.exec(code); };
  while (i < n) {
    const c = code[i];
    if (code.startsWith('/*', i)) { i = tok('com', i, until(i + 2, '*/')); continue; }
    if (c === '"' || c === "'") { i = tok('str', i, scanStr(code, i + 1, c, false, true)[0]); continue; }
    if (c === '{') depth++;
    else if (c === '}') depth = Math.max(0, depth - 1);
    else if (c === '@' && (m = sticky(/@[\w-]+/y))) { i = tok('kw', i, i + m[0].length); continue; }
    else if (c === '#' && (m = sticky(/#[\w-]+/y))) { i = tok(depth ? 'num' : 'tag', i, i + m[0].length); continue; }
    else if (!isIdentChar(code[i - 1]) && (m = sticky(/[-+]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?(?:%|[a-zA-Z]+)?/y))) { i = tok('num', i, i + m[0].length); continue; }
    else if ((m = sticky(/-*[A-Za-z_][\w-]*/y))) {
      let e = i + m[0].length, p = e;
      while (code[p] === ' ') p++;
      const cls = !depth ? 'tag' : code[p] === ':' ? 'attr' : code[p] === '(' ? 'fn' : CSS_KW.has(m[0].toLowerCase()) ? 'kw' : null;
      i = cls ? tok(cls, i, e) : e;
      continue;
    }
    i++;
  }
  return end();
}
