// Jinja interpreter unit tests: one tiny template per feature with the output Jinja2 (with transformers'
// chat-template settings: trim_blocks, lstrip_blocks, tojson without ASCII escaping) gives, then parse errors
// and the limits that keep untrusted templates and inputs from crashing or running away.
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_parser.h"

namespace lazyslot::jinja {
namespace {

using nlohmann::ordered_json;

Result<std::string> Render(const std::string& tmpl, const ordered_json& ctx = ordered_json::object(),
                           const RenderLimits& limits = RenderLimits{}) {
  LS_ASSIGN_OR_RETURN(auto program, ParseTemplate(tmpl));
  LS_ASSIGN_OR_RETURN(Value context, Value::FromJson(ctx));
  Evaluator ev(*program, limits);
  return ev.Render(context);
}

struct Case {
  const char* tmpl;
  const char* ctx;  // JSON object, or nullptr
  const char* want;
};

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    ordered_json ctx = c.ctx ? ordered_json::parse(c.ctx) : ordered_json::object();
    Result<std::string> got = Render(c.tmpl, ctx);
    if (!got.ok()) {
      ADD_FAILURE() << "template: " << c.tmpl << "\nerror: " << got.status().ToString();
      continue;
    }
    EXPECT_EQ(*got, c.want) << "template: " << c.tmpl;
  }
}

TEST(JinjaSyntax, TextOutputAndComments) {
  RunCases({
      {"plain text", nullptr, "plain text"},
      {"Hello {{ name }}!", R"({"name": "W"})", "Hello W!"},
      {"a{# comment #}b", nullptr, "ab"},
      {"{{ missing }}|{{ missing.attr }}|{{ missing['k'] }}", nullptr, "||"},
      {"x\n", nullptr, "x"},  // one trailing newline is dropped
      {"x\n\n", nullptr, "x\n"},
      {"a\r\nb", nullptr, "a\nb"},  // newlines normalized
      {"{% raw %}{{ not evaluated }}{% endraw %}", nullptr, "{{ not evaluated }}"},
      {"{{ {'a': {'b': 1}} }}", nullptr, "{'a': {'b': 1}}"},  // "}}" inside a dict literal
  });
}

TEST(JinjaSyntax, WhitespaceControl) {
  RunCases({
      // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
      {"  {% if true %}\n  x\n  {% endif %}\n  {# c #}\ny\n{{ 'z' }}\nw", nullptr, "  x\ny\nz\nw"},
      {"a  {%- if true -%}  x  {%- endif -%}  b", nullptr, "axb"},
      {"{{ 'a' }}  \n  {{- 'b' -}}  \n  c", nullptr, "abc"},
      {"  {%+ if true %}x{% endif +%}\ny", nullptr, "  x\ny"},  // '+' disables lstrip / trim
      {"{%- set x = 1 -%}\n  a  {#- c -#}  b {# d #}\n e", nullptr, "ab  e"},
      {"{% for i in [1, 2] %}\n{{ i }}\n{% endfor %}\n", nullptr, "1\n2\n"},
      {"a\n  {% raw %}  {{ y }}  {% endraw %}\nb", nullptr, "a\n  {{ y }}  b"},
  });
}

