// Jinja filters (`x | name(args)`) used by chat templates, with Jinja2's argument names and defaults; tojson
// follows transformers' override (json.dumps, ensure_ascii=False, key order kept).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_text.h"

namespace lazyslot::jinja {

namespace {

using FilterFn = std::function<Result<Value>(Evaluator&, CallArgs&)>;

const Value& Arg(const CallArgs& a, size_t i, const char* name) { return a.Get(i, name); }
bool BoolArg(const CallArgs& a, size_t i, const char* name, bool def) {
  const Value& v = a.Get(i, name);
  return v.is_undefined() ? def : v.Truthy();
}

// Sort/unique key: with case_sensitive=False strings compare lower-cased, as Jinja's ignore_case.
Value SortKey(const Value& v, const std::string& attribute, bool case_sensitive) {
  Value k = attribute.empty() ? v : GetAttrPath(v, attribute);
  if (!case_sensitive && k.is_string()) return Value::String(text::Lower(k.str()));
  return k;
}

std::string AttributeArg(const CallArgs& a, size_t i) {
  const Value& v = a.Get(i, "attribute");
  if (v.is_undefined() || v.is_none()) return "";
  return ToPyString(v);
}

// Sorts (key, value) pairs by key with Python's ordering, stably (sort and groupby); keys that cannot be
// compared are the error.
Status StableSortByKey(std::vector<std::pair<Value, Value>>* keyed, bool reverse) {
  Status err;
  std::stable_sort(keyed->begin(), keyed->end(), [&](const auto& x, const auto& y) {
    Result<int> c = reverse ? PyCompare(y.first, x.first) : PyCompare(x.first, y.first);
    if (!c.ok()) {
      if (err.ok()) err = c.status();
      return false;
    }
    return *c < 0;
  });
  return err;
}

Result<Value> Length(const Value& v) {
  if (v.is_string()) return Value::Int(static_cast<int64_t>(Utf8Length(v.str())));
  if (v.is_array()) return Value::Int(static_cast<int64_t>(v.items().size()));
  if (v.is_object()) return Value::Int(static_cast<int64_t>(v.object().items.size()));
  if (v.is_undefined()) return Value::Int(0);
  return InvalidArgument(std::string("object of type '") + v.TypeName() + "' has no len()");
}

// Python int(str) / float(str) parsing with Jinja's fallbacks (int("3.5") -> 3).
bool ParseNumber(const std::string& raw, bool want_int, Value* out) {
  std::string s = text::Strip(raw, nullptr, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && isdigit(static_cast<unsigned char>(s[i - 1])) &&
        isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    clean += s[i];
  }
  if (clean.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(clean.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) {
    *out = want_int ? Value::Int(i) : Value::Float(static_cast<double>(i));
    return true;
  }
  std::string lower = text::Lower(clean);
  bool special = lower == "inf" || lower == "+inf" || lower == "-inf" || lower == "nan" ||
                 lower == "infinity" || lower == "+infinity" || lower == "-infinity";
  bool plain = std::all_of(clean.begin(), clean.end(), [](char c) {
    return isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  });
  if (!plain && !special) return false;
  double d = std::strtod(clean.c_str(), &end);
  if (*end != '\0') return false;
  if (want_int) {
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return false;
    *out = Value::Int(static_cast<int64_t>(d));
  } else {
    *out = Value::Float(d);
  }
  return true;
}

Result<Value> ToJsonFilter(Evaluator& ev, CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonOptions opt;
  opt.ensure_ascii = BoolArg(a, 1, "ensure_ascii", false);
  const Value& indent = Arg(a, 2, "indent");
  if (indent.is_int() || indent.is_bool()) {
    opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.int_value(), 0, 64)), ' ');
  } else if (indent.is_string()) {
    opt.indent = indent.str().substr(0, 64);
  } else if (!indent.is_undefined() && !indent.is_none()) {
    return InvalidArgument("tojson: indent must be an int or a string");
  }
  if (opt.indent) opt.item_sep.resize(1);  // json.dumps uses "," (no space) with an indent
  const Value& seps = Arg(a, 3, "separators");
  if (seps.is_array() && seps.items().size() == 2 && seps.items()[0].is_string() &&
      seps.items()[1].is_string()) {
    opt.item_sep = seps.items()[0].str();
    opt.key_sep = seps.items()[1].str();
  } else if (!seps.is_undefined() && !seps.is_none()) {
    return InvalidArgument("tojson: separators must be a pair of strings");
  }
  opt.sort_keys = BoolArg(a, 4, "sort_keys", false);
  LS_ASSIGN_OR_RETURN(std::string s, ToJson(Arg(a, 0, "value"), opt));
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(s.size())));
  return Value::String(std::move(s));
}

