// Tests for webui/js/markdown.js: run `node tests/webui/markdown_test.mjs` from the repo root.
import assert from 'node:assert/strict';
import { renderMarkdown as md, highlight, escapeHtml } from '../../webui/js/markdown.js';

const tests = [];
const test = (name, fn) => tests.push([name, fn]);
const A = ' target="_blank" rel="noopener noreferrer"';
const codeBlock = (lang, inner) =>
  '<div class="code-block"><div class="code-head"><span class="code-lang">' + (lang || 'text') +
  '</span><button type="button" class="copy-code" title="Copy">Copy</button></div><pre><code' +
  (lang ? ` class="language-${lang}"` : '') + `>${inner}</code></pre></div>`;

// Strip tags, then unescape the entities escapeHtml produces.
const unhtml = (h) => h.replace(/<[^>]*>/g, '')
  .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

// Every tag in renderMarkdown output must be one we generate, with known attributes.
const TAGS = new Set('p br h1 h2 h3 h4 h5 h6 ul ol li blockquote table thead tbody tr th td hr code pre div span button a strong em del'.split(' '));
const ATTRS = new Set('href target rel title class style start type'.split(' '));
function assertInert(html, src) {
  assert.ok(!/<script/i.test(html), `<script in output for ${JSON.stringify(src)}`);
  // Raw HTML is shown as escaped text, so " onerror=" may appear as text; it must never appear inside a tag.
  const markup = (html.match(/<[^>]*>/g) || []).join('');
  assert.ok(!/\son\w+=/i.test(markup), `on*= attribute in output for ${JSON.stringify(src)}`);
  assert.ok(!/href="(?!https?:\/\/|mailto:)/i.test(html), `bad href for ${JSON.stringify(src)}: ${html}`);
  for (const [, tag] of html.matchAll(/<([^>]*)>/g)) {
    const m = /^\/?([a-z0-9]+)((?:\s[a-z-]+="[^"<>]*")*)$/.exec(tag);
    assert.ok(m && TAGS.has(m[1]), `unexpected tag <${tag}> for ${JSON.stringify(src)}`);
    for (const [, name] of m[2].matchAll(/\s([a-z-]+)="/g)) assert.ok(ATTRS.has(name), `attribute ${name} in <${tag}>`);
  }
}

// Small seeded PRNG so fuzz runs are reproducible.
function rng(seed) {
  return () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
}

test('escapeHtml', () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  assert.equal(escapeHtml(null), '');
  assert.equal(escapeHtml(5), '5');
});

test('headings', () => {
  assert.equal(md('# One'), '<h1>One</h1>');
  assert.equal(md('###### Six ###'), '<h6>Six</h6>');
  assert.equal(md('## C# *lang*'), '<h2>C# <em>lang</em></h2>');
  assert.equal(md('####### seven'), '<p>####### seven</p>');
  assert.equal(md('#hashtag'), '<p>#hashtag</p>');
  assert.equal(md('text\n# Head\nmore'), '<p>text</p><h1>Head</h1><p>more</p>');
});

test('paragraphs and line breaks', () => {
  assert.equal(md('a\nb  \n c\n\n\nd'), '<p>a<br>b<br>c</p><p>d</p>');
  assert.equal(md('a\r\nb'), '<p>a<br>b</p>');
  assert.equal(md(''), '');
  assert.equal(md(undefined), '');
  assert.equal(md('a\\\nb'), '<p>a<br>b</p>');
});

test('horizontal rules', () => {
  assert.equal(md('a\n\n---\n\n* * *\n___'), '<p>a</p><hr><hr><hr>');
  assert.equal(md('--'), '<p>--</p>');
});

test('lists: nesting, start numbers, tight and loose', () => {
  assert.equal(md('- a\n- b\n  - c\n    - d\n- e'),
    '<ul><li>a</li><li>b<ul><li>c<ul><li>d</li></ul></li></ul></li><li>e</li></ul>');
  assert.equal(md('3. a\n4. b\n   1. c\n   2. d\n5. e'),
    '<ol start="3"><li>a</li><li>b<ol><li>c</li><li>d</li></ol></li><li>e</li></ol>');
  assert.equal(md('1) x\n2) y'), '<ol><li>x</li><li>y</li></ol>');
  assert.equal(md('1. one\n  * two-space nested\n2. next'),
    '<ol><li>one<ul><li>two-space nested</li></ul></li><li>next</li></ol>');
  assert.equal(md('- a\n\n- b'), '<ul><li><p>a</p></li><li><p>b</p></li></ul>');
  assert.equal(md('Intro:\n- x\n- y\n\nAfter'), '<p>Intro:</p><ul><li>x</li><li>y</li></ul><p>After</p>');
  assert.equal(md('- a\n1. b'), '<ul><li>a</li></ul><ol><li>b</li></ol>');
  assert.equal(md('- item\n  ```js\n  x\n  ```'), `<ul><li>item${codeBlock('js', 'x')}</li></ul>`);
  assert.equal(md('-\tTab'), '<ul><li>Tab</li></ul>');
  assert.equal(md('*not a list*'), '<p><em>not a list</em></p>');
  assert.equal(md('1.5 million'), '<p>1.5 million</p>');
});

test('blockquotes', () => {
  assert.equal(md('> quote\n> **b**\n>\n> > nested\n\nout'),
    '<blockquote><p>quote<br><strong>b</strong></p><blockquote><p>nested</p></blockquote></blockquote><p>out</p>');
  assert.equal(md('> - a\n> - b'), '<blockquote><ul><li>a</li><li>b</li></ul></blockquote>');
  assert.equal(md('> a\nlazy'), '<blockquote><p>a<br>lazy</p></blockquote>');
});

test('tables with alignment and inline cells', () => {
  assert.equal(md('| a | b | c | d |\n|:--|--:|:-:|---|\n| `x\\|y` | **z** | [l](https://e.com) |\nafter'),
    '<table><thead><tr><th style="text-align:left">a</th><th style="text-align:right">b</th>' +
    '<th style="text-align:center">c</th><th>d</th></tr></thead><tbody><tr>' +
    '<td style="text-align:left"><code>x|y</code></td><td style="text-align:right"><strong>z</strong></td>' +
    `<td style="text-align:center"><a href="https://e.com"${A}>l</a></td><td></td></tr></tbody></table><p>after</p>`);
  assert.equal(md('Table:\na | b\n--- | ---'), '<p>Table:</p><table><thead><tr><th>a</th><th>b</th></tr></thead></table>');
  // streaming: header row alone, or a delimiter row with the wrong cell count, is still text
  assert.equal(md('| a | b |'), '<p>| a | b |</p>');
  assert.equal(md('| a | b |\n|---'), '<p>| a | b |<br>|---</p>');
});

test('fenced code blocks', () => {
  assert.equal(md('```\n<b>&\n```'), codeBlock('', '&lt;b&gt;&amp;'));
  assert.equal(md('```js\nlet x = 1;\n```\nafter'),
    codeBlock('js', '<span class="tok-kw">let</span> x = <span class="tok-num">1</span>;') + '<p>after</p>');
  assert.equal(md('~~~ python extra words\npass\n~~~'), codeBlock('python', '<span class="tok-kw">pass</span>'));
  const nested = md('````\n```\ninner\n```\n````');
  assert.ok(nested.startsWith(codeBlock('', '').split('</code>')[0]) && nested.endsWith('</code></pre></div>'), nested);
  assert.equal(unhtml(nested), 'textCopy```\ninner\n```');
  // unterminated fence: everything after it is code (streaming)
  assert.equal(md('text\n```py\nx = "**no**\n\n# not a heading'),
    '<p>text</p>' + codeBlock('py', 'x = <span class="tok-str">&quot;**no**</span>\n\n<span class="tok-com"># not a heading</span>'));
  assert.equal(md('```'), codeBlock('', ''));
  // language word is escaped
  assert.equal(md('```"><x\nz\n```'), codeBlock('&quot;&gt;&lt;x', 'z'));
  assert.equal(md('  ```\n  indented\n   three\n  ```'), codeBlock('', 'indented\n three'));
});

test('inline forms', () => {
  const p = (s) => md(s).replace(/^<p>|<\/p>$/g, '');
  assert.equal(p('`a*b*` and ``x ` y`` and ` ` '), '<code>a*b*</code> and <code>x ` y</code> and <code> </code>');
  assert.equal(p('**s** __s__ *e* _e_ ~~d~~ ~x~'), '<strong>s</strong> <strong>s</strong> <em>e</em> <em>e</em> <del>d</del> ~x~');
  assert.equal(p('***both*** **a *b* c**'), '<em><strong>both</strong></em> <strong>a <em>b</em> c</strong>');
  assert.equal(p('**unclosed and *x'), '**unclosed and *x');
  assert.equal(p('2 * 3 * 4 and a*b*c'), '2 * 3 * 4 and a<em>b</em>c');
  assert.equal(p('snake_case_name, file_name_v2 and CONST_VALUE_'), 'snake_case_name, file_name_v2 and CONST_VALUE_');
  assert.equal(p('call my_func_(x) or _private_'), 'call my_func_(x) or <em>private</em>');
  assert.equal(p('`unclosed code **b**'), '`unclosed code <strong>b</strong>');
  assert.equal(p('**multi\nline**'), '<strong>multi<br>line</strong>');
  assert.equal(p('&copy; AT&T'), '&amp;copy; AT&amp;T');
});

test('backslash escapes', () => {
  const p = (s) => md(s).replace(/^<p>|<\/p>$/g, '');
  assert.equal(p('\\*not em\\* \\_no\\_ \\`tick\\` \\\\ \\a \\# \\['), '*not em* _no_ `tick` \\ \\a # [');
  assert.equal(md('\\# not heading'), '<p># not heading</p>');
  assert.equal(md('\\- not list'), '<p>- not list</p>');
});

test('links and autolinks', () => {
  const p = (s) => md(s).replace(/^<p>|<\/p>$/g, '');
  assert.equal(p('[a **b**](https://x.com/p?q=1&r=2)'), `<a href="https://x.com/p?q=1&amp;r=2"${A}>a <strong>b</strong></a>`);
  assert.equal(p('[t](http://x.com "Title")'), `<a href="http://x.com"${A} title="Title">t</a>`);
  assert.equal(p('[t](<https://x.com/a b>)'), `<a href="https://x.com/a%20b"${A}>t</a>`);
  assert.equal(p('[m](mailto:a@b.c)'), `<a href="mailto:a@b.c"${A}>m</a>`);
  assert.equal(p('<https://x.com> <a@b.co>'), `<a href="https://x.com"${A}>https://x.com</a> <a href="mailto:a@b.co"${A}>a@b.co</a>`);
  assert.equal(p('See https://x.com/a.'), `See <a href="https://x.com/a"${A}>https://x.com/a</a>.`);
  assert.equal(p('(https://en.wikipedia.org/wiki/Foo_(bar)), ok'),
    `(<a href="https://en.wikipedia.org/wiki/Foo_(bar)"${A}>https://en.wikipedia.org/wiki/Foo_(bar)</a>), ok`);
  assert.equal(p('**https://x.com**'), `<strong><a href="https://x.com"${A}>https://x.com</a></strong>`);
  assert.equal(p('![cat](https://x.com/c.png)'), `<a href="https://x.com/c.png"${A}>cat</a>`);
  assert.equal(p('[a [b] c](https://x.com)'), `<a href="https://x.com"${A}>a [b] c</a>`);
  assert.equal(p('[see](https://x.com/(a)b)'), `<a href="https://x.com/(a)b"${A}>see</a>`);
  assert.equal(p('[ref] and [a](b c d)'), '[ref] and [a](b c d)');
  assert.equal(p('xhttps://x.com'), 'xhttps://x.com');
  assert.equal(p('[partial](https://x.c'), `[partial](<a href="https://x.c"${A}>https://x.c</a>`); // streaming
});

test('refused link schemes render as text', () => {
  const cases = {
    '[x](javascript:alert(1))': '[x](javascript:alert(1))',
    '[x](JAVASCRIPT:alert(1))': '[x](JAVASCRIPT:alert(1))',
    '[x]( javascript:alert(1))': '[x]( javascript:alert(1))',
    '[x](<javascript:alert(1)>)': '[x](&lt;javascript:alert(1)&gt;)',
    '<javascript:alert(1)>': '&lt;javascript:alert(1)&gt;',
    '[x](data:text/html;base64,PHNjcmlwdD4=)': '[x](data:text/html;base64,PHNjcmlwdD4=)',
    '![x](data:image/svg+xml,<svg onload=alert(1)>)': '![x](data:image/svg+xml,&lt;svg onload=alert(1)&gt;)',
    '[x](vbscript:msgbox)': '[x](vbscript:msgbox)',
    '[x](/relative)': '[x](/relative)',
    '[x](java\\script:alert(1))': '[x](java\\script:alert(1))',
    '[x](&#106;avascript:alert(1))': '[x](&amp;#106;avascript:alert(1))',
  };
  for (const [src, want] of Object.entries(cases)) {
    const html = md(src);
    assert.equal(html, `<p>${want}</p>`, src);
    assert.ok(!html.includes('<a'), src);
    assertInert(html, src);
  }
});

test('raw HTML and attribute breaking are inert', () => {
  assert.equal(md('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(md('<img src=x onerror=alert(1)>'), '<p>&lt;img src=x onerror=alert(1)&gt;</p>');
  const quoteUrl = md('[x](https://a.com/"onmouseover="alert(1))');
  assert.equal(quoteUrl, `<p><a href="https://a.com/&quot;onmouseover=&quot;alert(1)"${A}>x</a></p>`);
  const quoteTitle = md(`[x](https://a.com "a\\" onclick=\\"alert(1)") [y](https://b.com 'q"><script>')`);
  assert.ok(quoteTitle.includes('title="a&quot; onclick=&quot;alert(1)"'), quoteTitle);
  assert.ok(quoteTitle.includes('title="q&quot;&gt;&lt;script&gt;"'), quoteTitle);
  const samples = [
    '<script>alert(1)</script>', '<img src=x onerror=alert(1)>', quoteUrl, '<a href="javascript:x">y</a>',
    '```html\n<script>alert(1)</script>\n```', '| <b> | x |\n|---|---|\n| <i onclick=1> | y |',
    '> <iframe src=javascript:alert(1)>', '- <svg/onload=alert(1)>', '`<script>`', '<https://x.com/"onload="x>',
    'https://x.com/"><script>alert(1)</script>', '[a](https://x.com/\'onload=\'x)', '**<b>**', '# <h1 onclick=x>',
  ];
  for (const s of samples) assertInert(md(s), s);
  assert.equal(unhtml(md('<script>alert(1)</script>')), '<script>alert(1)</script>');
});

test('fuzz: random markdown-ish input stays inert and never throws', () => {
  const parts = ['*', '**', '_', '~~', '`', '```', '[', ']', '(', ')', '<', '>', '"', "'", '\\', '|', '---', '\n', '\n\n',
    '# ', '- ', '1. ', '> ', '  ', 'javascript:alert(1)', 'https://x.com', 'onerror=', '<script>', 'data:x', 'word', ':-:', '!'];
  const r = rng(42);
  for (let k = 0; k < 3000; k++) {
    let s = '';
    for (let j = 0, len = 1 + Math.floor(r() * 40); j < len; j++) s += parts[Math.floor(r() * parts.length)];
    assertInert(md(s), s);
  }
});

test('streaming: every prefix of a reply renders without throwing and stays inert', () => {
  const reply = '# Plan\n\nHere is **the fix** for `snake_case_fn`:\n\n1. Edit [the file](https://x.com/a_(b)).\n   - keep <b>tags</b> inert\n' +
    '2. Run it\n\n> Note: ~~old~~ *new*\n\n| k | v |\n|:--|--:|\n| a | 1 |\n\n```python\ndef f(x):\n    return "**x**"  # done\n```\n' +
    'Bye [x](javascript:alert(1)) https://example.com/path.';
  let last = '';
  for (let k = 0; k <= reply.length; k++) assertInert((last = md(reply.slice(0, k))), reply.slice(0, k));
  assert.ok(last.includes('<ol><li>Edit') && last.includes('<ul><li>keep &lt;b&gt;tags&lt;/b&gt; inert</li></ul>'), last);
  assert.ok(last.includes('<td style="text-align:right">1</td>') && last.includes('class="language-python"'), last);
  // a half-typed fence shows a code block immediately, and a half-typed emphasis stays literal
  assert.ok(md('text\n```py\ndef').includes('<span class="tok-kw">def</span>'));
  assert.equal(md('so **bol'), '<p>so **bol</p>');
});

// ------------------------------------------------------------- highlight

const samples = {
  js: 'import { x } from "./y.js";\n// line\nconst t = `multi\n${line} ok`;\n/* block\n */ function f(a) { return a?.b ?? 0x1F + 1.5e3 + \'s\\\'q\'; }\nclass Foo extends Bar {}',
  ts: 'interface A { n: number; s: string }\nlet v: A = {} as A; // c',
  json: '{"a": [1, 2.5, -3e4, true, null], "b": "x\\"y"}',
  python: 'import os\n@dec\ndef f(x: int) -> str:\n    """doc\n    string"""\n    s = f"{x}" + r\'\\d\' + b"b"  # comment\n    return \'it\\\'s\'\nclass Foo(Bar): pass',
  cpp: '#include <vector>\n#define N 10\nint main(int argc, char** argv) {\n  std::vector<int> v{1, 2};\n  auto s = R"raw(a "quoted" )raw";\n  char c = \'x\'; // c\n  /* multi\n  line */ return 0u;\n}',
  c: 'static const char *s = "a\\n"; int x = 1\'000;',
  rust: 'fn main<\'a>(x: &\'a str) -> Result<(), Box<dyn Error>> {\n  let c = \'\\n\';\n  let r = r#"raw "x""#;\n  println!("{}", b"bytes"); // c\n  Ok(())\n}',
  go: 'package main\nimport "fmt"\nfunc main() {\n\ts := `raw\nstring`\n\tfmt.Println(s, 42, \'r\') // c\n}',
  java: 'public class A { /** doc */ public static void main(String[] args) { String s = """\n  text\n  """; } }',
  bash: '#!/bin/bash\n# comment\nfor f in *.txt; do echo "$f: ${#f}" \'single $x\'; done\nx=$(date) && echo $# # tail',
  html: '<!DOCTYPE html>\n<div class="a" id=x data-y=\'z\'><!-- c --><br/>text &amp; <a href="#">l</a></div>',
  xml: '<?xml version="1.0"?>\n<root><![CDATA[ <raw> ]]><item key="v"/></root>',
  css: '/* c */\n@media (max-width: 600px) {\n  .a > b:hover, #id { color: #fff; margin: -1px 2.5em; background: url("x.png"); }\n}',
  sql: "SELECT a, COUNT(*) FROM t -- c\nWHERE name = 'it''s' AND id IN (1, 2) /* b */ ORDER BY a DESC;",
  yaml: '# c\nname: app\nitems:\n  - key: "v"\n    n: 1.5\n  - it\'s: fine\nok: true # tail',
  text: 'Just prose, it\'s "quoted" and 42 // note\n# hash comment\nhttps://x.com/a#b',
  '': 'if (x) { return "a"; } # c',
  weird: 'unknown lang \'unterminated\n"also',
};

test('highlight token classes', () => {
  const h = highlight('const x = "a"; // c', 'js');
  assert.equal(h, '<span class="tok-kw">const</span> x = <span class="tok-str">&quot;a&quot;</span>; <span class="tok-com">// c</span>');
  assert.ok(highlight('foo(1)', 'python').includes('<span class="tok-fn">foo</span>(<span class="tok-num">1</span>)'));
  assert.ok(highlight('x = """open\nstill', 'py').endsWith('<span class="tok-str">&quot;&quot;&quot;open\nstill</span>'));
  assert.ok(highlight('/* open\ncomment', 'c').startsWith('<span class="tok-com">/* open\ncomment</span>'));
  assert.ok(highlight('let s = `a\nb', 'ts').includes('<span class="tok-str">`a\nb</span>'));
  assert.ok(highlight('String s', 'java').includes('<span class="tok-type">String</span>'));
  assert.ok(highlight('<a href="x">', 'html').startsWith('<span class="tok-tag">&lt;a</span> <span class="tok-attr">href</span>=<span class="tok-str">&quot;x&quot;</span><span class="tok-tag">&gt;</span>'));
  assert.ok(highlight('a { color: red }', 'css').includes('<span class="tok-attr">color</span>'));
  assert.ok(highlight('select * from t', 'SQL').includes('<span class="tok-kw">select</span>'));
  assert.ok(highlight('key: value', 'yaml').startsWith('<span class="tok-attr">key</span>'));
  assert.ok(highlight('echo hi # c', 'bash').endsWith('<span class="tok-com"># c</span>'));
  assert.ok(!highlight('a$#b', 'sh').includes('tok-com'));
  assert.ok(highlight('println!("x")', 'rust').includes('<span class="tok-fn">println</span>'));
  assert.equal(highlight("it's fine", 'text'), 'it&#39;s fine');
  assert.equal(highlight('see https://x.com/a', ''), 'see https://x.com/a');
  assert.equal(highlight('a\n# c', 'whatever'), 'a\n<span class="tok-com"># c</span>');
  assert.equal(highlight(null, 'js'), '');
});

test('highlight round-trips every sample and every streamed prefix', () => {
  const langs = ['js', 'javascript', 'ts', 'typescript', 'json', 'python', 'py', 'c', 'cpp', 'c++', 'h', 'hpp',
    'rust', 'rs', 'go', 'java', 'bash', 'sh', 'shell', 'zsh', 'html', 'xml', 'css', 'sql', 'yaml', '', 'text', 'nope'];
  let checked = 0;
  for (const src of Object.values(samples)) {
    for (const lang of langs) {
      for (let k = 0; k <= src.length; k++) {
        const part = src.slice(0, k);
        const out = highlight(part, lang);
        if (unhtml(out) !== part) assert.fail(`round-trip failed for ${lang}: ${JSON.stringify(part)}\n${out}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 10000);
});

test('highlight round-trips random input and emits only known spans', () => {
  const chars = 'ab_Z$09 .\t\n"\'`\\/*#-<>!=(){}[];:@&rR%~';
  const langs = ['js', 'python', 'cpp', 'rust', 'go', 'java', 'bash', 'html', 'css', 'sql', 'yaml', ''];
  const r = rng(7);
  for (let k = 0; k < 4000; k++) {
    let s = '';
    for (let j = 0, len = Math.floor(r() * 60); j < len; j++) s += chars[Math.floor(r() * chars.length)];
    const lang = langs[k % langs.length];
    const out = highlight(s, lang);
    assert.equal(unhtml(out), s, `${lang}: ${JSON.stringify(s)}`);
    const stripped = out.replace(/<span class="tok-(?:kw|str|com|num|fn|type|tag|attr)">[^<]*<\/span>/g, '');
    assert.ok(!/[<>]/.test(stripped), `unexpected markup for ${lang}: ${out}`);
  }
});

test('code blocks round-trip through renderMarkdown', () => {
  for (const [lang, src] of Object.entries(samples)) {
    if (src.includes('```')) continue;
    const html = md('```' + lang + '\n' + src + '\n```');
    const code = /<code[^>]*>([^]*)<\/code>/.exec(html)[1];
    assert.equal(unhtml(code), src, lang);
  }
});

test('performance: 50 KB document (timing printed, not asserted)', () => {
  const chunk = '## Section\n\nSome **bold** text with `code`, a [link](https://example.com) and snake_case_words.\n' +
    'Second line with *emphasis* and https://example.org/path.\n\n- item one\n- item two\n  1. nested\n\n' +
    '> quoted *text*\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n```js\nconst x = { a: "s", b: 42 }; // c\nfunction f() { return x; }\n```\n\n';
  let doc = '';
  while (doc.length < 50 * 1024) doc += chunk;
  md(doc); // warm up
  let t = performance.now();
  const html = md(doc);
  const ms = performance.now() - t;
  assert.ok(html.length > doc.length);
  const nasty = ['*a '.repeat(17000), '['.repeat(50000), '`'.repeat(3) + 'x`'.repeat(25000), '_a_b'.repeat(12500),
    '> '.repeat(25000), '- '.repeat(100) + 'x\n'.repeat(100), '[a](' .repeat(12500), '**a *'.repeat(10000)].join('\n\n');
  t = performance.now();
  md(nasty);
  const nastyMs = performance.now() - t;
  console.log(`  50 KB render: ${ms.toFixed(1)} ms; ${(nasty.length / 1024).toFixed(0)} KB pathological input: ${nastyMs.toFixed(1)} ms`);
});

let failed = 0;
for (const [name, fn] of tests) {
  try {
    fn();
  } catch (e) {
    failed++;
    console.error(`FAIL ${name}\n  ${String(e.message).split('\n').join('\n  ')}`);
  }
}
console.log(`markdown_test: ${tests.length - failed}/${tests.length} passed${failed ? `, ${failed} FAILED` : ''}`);
process.exit(failed ? 1 : 0);