TEST(JinjaSyntax, Literals) {
  RunCases({
      {R"({{ "a\nb\tc\\d\x41\u00e9\U0001F642\q" }})", nullptr, "a\nb\tc\\dA\xC3\xA9\xF0\x9F\x99\x82\\q"},
      {R"({{ 'it\'s' }}|{{ "con" 'cat' }})", nullptr, "it's|concat"},
      {"{{ 42 }}|{{ 1_000 }}|{{ 1.5 }}|{{ 2e3 }}|{{ -7 }}", nullptr, "42|1000|1.5|2000.0|-7"},
      {"{{ true }}|{{ True }}|{{ false }}|{{ none }}|{{ None }}", nullptr, "True|True|False|None|None"},
      {"{{ [1, 'a', none, true, 1.0] }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }}", nullptr,
       "[1, 'a', None, True, 1.0]|(1,)|(1, 2)|()"},
      {R"({{ {'k': [1, "it's"], 'n': none} }}|{{ {} }}|{{ [] }})", nullptr,
       R"({'k': [1, "it's"], 'n': None}|{}|[])"},
      {"{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 1.5e15 }}|{{ 1/3 }}|{{ 100.0 }}", nullptr,
       "0.30000000000000004|1e-05|1e+16|1500000000000000.0|0.3333333333333333|100.0"},
  });
}

TEST(JinjaExpressions, Arithmetic) {
  RunCases({
      {"{{ 1 + 2 }}|{{ 10 - 3 }}|{{ 2 * 3.0 }}|{{ 3 / 2 }}|{{ 10 / 5 }}", nullptr, "3|7|6.0|1.5|2.0"},
      {"{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 7.5 % 2 }}|{{ -7.5 // 2 }}", nullptr,
       "3|-4|2|-2|1.5|-4.0"},
      {"{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ -2 ** 2 }}|{{ 2 ** 0.5 }}", nullptr, "1024|0.5|4|1.4142135623730951"},
      {"{{ 'ab' * 2 }}|{{ [1] * 3 }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}", nullptr, "abab|[1, 1, 1]|ab|[1, 2]"},
      {"{{ 'x' ~ 1 ~ none ~ true ~ undefined_var }}|{{ 1 ~ 2 }}", nullptr, "x1NoneTrue|12"},
      {"{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 'a' ~ 2 * 3 }}|{{ 2 * 3 ~ 'a' }}", nullptr, "7|9|a6|6a"},
      {"{{ true + 1 }}|{{ -x }}", R"({"x": 3})", "2|-3"},
  });
}

TEST(JinjaExpressions, ComparisonLogicAndMembership) {
  RunCases({
      {"{{ 1 == 1.0 }}{{ true == 1 }}{{ [1, 2] == [1, 2] }}{{ {'a': 1} == {'a': 1} }}{{ '1' == 1 }}", nullptr,
       "TrueTrueTrueTrueFalse"},
      {"{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 2 >= 2 }}{{ 1 != 2 }}", nullptr,
       "TrueTrueTrueFalseTrueTrue"},
      {"{{ 'a' in 'cat' }}{{ 'k' in d }}{{ 3 not in [1, 2] }}{{ 'z' in d }}{{ not 1 in [1] }}",
       R"({"d": {"k": 1}})", "TrueTrueTrueFalseFalse"},
      {"{{ a or b }}|{{ a and b }}|{{ 0 or '' or 'z' }}|{{ 1 and 2 }}|{{ not none }}",
       R"({"a": "", "b": "B"})", "B||z|2|True"},
      {"{{ 'y' if c else 'n' }}|{{ 'y' if not c else 'n' }}|{{ 'only' if false }}", R"({"c": [1]})", "y|n|"},
  });
}

TEST(JinjaExpressions, SubscriptsSlicesAndAttributes) {
  RunCases({
      {"{{ 'abc'[-1] }}{{ 'abc'[5] }}{{ [1, 2, 3][-2] }}{{ [1, 2, 3][1:] }}{{ [1, 2, 3][:-1] }}", nullptr,
       "c2[2, 3][1, 2]"},
      {"{{ [1, 2, 3, 4, 5][::2] }}{{ 'hello'[1:4] }}{{ 'hello'[::-1] }}{{ [1, 2, 3][5:] }}", nullptr,
       "[1, 3, 5]ellolleh[]"},
      {"{{ messages[::-1] | map(attribute='c') | join }}", R"({"messages": [{"c": 1}, {"c": 2}, {"c": 3}]})",
       "321"},
      {"{{ 'Grüße'[1:3] }}|{{ 'Grüße' | length }}", nullptr, "rü|5"},  // code points, not bytes
      {"{{ x.y.z }}|{{ x['y']['z'] }}|{{ l.0 }}|{{ l[10] }}|{{ d.missing }}",
       R"({"x": {"y": {"z": "deep"}}, "l": [5], "d": {}})", "deep|deep|5||"},
      {"{{ d['items'] }}|{{ d.get('items') }}|{{ d.get('nope') }}|{{ d.get('nope', 0) }}",
       R"({"d": {"items": 7}})", "7|7|None|0"},
  });
}

TEST(JinjaExpressions, StringMethods) {
  RunCases({
      {"{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'ab  '.rstrip() "
       "}}",
       nullptr, "a b|a|x\n|ab"},
      {"{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.rsplit(',', "
       "1) }}",
       nullptr, "['a', 'b', '', 'c']|['a', 'b,c']|['a', 'b']|['a,b', 'c']"},
      {"{{ 'Hi!'.startswith('Hi') }}{{ 'Hi!'.endswith(('x', '!')) }}{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}",
       nullptr, "TrueTrueHIhi"},
      {"{{ 'aaa'.replace('a', 'b') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|{{ "
       "'hELLO'.capitalize() }}",
       nullptr, "bbb|bba|Hello World|Hello"},
      {"{{ '{} and {}'.format('x', 'y') }}|{{ '{0}{0}'.format('z') }}|{{ '{n}!'.format(n=3) }}", nullptr,
       "x and y|zz|3!"},
      {"{{ 'hi hi'.find('i') }}|{{ 'hi hi'.count('hi') }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\\nb'.splitlines() "
       "}}",
       nullptr, "1|2|a-b|['a', 'b']"},
      {"{%- set c = '<think>\\nr\\n</think>\\n\\nanswer' -%}{{ c.split('</think>')[-1].lstrip('\\n') }}|"
       "{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}",
       nullptr, "answer|r"},
      {"{{ '%s-%d-%05.2f-%r' % ('a', 3, 2.5, 'q') }}|{{ '%d%%' % 50 }}", nullptr, "a-3-02.50-'q'|50%"},
  });
}

TEST(JinjaExpressions, DictAndListMethods) {
  RunCases({
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys() | list }}|{{ d.values() | list "
       "}}",
       R"({"d": {"z": 1, "a": 2}})", "z=1;a=2;|['z', 'a']|[1, 2]"},
      {"{{ [1, 2, 2].count(2) }}{{ [1, 2, 3].index(3) }}", nullptr, "22"},
  });
}