Result<Value> Indent(CallArgs& a) {
  std::string s = ToPyString(Arg(a, 0, "s"));
  const Value& width = Arg(a, 1, "width");
  std::string pad;
  if (width.is_string()) {
    pad = width.str();
  } else if (width.is_undefined()) {
    pad = "    ";
  } else if (width.is_int() || width.is_bool()) {
    pad = std::string(static_cast<size_t>(std::clamp<int64_t>(width.int_value(), 0, 256)), ' ');
  } else {
    return InvalidArgument("indent: width must be an int or a string");
  }
  bool first = BoolArg(a, 2, "first", false);
  bool blank = BoolArg(a, 3, "blank", false);
  s += "\n";  // Jinja appends a newline so splitlines() keeps a trailing empty line
  std::vector<std::string> lines = text::SplitLines(s);
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      rv += "\n";
      if (blank || !lines[i].empty()) rv += pad;
    }
    rv += lines[i];
  }
  if (first) rv = pad + rv;
  return Value::String(std::move(rv));
}

// select/reject/selectattr/rejectattr: keep items whose test (or truthiness) equals `keep`.
Result<Value> SelectFilter(Evaluator& ev, CallArgs& a, bool by_attr, bool keep) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "seq")));
  size_t next = 1;
  std::string attr;
  if (by_attr) {
    if (a.positional.size() < 2) return InvalidArgument("selectattr/rejectattr need an attribute name");
    attr = ToPyString(a.positional[1]);
    next = 2;
  }
  std::string test;
  if (a.positional.size() > next) test = ToPyString(a.positional[next++]);
  std::vector<Value> out;
  for (const Value& item : items) {
    LS_RETURN_IF_ERROR(ev.Charge(1));
    Value v = by_attr ? GetAttrPath(item, attr) : item;
    bool r;
    if (test.empty()) {
      r = v.Truthy();
    } else {
      CallArgs targs;
      targs.positional.push_back(v);
      for (size_t i = next; i < a.positional.size(); ++i) targs.positional.push_back(a.positional[i]);
      LS_ASSIGN_OR_RETURN(r, ApplyTest(ev, test, targs));
    }
    if (r == keep) out.push_back(item);
  }
  return Value::Array(std::move(out));
}

Result<Value> MapFilter(Evaluator& ev, CallArgs& a) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "seq")));
  std::vector<Value> out;
  const Value& attr = a.Get(99, "attribute");
  if (!attr.is_undefined()) {
    const Value& def = a.Get(99, "default");
    for (const Value& item : items) {
      Value v = GetAttrPath(item, ToPyString(attr));
      out.push_back(v.is_undefined() && !def.is_undefined() ? def : v);
    }
  } else {
    if (a.positional.size() < 2) return InvalidArgument("map: needs a filter name or attribute=");
    std::string filter = ToPyString(a.positional[1]);
    for (const Value& item : items) {
      CallArgs fargs;
      fargs.positional.push_back(item);
      for (size_t i = 2; i < a.positional.size(); ++i) fargs.positional.push_back(a.positional[i]);
      fargs.keyword = a.keyword;
      LS_ASSIGN_OR_RETURN(Value v, ApplyFilter(ev, filter, fargs));
      out.push_back(std::move(v));
    }
  }
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(out.size())));
  return Value::Array(std::move(out));
}