TEST(JinjaStatements, IfElifElse) {
  RunCases({
      {"{% if a %}A{% elif b %}B{% elif c %}C{% else %}D{% endif %}", R"({"c": 1})", "C"},
      {"{% if a %}A{% elif b %}B{% else %}D{% endif %}", nullptr, "D"},
      {"{% if x is defined and x %}yes{% endif %}", R"({"x": 0})", ""},
  });
}

TEST(JinjaStatements, ForLoops) {
  RunCases({
      {"{% for i in range(3) %}{{ loop.index0 }}{{ loop.index }}{{ loop.revindex }}{{ loop.revindex0 }}"
       "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       nullptr, "0132TrueFalse3;1221FalseFalse3;2310FalseTrue3;"},
      {"{% for x in [] %}a{% else %}empty{% endfor %}", nullptr, "empty"},
      {"{% for a, b in [[1, 2], [3, 4]] if a > 1 %}{{ loop.index }}/{{ loop.length }}:{{ a }}{{ b }}{% "
       "endfor %}",
       nullptr, "1/1:34"},
      {"{% for m in messages if m.role == 'user' %}{{ m.c }}{% endfor %}",
       R"({"messages": [{"role": "user", "c": 1}, {"role": "bot", "c": 2}, {"role": "user", "c": 3}]})",
       "13"},
      {"{% for k in d %}{{ k }}{% endfor %}|{% for c in 'hé' %}[{{ c }}]{% endfor %}|{% for x in nothing "
       "%}x{% endfor %}",
       R"({"d": {"b": 1, "a": 2}})", "ba|[h][é]|"},
      {"{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif "
       "%}{{ i }}"
       "{% endfor %}",
       nullptr, "02"},
      {"{% for x in [1, 2] %}{% for y in [3, 4] %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{{ loop.index "
       "}}|{% endfor %}",
       nullptr, "113 214 1|123 224 2|"},
      {"{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{% if not loop.first %}{{ loop.previtem }}{% endif "
       "%}"
       "{% if not loop.last %}{{ loop.nextitem }}{% endif %}{% endfor %}",
       nullptr, "a2b13a2"},
      // Assignments inside a loop body stay in that iteration.
      {"{% for i in [1, 2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}[{{ x }}]",
       nullptr, "[][]"},
      {"{% for i in range(2, 10, 3) %}{{ i }}{% endfor %}|{{ range(5, 0, -2) | list }}", nullptr,
       "258|[5, 3, 1]"},
  });
}

TEST(JinjaStatements, SetAndNamespace) {
  RunCases({
      {"{% set x = 1 %}{% set y = x + 1 %}{{ x }}{{ y }}", nullptr, "12"},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", nullptr, "12(1, 2)"},
      {"{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]", nullptr, "[a2b]"},
      {"{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m == 's' %}{% set ns.found = "
       "true %}"
       "{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.found }}{{ ns.n }}",
       R"({"messages": ["u", "s"]})", "True2"},
      {"{% set ns = namespace(v=[]) %}{% for i in range(3) %}{% set ns.v = ns.v + [i] %}{% endfor %}{{ ns.v "
       "}}",
       nullptr, "[0, 1, 2]"},
      {"{% set messages = messages[1:] %}{{ messages | length }}", R"({"messages": [1, 2, 3]})", "2"},
      {"{% if true %}{% set inner = 'leaks' %}{% endif %}{{ inner }}", nullptr,
       "leaks"},  // if is not a scope
      {"{{ dict(a=1, b=2) }}|{{ namespace(x=1).x }}", nullptr, "{'a': 1, 'b': 2}|1"},
  });
}

TEST(JinjaStatements, MacrosAndFilterBlocks) {
  RunCases({
      {"{% macro m(a, b=2) %}[{{ a }}{{ b }}{{ x }}]{% endmacro %}{% set x = 5 %}{{ m(1) }}{{ m(1, b=3) }}{{ "
       "m(a=0) }}",
       nullptr, "[125][135][025]"},
      {"{% for i in [1] %}{% set y = 3 %}{% macro m2() %}{{ y }}{{ i }}{% endmacro %}{{ m2() }}{% endfor %}",
       nullptr, "31"},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ "
       "fact(5) }}",
       nullptr, "120"},
      {"{% filter upper %}ab{{ 'c' }}{% endfilter %}", nullptr, "ABC"},
      {"{% generation %}kept{% endgeneration %}", nullptr, "kept"},
  });
}

TEST(JinjaFilters, StringsAndNumbers) {
  RunCases({
      {"{{ '  x  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'AbC' | upper }}{{ 'AbC' | lower }}", nullptr,
       "x|hi|ABCabc"},
      {"{{ 'hELLO wORLD' | capitalize }}|{{ \"they're bill-o x\" | title }}", nullptr,
       "Hello world|They're Bill-O X"},
      {"{{ 'a-b' | replace('-', '+') }}|{{ 'aaa' | replace('a', 'b', 2) }}", nullptr, "a+b|bba"},
      {"{{ '3' | int + 1 }}|{{ '3.7' | int }}|{{ 'x' | int }}|{{ 'x' | int(7) }}|{{ 3.9 | int }}", nullptr,
       "4|3|0|7|3"},
      {"{{ '2.5' | float }}|{{ 3 | float }}|{{ 'abc' | float }}|{{ -3 | abs }}|{{ -2.5 | abs }}", nullptr,
       "2.5|3.0|0.0|3|2.5"},
      {"{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.1 | round(0, 'ceil') }}|{{ 7 | round "
       "}}",
       nullptr, "2.57|2.0|4.0|3.0|7"},
      {"{{ 42 | string ~ '!' }}|{{ [1, 2] | string }}|{{ 'a b c' | wordcount }}", nullptr, "42!|[1, 2]|3"},
      {"{{ \"<a href='x'>&</a>\" | e }}|{{ '<b>' | safe }}|{{ '%s and %s' | format('a', 'b') }}", nullptr,
       "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;|<b>|a and b"},
      {"{{ 'a\\nb\\r\\nc\\n' | indent(2) }}|{{ 'l1\\nl2' | indent(width=3, first=true) }}|{{ 'a\\n\\nb' | "
       "indent(2, blank=true) }}",
       nullptr, "a\n  b\n  c\n|   l1\n   l2|a\n  \n  b"},
  });
}

TEST(JinjaFilters, Sequences) {
  RunCases({
      {"{{ [1, [2, 3]] | length }}|{{ 'héllo' | length }}|{{ {'a': 1, 'b': 2} | count }}|{{ undefined_x | "
       "length }}",
       nullptr, "2|5|2|0"},
      {"{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ 'abc' | first }}{{ 'abc' | reverse }}{{ [1, 2] | "
       "reverse | list }}",
       nullptr, "13acba[2, 1]"},
      {"{{ [1, 2, 3] | join }}|{{ [1, 2, 3] | join('-') }}|{{ m | join(', ', attribute='c') }}",
       R"({"m": [{"c": "a"}, {"c": "b"}]})", "123|1-2-3|a, b"},
      {"{{ 'abc' | list }}|{{ {'a': 1} | list }}|{{ d | items | list }}|{{ d | dictsort }}",
       R"({"d": {"b": 1, "a": 2}})", "['a', 'b', 'c']|['a']|[('b', 1), ('a', 2)]|[('a', 2), ('b', 1)]"},
      {"{{ ['b', 'A', 'a', 'C'] | sort }}|{{ ['b', 'A', 'a', 'C'] | sort(case_sensitive=true) }}|"
       "{{ [3, 1, 2] | sort(reverse=true) }}|{{ ['b', 'A', 'a'] | unique | list }}",
       nullptr, "['A', 'a', 'b', 'C']|['A', 'C', 'a', 'b']|[3, 2, 1]|['b', 'A']"},
      {"{{ [3, 1, 2] | max }}{{ [3, 1, 2] | min }}{{ [1, 2, 3] | sum }}{{ m | sum(attribute='n') }}",
       R"({"m": [{"n": 4}, {"n": 5}]})", "3169"},
      {"{{ x | default('d') }}|{{ none | default('d') }}|{{ '' | default('d', true) }}|{{ x | d('e') }}",
       nullptr, "d|None|d|e"},
  });
}

TEST(JinjaFilters, SelectMapAttr) {
  const char* msgs =
      R"({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                   {"role": "user", "content": "c", "name": "n"}]})";
  RunCases({
      {"{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(', ') }}", msgs,
       "a, c"},
      {"{{ msgs | rejectattr('role', 'eq', 'user') | list | length }}|{{ msgs | selectattr('name') | list | "
       "length }}",
       msgs, "1|1"},
      {"{{ msgs | map(attribute='content') | map('upper') | list }}|{{ msgs | map(attribute='x', "
       "default='-') | join }}",
       msgs, "['A', 'B', 'C']|---"},
      {"{{ [0, 1, 2, none, ''] | select | list }}|{{ [1, 2, 3, 4] | select('odd') | list }}|"
       "{{ [1, 2, 3, 4] | reject('even') | list }}|{{ [1, 5, 9] | select('gt', 4) | list }}",
       nullptr, "[1, 2]|[1, 3]|[1, 3]|[5, 9]"},
  });
}