Result<Value> SortFilter(Evaluator& ev, CallArgs& a) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
  bool reverse = BoolArg(a, 1, "reverse", false);
  bool case_sensitive = BoolArg(a, 2, "case_sensitive", false);
  std::string attr = AttributeArg(a, 3);
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(items.size())));
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) keyed.emplace_back(SortKey(v, attr, case_sensitive), v);
  LS_RETURN_IF_ERROR(StableSortByKey(&keyed, reverse));
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::Array(std::move(out));
}

Result<Value> MinMax(CallArgs& a, bool want_max) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
  bool case_sensitive = BoolArg(a, 1, "case_sensitive", false);
  std::string attr = AttributeArg(a, 2);
  if (items.empty()) return Value();
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    LS_ASSIGN_OR_RETURN(int c, PyCompare(SortKey(items[i], attr, case_sensitive),
                                         SortKey(items[best], attr, case_sensitive)));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

Result<Value> RoundFilter(CallArgs& a) {
  const Value& v = Arg(a, 0, "value");
  if (!v.is_number()) return InvalidArgument(std::string("round: expected a number, got ") + v.TypeName());
  const Value& p = Arg(a, 1, "precision");
  int64_t precision = (p.is_int() || p.is_bool()) ? std::clamp<int64_t>(p.int_value(), -300, 300) : 0;
  std::string method = a.Has(2, "method") ? ToPyString(Arg(a, 2, "method")) : "common";
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.number();
  double r;
  if (method == "common") {
    if (v.is_int() || v.is_bool()) {
      if (precision >= 0) return Value::Int(v.int_value());
    }
    if (precision >= 0 && precision <= 17 && std::isfinite(x)) {
      // Python's round(x, n) rounds the exact binary value (2.675 is 2.67499..., so 2.67), ties to even;
      // printf's correctly rounded "%.*f" does the same.
      char buf[400];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
      return Value::Float(std::strtod(buf, nullptr));
    }
    r = std::nearbyint(x * scale) / scale;
  } else if (method == "floor") {
    r = std::floor(x * scale) / scale;
  } else if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else {
    return InvalidArgument("round: method must be 'common', 'ceil' or 'floor'");
  }
  return Value::Float(r);
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// from_json (llama.cpp's minja extension, used by DeepSeek V3.2's template): JSON text to a value.
Result<Value> FromJsonFilter(Evaluator& ev, CallArgs& a) {
  const Value& v = Arg(a, 0, "value");
  if (!v.is_string())
    return InvalidArgument(std::string("from_json: expected a string, got ") + v.TypeName());
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(v.str().size())));
  // nlohmann's parser is iterative; Value::FromJson then rejects values past kMaxValueDepth.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(v.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("from_json: not valid JSON");
  return Value::FromJson(j);
}

// batch(linecount, fill_with=None): lists of `linecount` items; the last is padded when fill_with is given.
Result<Value> BatchFilter(Evaluator& ev, CallArgs& a) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
  const Value& count = Arg(a, 1, "linecount");
  if (!count.is_int() || count.int_value() <= 0)
    return InvalidArgument("batch: linecount must be a positive int");
  const Value& fill = Arg(a, 2, "fill_with");
  const size_t n = static_cast<size_t>(std::min<int64_t>(count.int_value(), 1 << 20));
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(items.size() + n)));
  std::vector<Value> out, cur;
  for (const Value& v : items) {
    cur.push_back(v);
    if (cur.size() == n) out.push_back(Value::Array(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (!fill.is_undefined() && !fill.is_none()) cur.resize(n, fill);
    out.push_back(Value::Array(std::move(cur)));
  }
  return Value::Array(std::move(out));
}

// slice(slices, fill_with=None): `slices` columns, the first (len % slices) one item longer (Jinja2's
// do_slice).
Result<Value> SliceFilter(Evaluator& ev, CallArgs& a) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
  const Value& count = Arg(a, 1, "slices");
  if (!count.is_int() || count.int_value() <= 0)
    return InvalidArgument("slice: slices must be a positive int");
  const Value& fill = Arg(a, 2, "fill_with");
  const size_t slices = static_cast<size_t>(std::min<int64_t>(count.int_value(), 1 << 20));
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(items.size() + slices)));
  const size_t per = items.size() / slices, with_extra = items.size() % slices;
  std::vector<Value> out;
  size_t offset = 0;
  for (size_t k = 0; k < slices; ++k) {
    const size_t start = offset + k * per;
    if (k < with_extra) ++offset;
    const size_t end = offset + (k + 1) * per;
    std::vector<Value> part(items.begin() + static_cast<ptrdiff_t>(start),
                            items.begin() + static_cast<ptrdiff_t>(end));
    if (!fill.is_undefined() && !fill.is_none() && k >= with_extra) part.push_back(fill);
    out.push_back(Value::Array(std::move(part)));
  }
  return Value::Array(std::move(out));
}