// Jinja2 refuses to filter none as a sequence; with none_filters_as_empty (how chat templates render, as
// llama.cpp does) select/reject/selectattr/rejectattr/map/unique/items of none are an empty list, and the
// other filters keep their errors.
TEST(JinjaFilters, NoneAsEmptySequenceOnlyWhenAsked) {
  const std::string tmpl =
      "{% set tools = none %}{{ tools | selectattr('type', 'equalto', 'code_interpreter') | list | length }}";
  Result<std::string> strict = Render(tmpl);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("'NoneType' object is not iterable"), std::string::npos)
      << strict.status().message();

  RenderLimits lenient;
  lenient.none_filters_as_empty = true;
  Result<std::string> got = Render(tmpl, ordered_json::object(), lenient);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "0");
  got = Render(
      "{{ x | rejectattr('a') | list }}|{{ x | select | list }}|{{ x | reject('odd') | list }}|"
      "{{ x | map(attribute='a') | list }}|{{ x | unique | list }}|{{ x | items | list }}|{{ [1] | select | "
      "list }}",
      ordered_json{{"x", nullptr}}, lenient);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "[]|[]|[]|[]|[]|[]|[1]");
  EXPECT_FALSE(Render("{{ x | list }}", ordered_json{{"x", nullptr}}, lenient).ok());
  EXPECT_FALSE(Render("{{ x | join(',') }}", ordered_json{{"x", nullptr}}, lenient).ok());
}
TEST(JinjaFilters, ToJson) {
  RunCases({
      // Key order kept, ", " and ": " separators, non-ASCII kept (transformers' tojson).
      {"{{ t | tojson }}", R"({"t": {"type": "function", "b": [1, 2.5, null, true, "Grüße \"q\"\n"]}})",
       R"({"type": "function", "b": [1, 2.5, null, true, "Grüße \"q\"\n"]})"},
      {"{{ t | tojson(indent=2) }}", R"({"t": {"a": [1, {"b": null}], "c": {}, "d": []}})",
       "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}"},
      {"{{ t | tojson(sort_keys=true) }}|{{ t | tojson(separators=(',', ':')) }}|{{ t | "
       "tojson(ensure_ascii=true) }}",
       R"({"t": {"b": "é🙂", "a": 1}})",
       R"({"a": 1, "b": "é🙂"}|{"b":"é🙂","a":1}|{"b": "\u00e9\ud83d\ude42", "a": 1})"},
      {"{{ 'x\\u0001\\x7f' | tojson }}|{{ 1.0 | tojson }}|{{ (1, 2) | tojson }}", nullptr,
       "\"x\\u0001\x7f\"|1.0|[1, 2]"},
  });
}

// Filters added for current models' templates (from_json: llama.cpp's minja, for DeepSeek V3.2); outputs are
// Python Jinja2's.
TEST(JinjaFilters, FromJson) {
  RunCases({
      {R"({{ '{"b": [1, 2.5, "é", null, true], "a": {}}' | from_json | tojson }})", nullptr,
       R"({"b": [1, 2.5, "é", null, true], "a": {}})"},
      {R"({{ ('[1, 2]' | from_json)[1] }}|{{ ('{"k": "v"}' | from_json).k }})", nullptr, "2|v"},
      {"{% for k, v in (args | from_json).items() %}{{ k }}={{ v }};{% endfor %}",
       R"({"args": "{\"city\": \"Zürich\", \"days\": 3}"})", "city=Zürich;days=3;"},
  });
  Result<std::string> bad = Render("{{ 'not json' | from_json }}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("from_json: not valid JSON"), std::string::npos);
  EXPECT_FALSE(Render("{{ 1 | from_json }}").ok());
  EXPECT_FALSE(Render("{{ '" + std::string(300, '[') + std::string(300, ']') + "' | from_json }}").ok());
}

TEST(JinjaFilters, BatchSliceGroupBy) {
  RunCases({
      {"{{ [1, 2, 3, 4, 5] | batch(2) | list }}|{{ [1, 2, 3] | batch(2, 'x') | list }}", nullptr,
       "[[1, 2], [3, 4], [5]]|[[1, 2], [3, 'x']]"},
      {"{{ [1, 2, 3, 4, 5, 6, 7] | slice(3) | list }}|{{ [1, 2, 3, 4] | slice(3, 0) | list }}", nullptr,
       "[[1, 2, 3], [4, 5], [6, 7]]|[[1, 2], [3, 0], [4, 0]]"},
      {"{% for g, items in xs | groupby('r') %}{{ g }}={{ items | map(attribute='v') | join(',') }};"
       "{% endfor %}",
       R"({"xs": [{"r": "b", "v": 1}, {"r": "a", "v": 2}, {"r": "b", "v": 3}]})", "a=2;b=1,3;"},
      // case-insensitive by default, the first item's value is the grouper; default= for missing keys
      {"{{ [{'a': 'X'}, {'a': 'x'}] | groupby('a') | map('first') | list }}|"
       "{{ [{'v': 1}] | groupby('a', default='z') | map('first') | list }}",
       nullptr, "['X']|['z']"},
  });
}

TEST(JinjaFilters, TruncateCenterStripTagsRound) {
  RunCases({
      {"{{ 'one two three four' | truncate(10) }}|{{ 'one two three four' | truncate(10, true) }}|"
       "{{ 'short' | truncate(3, leeway=5) }}",
       nullptr, "one...|one two...|short"},
      {"{{ 'ab' | center(7) }}|{{ '<p>Hi  <b>x</b></p> &amp; y<!-- c -->' | striptags }}", nullptr,
       "   ab  |Hi x & y"},
      // Python rounds the binary value: 2.675 is 2.67499..., 0.125 is a tie (to even).
      {"{{ 2.675 | round(2) }}|{{ 2.5 | round }}|{{ 0.125 | round(2) }}|{{ 1.5 | round(0, 'floor') }}",
       nullptr, "2.67|2.0|0.12|1.0"},
  });
}

TEST(JinjaExpressions, StringMethodOptionalArguments) {
  RunCases({
      {"{{ '  a  b  '.rsplit(None, 1) }}|{{ 'a b c'.rsplit() }}", nullptr, "['  a', 'b']|['a', 'b', 'c']"},
      {"{{ 'abcdef'.startswith('cd', 2) }}|{{ 'abcdef'.startswith('cd', 2, 3) }}|"
       "{{ 'abcdef'.endswith('cd', 0, 4) }}",
       nullptr, "True|False|True"},
  });
}

TEST(JinjaStatements, CallBlocks) {
  RunCases({
      {"{% macro m(a) %}[{{ caller() }}{{ a }}]{% endmacro %}{% call m(1) %}body{% endcall %}", nullptr,
       "[body1]"},
      {"{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}"
       "{% call(item, n) each(['a', 'b']) %}<{{ n }}:{{ item }}>{% endcall %}",
       nullptr, "<1:a><2:b>"},
  });
  Result<std::string> not_a_call = Render("{% call x %}b{% endcall %}");
  ASSERT_FALSE(not_a_call.ok());
  EXPECT_NE(not_a_call.status().message().find("expected a macro call"), std::string::npos);
}

TEST(JinjaStatements, MacroVarargsAndKwargs) {
  RunCases({
      {"{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs | dictsort }}{% endmacro %}{{ m(1, 2, 3, z=1, y=2) }}|"
       "{{ m(0) }}",
       nullptr, "1(2, 3)[('y', 2), ('z', 1)]|0()[]"},
  });
  // Without varargs / kwargs in the body, extra arguments are errors (as Jinja2).
  EXPECT_FALSE(Render("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}").ok());
  EXPECT_FALSE(Render("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}").ok());
}

TEST(JinjaStatements, LoopScoping) {
  RunCases({
      {"{% for x in [1, 2] %}{% set y = x %}{% endfor %}{{ y is defined }}|{% set ns = namespace(n=0) %}"
       "{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
       nullptr, "False|3"},
  });
}

TEST(JinjaGlobals, StrftimeNowUsesThePinnedClock) {
  RenderLimits pinned;
  pinned.now_unix = 1785058860;  // 2026-07-26T09:41:00Z
  Result<std::string> r =
      Render("{{ strftime_now('%Y-%m-%d|%d %b %Y|%B %d, %Y|%H:%M') }}", ordered_json::object(), pinned);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "2026-07-26|26 Jul 2026|July 26, 2026|09:41");
  Result<std::string> live = Render("{{ strftime_now('%Y') }}");
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->size(), 4u);  // the real clock
}

TEST(JinjaTests, IsTests) {
  RunCases({
      {"{{ x is none }}{{ y is string }}{{ z is number }}{{ m is mapping }}{{ l is iterable }}{{ l is "
       "sequence }}",
       R"({"x": null, "y": "s", "z": 3, "m": {}, "l": [1]})", "TrueTrueTrueTrueTrueTrue"},
      {"{{ t is true }}{{ f is false }}{{ 1 is true }}{{ t is boolean }}{{ z is integer }}{{ 1.5 is float }}",
       R"({"t": true, "f": false, "z": 3})", "TrueTrueFalseTrueTrueTrue"},
      {"{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ u is undefined }}"
       "{{ u is defined }}{{ u is not defined }}",
       nullptr, "TrueTrueTrueFalseTrueFalseTrue"},
      {"{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 3 is gt 2 }}{{ 2 is in [1, 2] }}{{ range is callable }}"
       "{{ x is sameas none }}{{ 1 is eq 1 }}{{ 'a' is ne 'a' }}",
       R"({"x": null})", "TrueTrueTrueTrueTrueTrueTrueFalse"},
      {"{{ m.reasoning is defined and m.reasoning is not none }}", R"({"m": {"reasoning": null}})", "False"},
  });
}