// groupby(attribute, default=None, case_sensitive=False): (grouper, items) tuples sorted by grouper.
Result<Value> GroupByFilter(Evaluator& ev, CallArgs& a) {
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
  const Value& attr_v = Arg(a, 1, "attribute");
  if (attr_v.is_undefined()) return InvalidArgument("groupby: needs an attribute");
  const std::string attr = ToPyString(attr_v);
  const Value& def = Arg(a, 2, "default");
  const bool case_sensitive = BoolArg(a, 3, "case_sensitive", false);
  LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(items.size())));
  auto raw_key = [&](const Value& v) {
    Value k = GetAttrPath(v, attr);
    return k.is_undefined() && !def.is_undefined() ? def : k;
  };
  std::vector<std::pair<Value, Value>> keyed;  // (comparison key, item)
  for (const Value& v : items) {
    Value k = raw_key(v);
    if (!case_sensitive && k.is_string()) k = Value::String(text::Lower(k.str()));
    keyed.emplace_back(k, v);
  }
  LS_RETURN_IF_ERROR(StableSortByKey(&keyed, /*reverse=*/false));
  std::vector<Value> out;
  for (size_t i = 0; i < keyed.size();) {
    size_t j = i;
    std::vector<Value> group;
    while (j < keyed.size() && PyEquals(keyed[j].first, keyed[i].first)) group.push_back(keyed[j++].second);
    // The grouper is the first item's own value (not the lower-cased comparison key), as Jinja2.
    out.push_back(
        Value::Array({raw_key(keyed[i].second), Value::Array(std::move(group))}, /*is_tuple=*/true));
    i = j;
  }
  return Value::Array(std::move(out));
}

// truncate(length=255, killwords=False, end='...', leeway=5), lengths in code points (Jinja2's do_truncate).
Result<Value> TruncateFilter(CallArgs& a) {
  const std::string s = ToPyString(Arg(a, 0, "s"));
  const Value& len_v = Arg(a, 1, "length");
  const int64_t length = len_v.is_int() ? len_v.int_value() : 255;
  const bool killwords = BoolArg(a, 2, "killwords", false);
  const std::string end = a.Has(3, "end") ? ToPyString(Arg(a, 3, "end")) : "...";
  const Value& leeway_v = Arg(a, 4, "leeway");
  const int64_t leeway = leeway_v.is_int() ? leeway_v.int_value() : 5;
  const int64_t end_len = static_cast<int64_t>(Utf8Length(end));
  if (length < end_len) return InvalidArgument("truncate: expected length >= " + std::to_string(end_len));
  if (leeway < 0) return InvalidArgument("truncate: expected leeway >= 0");
  const std::vector<std::string_view> cs = Utf8Chars(s);
  if (static_cast<int64_t>(cs.size()) <= length + leeway) return Value::String(s);
  std::string head;
  for (int64_t i = 0; i < length - end_len; ++i) head.append(cs[static_cast<size_t>(i)]);
  if (!killwords) {
    size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Value::String(head + end);
}

// Python str.center(width): the extra space goes left when the margin and width are both odd.
Result<Value> CenterFilter(CallArgs& a) {
  const std::string s = ToPyString(Arg(a, 0, "value"));
  const Value& w = Arg(a, 1, "width");
  const int64_t width = w.is_int() ? std::min<int64_t>(w.int_value(), 1 << 16) : 80;
  const int64_t n = static_cast<int64_t>(Utf8Length(s));
  if (width <= n) return Value::String(s);
  const int64_t marg = width - n, left = marg / 2 + (marg & width & 1);
  return Value::String(std::string(static_cast<size_t>(left), ' ') + s +
                       std::string(static_cast<size_t>(marg - left), ' '));
}

// striptags: drop <!-- comments --> and <tags>, collapse whitespace, unescape the basic entities.
Result<Value> StripTagsFilter(CallArgs& a) {
  const std::string s = ToPyString(Arg(a, 0, "value"));
  std::string stripped;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i + 4);
      if (e != std::string::npos) {
        i = e + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      size_t e = s.find('>', i + 1);
      if (e != std::string::npos) {
        i = e + 1;
        continue;
      }
    }
    stripped += s[i++];
  }
  std::string joined;
  for (const std::string& w : text::SplitWhitespace(stripped, -1)) joined += (joined.empty() ? "" : " ") + w;
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities) joined = text::Replace(joined, from, to, -1);
  return Value::String(std::move(joined));
}