TEST(JinjaErrors, RaiseExceptionIsAStatus) {
  Result<std::string> r = Render("ok{{ raise_exception('Roles must alternate') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), std::string("line 1, column 6: ") + kRaisedPrefix + "Roles must alternate");
}

TEST(JinjaErrors, ParseErrorsHavePositions) {
  struct ErrCase {
    const char* tmpl;
    const char* where;  // expected "line L, column C" prefix
  };
  const ErrCase cases[] = {
      {"{{ x ", "line 1, column 1:"},
      {"a\n{% if x %}\nabc", "line 3, column 4:"},
      {"{% for %}", "line 1, column 8:"},
      {"{{ \"abc }}", "line 1, column 4:"},
      {"{% endif %}", "line 1, column 4:"},
      {"{{ 1 + }}", "line 1, column 8:"},
      {"{% set x = [1, 2 %}", "line 1, column 18:"},
      {"{{ [1, 2 }}", "line 1, column 10:"},
      {"{% foo %}", "line 1, column 4:"},
      {"{% include 'x' %}", "line 1, column 4:"},
      {"{# open", "line 1, column 1:"},
      {"x\n  {{ a | }}", "line 2, column 10:"},
      {"{{ a is }}", "line 1, column 9:"},
      {"{% macro m(a %}{% endmacro %}", "line 1, column 14:"},
      {"{{ 99999999999999999999 }}", "line 1, column 4:"},
      {"{{ 'a' ? }}", "line 1, column 8:"},
      {"{% raw %}never closed", "line 1, column 1:"},
  };
  for (const ErrCase& c : cases) {
    auto p = ParseTemplate(c.tmpl);
    ASSERT_FALSE(p.ok()) << c.tmpl;
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << c.tmpl;
    EXPECT_EQ(p.status().message().rfind(c.where, 0), 0u) << c.tmpl << " -> " << p.status().message();
  }
}

TEST(JinjaErrors, RuntimeErrorsHavePositions) {
  const std::pair<const char*, const char*> cases[] = {
      {"a\n{{ foo(1) }}", "line 2, column 4: 'foo' is undefined"},
      {"{{ 1 + 'a' }}", "line 1, column 6: unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ x | nofilter }}", "line 1, column 8: unknown filter 'nofilter'"},
      {"{% for x in 5 %}{% endfor %}", "line 1, column 13: 'int' object is not iterable"},
      {"{{ 1 // 0 }}", "line 1, column 6: integer division by zero"},
      {"{% set x.y = 1 %}", "line 1, column 4: cannot assign attribute"},
      {"{{ [1][::0] }}", "line 1, column 7: slice step cannot be zero"},
      {"{{ 9223372036854775807 + 1 }}", "line 1, column 24: integer overflow"},
      {"{{ [].append(1) }}", "line 1, column 4: access to list.append() is unsafe"},
      {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "line 1, column 34: macro 'm' takes not more than 1"},
  };
  for (const auto& [tmpl, want] : cases) {
    Result<std::string> r = Render(tmpl);
    ASSERT_FALSE(r.ok()) << tmpl;
    EXPECT_EQ(r.status().message().rfind(want, 0), 0u) << tmpl << " -> " << r.status().message();
  }
}

TEST(JinjaLimits, DeepNestingIsAParseError) {
  std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  auto p = ParseTemplate("{{ " + parens + " }}");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nested deeper"), std::string::npos) << p.status().message();

  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(ParseTemplate(ifs).ok());

  std::string nots = "{{ " + std::string(1, ' ');
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_FALSE(ParseTemplate(nots + "x }}").ok());

  std::string chain = "{{ 1";  // a flat but very long left-deep tree
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_FALSE(ParseTemplate(chain + " }}").ok());

  std::string lists = "{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}";
  EXPECT_FALSE(ParseTemplate(lists).ok());

  // Nesting within the limits still works.
  std::string ok_ifs;
  for (int i = 0; i < 50; ++i) ok_ifs += "{% if true %}";
  ok_ifs += "x";
  for (int i = 0; i < 50; ++i) ok_ifs += "{% endif %}";
  auto r = Render(ok_ifs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "x");
}

TEST(JinjaLimits, DeeplyNestedJsonInputIsRejected) {
  ordered_json deep = 1;
  for (int i = 0; i < 1000; ++i) deep = ordered_json::array({deep});
  auto r = Render("{{ x | length }}", {{"x", deep}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos);
}

TEST(JinjaLimits, RunawayTemplatesStop) {
  RenderLimits small;
  small.max_work = 1 << 20;
  small.max_output_bytes = 1 << 16;
  const char* runaway[] = {
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  // 10^10 iterations
      "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",                          // output limit
      "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
      "{{ 'x' * 100000000000 }}",
      "{{ range(100000000000) | length }}",
      "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",     // infinite recursion
      "{% macro r(n) %}{{ r(n) ~ r(n) }}{% endmacro %}{{ r(0) }}",  // exponential recursion
      "{% set ns = namespace(v=1) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}",
      "{{ [1] * 1000000000 }}",
  };
  for (const char* t : runaway) {
    Result<std::string> r = Render(t, ordered_json::object(), small);
    EXPECT_FALSE(r.ok()) << t;
  }
}

TEST(JinjaLimits, DefaultLimitsStopRunawayTemplates) {
  const std::pair<const char*, Code> runaway[] = {
      {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
       Code::kResourceExhausted},
      {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", Code::kResourceExhausted},
      {"{{ 'x' * 100000000000 }}", Code::kResourceExhausted},
      {"{{ range(100000000000) | length }}", Code::kResourceExhausted},
      {"{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", Code::kResourceExhausted},
      {"{% set ns = namespace(v=1) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}",
       Code::kInvalidArgument},
  };
  for (const auto& [t, code] : runaway) {
    Result<std::string> r = Render(t);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.status().code(), code) << t << " -> " << r.status().ToString();
  }
}

// The deepest templates the limits allow, rendered on a thread with a small fixed stack (4 MiB; the limits
// target 1 MiB in optimized builds; AddressSanitizer frames are several times larger): they must end in an
// error, not overflow the stack.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kTestStack = size_t{64} << 20;
#else
constexpr size_t kTestStack = size_t{4} << 20;
#endif
TEST(JinjaLimits, DeepRecursionFitsASmallThreadStack) {
  std::string nested_ifs, nested_fors, minus;
  for (int i = 0; i < 90; ++i) {
    nested_ifs += "{% if true %}";
    nested_fors += "{% for i in [1] %}";
    minus += "- ";
  }
  std::string end_ifs, end_fors;
  for (int i = 0; i < 90; ++i) {
    end_ifs += "{% endif %}";
    end_fors += "{% endfor %}";
  }
  struct Job {
    std::vector<std::string> templates;
    std::vector<Status> results;
  } job;
  job.templates = {
      "{% macro r(n) %}{{ " + minus + "r(n - 1) | length }}{% endmacro %}{{ r(1000) }}",
      "{% macro r(n) %}" + nested_ifs + "{{ r(n - 1) }}" + end_ifs + "{% endmacro %}{{ r(1000) }}",
      "{% macro r(n) %}" + nested_fors + "{{ r(n - 1) }}" + end_fors + "{% endmacro %}{{ r(1000) }}",
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kTestStack);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    auto* j = static_cast<Job*>(arg);
    for (const std::string& t : j->templates) j->results.push_back(Render(t).status());
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(job.results.size(), job.templates.size());
  for (const Status& st : job.results) {
    EXPECT_EQ(st.code(), Code::kResourceExhausted) << st.ToString();
  }
}

TEST(JinjaLimits, GarbageTemplatesNeverCrash) {
  // A deterministic pseudo-random mix of template fragments: every parse or render must return, OK or not.
  const char* frags[] = {"{{",        "}}",
                         "{%",        "%}",
                         "{#",        "#}",
                         "if",        "for",
                         "x",         "in",
                         "endif",     "endfor",
                         "set",       "=",
                         "'s'",       "\"",
                         "(",         ")",
                         "[",         "]",
                         "{",         "}",
                         "|",         "length",
                         "is",        "not",
                         "defined",   "-",
                         "+",         "*",
                         "..",        ".",
                         ",",         ":",
                         "1",         "0.5",
                         "loop",      "raise_exception",
                         "macro",     "endmacro",
                         "\n",        " ",
                         "else",      "elif",
                         "~",         "%",
                         "//",        "**",
                         "namespace", "ns.a",
                         "messages",  "raw"};
  const size_t n = sizeof(frags) / sizeof(frags[0]);
  uint64_t state = 12345;
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t;
    int len = 1 + static_cast<int>(state % 40);
    for (int i = 0; i < len; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      t += frags[(state >> 33) % n];
      t += ' ';
    }
    auto p = ParseTemplate(t);
    if (!p.ok()) continue;
    ++parsed;
    ordered_json ctx = {{"messages", ordered_json::array({{{"role", "user"}, {"content", "hi"}}})}, {"x", 3}};
    (void)Render(t, ctx);
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace lazyslot::jinja