const std::map<std::string, FilterFn>& Filters() {
  static const auto* filters = new std::map<std::string, FilterFn>{
      {"abs",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "x");
         if (v.is_float()) return Value::Float(std::fabs(v.number()));
         if (v.is_int() || v.is_bool()) {
           if (v.int_value() == INT64_MIN) return InvalidArgument("integer overflow");
           return Value::Int(std::llabs(v.int_value()));
         }
         return InvalidArgument(std::string("bad operand type for abs(): '") + v.TypeName() + "'");
       }},
      {"attr",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         // getattr() only: dict keys are not attributes.
         const Value& obj = Arg(a, 0, "obj");
         std::string name = ToPyString(Arg(a, 1, "name"));
         if (obj.is_namespace() || IsMethod(obj, name)) return GetAttr(obj, name);
         return Value();
       }},
      {"batch", BatchFilter},
      {"capitalize",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         return Value::String(text::Capitalize(ToPyString(Arg(a, 0, "s"))));
       }},
      {"center", [](Evaluator&, CallArgs& a) { return CenterFilter(a); }},
      {"count", [](Evaluator&, CallArgs& a) { return Length(Arg(a, 0, "obj")); }},
      {"default",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         bool boolean = BoolArg(a, 2, "boolean", false);
         if (v.is_undefined() || (boolean && !v.Truthy())) {
           const Value& d = Arg(a, 1, "default_value");
           return d.is_undefined() ? Value::String("") : d;
         }
         return v;
       }},
      {"dictsort",
       [](Evaluator& ev, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         if (!v.is_object()) return InvalidArgument("dictsort: expected a dict");
         bool case_sensitive = BoolArg(a, 1, "case_sensitive", false);
         std::string by = a.Has(2, "by") ? ToPyString(Arg(a, 2, "by")) : "key";
         bool reverse = BoolArg(a, 3, "reverse", false);
         std::vector<Value> pairs;
         for (const auto& [k, item] : v.object().items)
           pairs.push_back(Value::Array({Value::String(k), item}, true));
         CallArgs sargs;
         sargs.positional = {Value::Array(pairs), Value::Bool(reverse), Value::Bool(case_sensitive),
                             Value::String(by == "value" ? "1" : "0")};
         return SortFilter(ev, sargs);
       }},
      {"escape",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         return Value::String(HtmlEscape(ToPyString(Arg(a, 0, "s"))));
       }},
      {"first",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "seq")));
         return items.empty() ? Value() : items.front();
       }},
      {"float",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         Value def = a.Has(1, "default") ? Arg(a, 1, "default") : Value::Float(0.0);
         if (v.is_number()) return Value::Float(v.number());
         Value out;
         if (v.is_string() && ParseNumber(v.str(), false, &out)) return out;
         return def;
       }},
      {"from_json", FromJsonFilter},
      {"format",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         std::vector<Value> rest(a.positional.begin() + std::min<size_t>(1, a.positional.size()),
                                 a.positional.end());
         if (!a.keyword.empty())
           return PercentFormat(ToPyString(Arg(a, 0, "value")), Value::Object(a.keyword));
         return PercentFormat(ToPyString(Arg(a, 0, "value")), Value::Array(std::move(rest), true));
       }},
      {"groupby", GroupByFilter},
      {"indent", [](Evaluator&, CallArgs& a) { return Indent(a); }},
      {"int",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         Value def = a.Has(1, "default") ? Arg(a, 1, "default") : Value::Int(0);
         if (v.is_int() || v.is_bool()) return Value::Int(v.int_value());
         if (v.is_float()) {
           double d = v.number();
           if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return def;
           return Value::Int(static_cast<int64_t>(d));
         }
         Value out;
         if (v.is_string() && ParseNumber(v.str(), true, &out)) return out;
         return def;
       }},
      {"items",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         if (v.is_undefined()) return Value::Array({});
         if (!v.is_object()) return InvalidArgument("items: expected a dict");
         std::vector<Value> items;
         for (const auto& [k, item] : v.object().items)
           items.push_back(Value::Array({Value::String(k), item}, true));
         return Value::Array(std::move(items));
       }},
      {"join",
       [](Evaluator& ev, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
         std::string sep = a.Has(1, "d") ? ToPyString(Arg(a, 1, "d")) : "";
         std::string attr = AttributeArg(a, 2);
         std::string out;
         for (size_t i = 0; i < items.size(); ++i) {
           if (i) out += sep;
           out += ToPyString(attr.empty() ? items[i] : GetAttrPath(items[i], attr));
           if (out.size() > ev.limits().max_output_bytes) return ResourceExhausted("join result too long");
         }
         LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(out.size())));
         return Value::String(std::move(out));
       }},
      {"last",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "seq")));
         return items.empty() ? Value() : items.back();
       }},
      {"length", [](Evaluator&, CallArgs& a) { return Length(Arg(a, 0, "obj")); }},
      {"list",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
         return Value::Array(std::move(items));
       }},
      {"lower",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         return Value::String(text::Lower(ToPyString(Arg(a, 0, "s"))));
       }},
      {"map", MapFilter},
      {"max", [](Evaluator&, CallArgs& a) { return MinMax(a, true); }},
      {"min", [](Evaluator&, CallArgs& a) { return MinMax(a, false); }},
      {"reject", [](Evaluator& ev, CallArgs& a) { return SelectFilter(ev, a, false, false); }},
      {"rejectattr", [](Evaluator& ev, CallArgs& a) { return SelectFilter(ev, a, true, false); }},
      {"replace",
       [](Evaluator& ev, CallArgs& a) -> Result<Value> {
         std::string s = ToPyString(Arg(a, 0, "s"));
         std::string old = ToPyString(Arg(a, 1, "old"));
         std::string repl = ToPyString(Arg(a, 2, "new"));
         const Value& count = Arg(a, 3, "count");
         int64_t n = (count.is_int() || count.is_bool()) ? count.int_value() : -1;
         // Bound the result before building it: each replacement adds at most repl.size() bytes.
         size_t worst = s.size() + (Utf8Length(s) + 1) * repl.size();
         if (worst > ev.limits().max_output_bytes && repl.size() > old.size()) {
           std::string r = text::Replace(s, old, repl, n);
           if (r.size() > ev.limits().max_output_bytes) return ResourceExhausted("replace result too long");
           return Value::String(std::move(r));
         }
         std::string r = text::Replace(s, old, repl, n);
         LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(r.size())));
         return Value::String(std::move(r));
       }},
      {"reverse",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& v = Arg(a, 0, "value");
         if (v.is_string()) {
           std::vector<std::string_view> cs = Utf8Chars(v.str());
           std::string out;
           for (auto it = cs.rbegin(); it != cs.rend(); ++it) out.append(*it);
           return Value::String(std::move(out));
         }
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
         std::reverse(items.begin(), items.end());
         return Value::Array(std::move(items));
       }},
      {"round", [](Evaluator&, CallArgs& a) { return RoundFilter(a); }},
      {"safe", [](Evaluator&, CallArgs& a) -> Result<Value> { return Arg(a, 0, "value"); }},
      {"select", [](Evaluator& ev, CallArgs& a) { return SelectFilter(ev, a, false, true); }},
      {"selectattr", [](Evaluator& ev, CallArgs& a) { return SelectFilter(ev, a, true, true); }},
      {"slice", SliceFilter},
      {"sort", SortFilter},
      {"string",
       [](Evaluator&, CallArgs& a) -> Result<Value> { return Value::String(ToPyString(Arg(a, 0, "s"))); }},
      {"striptags", [](Evaluator&, CallArgs& a) { return StripTagsFilter(a); }},
      {"sum",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "iterable")));
         std::string attr = AttributeArg(a, 1);
         Value total = a.Has(2, "start") ? Arg(a, 2, "start") : Value::Int(0);
         for (const Value& item : items) {
           Value v = attr.empty() ? item : GetAttrPath(item, attr);
           if (!v.is_number() || !total.is_number()) return InvalidArgument("sum: items must be numbers");
           if (v.is_float() || total.is_float()) {
             total = Value::Float(total.number() + v.number());
           } else {
             int64_t r;
             if (__builtin_add_overflow(total.int_value(), v.int_value(), &r))
               return InvalidArgument("integer overflow");
             total = Value::Int(r);
           }
         }
         return total;
       }},
      {"title",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         return Value::String(text::JinjaTitle(ToPyString(Arg(a, 0, "s"))));
       }},
      {"tojson", ToJsonFilter},
      {"truncate", [](Evaluator&, CallArgs& a) { return TruncateFilter(a); }},
      {"trim",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         const Value& chars = Arg(a, 1, "chars");
         std::string cs = chars.is_string() ? chars.str() : "";
         return Value::String(
             text::Strip(ToPyString(Arg(a, 0, "value")), chars.is_string() ? &cs : nullptr, true, true));
       }},
      {"unique",
       [](Evaluator& ev, CallArgs& a) -> Result<Value> {
         LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(Arg(a, 0, "value")));
         bool case_sensitive = BoolArg(a, 1, "case_sensitive", false);
         std::string attr = AttributeArg(a, 2);
         LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(items.size())));
         std::vector<Value> out, seen;
         for (const Value& v : items) {
           Value key = SortKey(v, attr, case_sensitive);
           bool dup = false;
           for (const Value& s : seen) dup = dup || PyEquals(s, key);
           if (dup) continue;
           LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(seen.size())));
           seen.push_back(key);
           out.push_back(v);
         }
         return Value::Array(std::move(out));
       }},
      {"upper",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         return Value::String(text::Upper(ToPyString(Arg(a, 0, "s"))));
       }},
      {"wordcount",
       [](Evaluator&, CallArgs& a) -> Result<Value> {
         std::string s = ToPyString(Arg(a, 0, "s"));
         int64_t n = 0;
         bool in_word = false;
         for (unsigned char c : s) {
           bool w = isalnum(c) || c == '_' || c >= 0x80;
           if (w && !in_word) ++n;
           in_word = w;
         }
         return Value::Int(n);
       }},
  };
  return *filters;
}

const std::map<std::string, std::string>& Aliases() {
  static const auto* aliases =
      new std::map<std::string, std::string>{{"d", "default"}, {"e", "escape"}, {"forceescape", "escape"}};
  return *aliases;
}

}  // namespace

bool HasFilter(const std::string& name) { return Filters().count(name) > 0 || Aliases().count(name) > 0; }

Result<Value> ApplyFilter(Evaluator& ev, const std::string& name, CallArgs& args) {
  auto alias = Aliases().find(name);
  const std::string& real = alias == Aliases().end() ? name : alias->second;
  auto it = Filters().find(real);
  if (it == Filters().end()) return InvalidArgument("unknown filter '" + name + "'");
  if (args.positional.empty()) args.positional.emplace_back();
  if (ev.limits().none_filters_as_empty && args.positional[0].is_none()) {
    static const std::set<std::string> kSequenceFilters = {"select", "reject", "selectattr", "rejectattr",
                                                           "map",    "unique", "items"};
    if (kSequenceFilters.count(real) > 0) return Value::Array(std::vector<Value>{});
  }
  return it->second(ev, args);
}

}  // namespace lazyslot::jinja
