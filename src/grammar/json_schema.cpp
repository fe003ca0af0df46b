// JsonSchemaToGbnf / JsonObjectGbnf: a JSON schema (2020-12 keywords, with draft-4/7 spellings where they
// are unambiguous) as GBNF whose every sentence validates against the schema. Unsupported keywords are
// errors, never ignored. Structure after llama.cpp's json-schema-to-grammar (properties in schema order,
// bounded whitespace); the rules and code are our own.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/utf8.h"
#include "grammar/json_schema_internal.h"

namespace lazyslot::grammar {
namespace {

using J = nlohmann::ordered_json;

using schema::RuleTable;

const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"title",    "description", "$schema",  "$id",
                                          "$comment", "default",     "examples", "deprecated",
                                          "readOnly", "writeOnly",   "$defs",    "definitions"};
  return k;
}

const std::set<std::string>& Constraints() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
  return k;
}

std::string Where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

std::string Child(const std::string& ptr, const std::string& key) {
  std::string k;
  for (char c : key) k += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return ptr + "/" + k;
}

Status Bad(const std::string& what, const std::string& ptr) {
  return InvalidArgument("json_schema: " + what + " at " + Where(ptr));
}

bool IsAnnotation(const std::string& k) { return Annotations().count(k) > 0; }

// The JSON types a schema's generated values have (ours) and the types it accepts (the standard's).
using Types = std::set<std::string>;
const Types kAllTypes = {"object", "array", "string", "number", "boolean", "null"};

std::string TypeOf(const J& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  return "null";
}

class Converter {
 public:
  Converter(const J& root, std::string prefix) : root_(root), rules_(std::move(prefix)) {}

  Result<std::string> Run() {
    LS_ASSIGN_OR_RETURN(std::string start, Visit(root_, "", "root", 0));
    if (start.empty()) return Bad("the schema can never be satisfied", "");
    return rules_.Text(start);
  }

 private:
  std::string Space() { return rules_.Primitive("space"); }

  Result<const J*> Resolve(const J& ref, const std::string& ptr, std::string* pointer) {
    if (!ref.is_string()) return Bad("'$ref' must be a string", ptr);
    std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') return Bad("remote $ref '" + r + "' is unsupported", ptr);
    *pointer = r.substr(1);
    const J* cur = &root_;
    size_t i = 1;
    if (!pointer->empty() && (*pointer)[0] != '/') return Bad("$ref '" + r + "' is not a JSON pointer", ptr);
    while (i <= pointer->size() && !pointer->empty()) {
      size_t j = pointer->find('/', i);
      if (j == std::string::npos) j = pointer->size();
      std::string seg;
      for (size_t k = i; k < j; ++k) {
        if ((*pointer)[k] == '~' && k + 1 < j) {
          seg += (*pointer)[k + 1] == '1' ? '/' : '~';
          ++k;
        } else {
          seg += (*pointer)[k];
        }
      }
      if (cur->is_object() && cur->contains(seg)) {
        cur = &(*cur)[seg];
      } else if (cur->is_array() && !seg.empty() &&
                 seg.find_first_not_of("0123456789") == std::string::npos && seg.size() < 9 &&
                 std::stoul(seg) < cur->size()) {
        cur = &(*cur)[std::stoul(seg)];
      } else {
        return Bad("$ref '" + r + "' points to nothing", ptr);
      }
      i = j + 1;
    }
    return cur;
  }

  Result<std::string> Ref(const J& ref, const std::string& ptr, int depth) {
    std::string pointer;
    LS_ASSIGN_OR_RETURN(const J* target, Resolve(ref, ptr, &pointer));
    auto it = ref_rules_.find(pointer);
    if (it != ref_rules_.end()) return it->second;
    std::string hint =
        "ref" + pointer.substr(pointer.rfind('/') == std::string::npos ? 0 : pointer.rfind('/'));
    std::string name = rules_.Reserve(hint);
    ref_rules_[pointer] = name;
    LS_ASSIGN_OR_RETURN(std::string body, Visit(*target, pointer, hint, depth + 1));
    if (body.empty()) return Bad("$ref '" + ref.get<std::string>() + "' can never be satisfied", ptr);
    rules_.Define(name, body);
    return name;
  }

  static Result<uint64_t> Count(const J& s, const char* key, const std::string& ptr) {
    const J& v = s[key];
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>() &&
        v.get<double>() < 1e15) {
      return static_cast<uint64_t>(v.get<double>());
    }
    return Bad(std::string("'") + key + "' must be a non-negative integer", ptr);
  }

  static Status CheckValues(const J& s, const std::string& ptr) {
    for (const auto& [k, v] : s.items()) {
      std::string p = Child(ptr, k);
      if (k == "type") {
        auto ok = [](const J& t) {
          return t.is_string() && kAllTypes.count(t.get<std::string>()) + (t == "integer") > 0;
        };
        if (v.is_array()) {
          if (v.empty()) return Bad("'type' must not be an empty array", p);
          for (const J& t : v)
            if (!ok(t)) return Bad("unknown type " + t.dump(), p);
        } else if (!ok(v)) {
          return Bad("unknown type " + v.dump(), p);
        }
      } else if (k == "enum" && !v.is_array()) {
        return Bad("'enum' must be an array", p);
      } else if ((k == "anyOf" || k == "oneOf" || k == "allOf") && (!v.is_array() || v.empty())) {
        return Bad("'" + k + "' must be a non-empty array", p);
      } else if (k == "required") {
        if (!v.is_array()) return Bad("'required' must be an array of strings", p);
        for (const J& r : v)
          if (!r.is_string()) return Bad("'required' must be an array of strings", p);
      } else if ((k == "properties" || k == "$defs" || k == "definitions") && !v.is_object()) {
        return Bad("'" + k + "' must be an object", p);
      } else if (k == "prefixItems" && !v.is_array()) {
        return Bad("'prefixItems' must be an array", p);
      } else if ((k == "additionalProperties" || k == "items") && !v.is_object() && !v.is_boolean() &&
                 !(k == "items" && v.is_array())) {
        return Bad("'" + k + "' must be a schema", p);
      } else if (k == "minItems" || k == "maxItems" || k == "minLength" || k == "maxLength") {
        LS_RETURN_IF_ERROR(Count(s, k.c_str(), p).status());
      } else if ((k == "pattern" || k == "format") && !v.is_string()) {
        return Bad("'" + k + "' must be a string", p);
      } else if ((k == "minimum" || k == "maximum") && !v.is_number()) {
        return Bad("'" + k + "' must be a number", p);
      } else if ((k == "exclusiveMinimum" || k == "exclusiveMaximum") && !v.is_number() && !v.is_boolean()) {
        return Bad("'" + k + "' must be a number", p);
      }
    }
    return Status::Ok();
  }

  // The types this schema's values are generated as (absent "type": inferred from the keywords present).
  static Types GenTypes(const J& s) {
    if (s.is_boolean()) return s.get<bool>() ? kAllTypes : Types{};
    Types t;
    if (s.contains("type")) {
      const J& v = s["type"];
      for (const J& x : v.is_array() ? v : J::array({v}))
        if (x.is_string()) t.insert(x == "integer" ? "number" : x.get<std::string>());
      return t;
    }
    for (const char* k : {"properties", "required", "additionalProperties"})
      if (s.contains(k)) t.insert("object");
    for (const char* k : {"items", "prefixItems", "minItems", "maxItems"})
      if (s.contains(k)) t.insert("array");
    for (const char* k : {"minLength", "maxLength", "pattern", "format"})
      if (s.contains(k)) t.insert("string");
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(k)) t.insert("number");
    return t.empty() ? kAllTypes : t;
  }

  Result<std::string> Visit(const J& s, const std::string& ptr, const std::string& hint, int depth) {
    if (depth > 128) return Bad("schema nested deeper than 128 levels", ptr);
    if (s.is_boolean()) return s.get<bool>() ? rules_.Primitive("value") : std::string();
    if (!s.is_object()) return Bad("a schema must be an object or a boolean", ptr);
    for (const auto& [k, v] : s.items()) {
      if (IsAnnotation(k) || Constraints().count(k)) continue;
      if (k == "uniqueItems" && v == false) continue;  // no constraint
      return Bad("unsupported keyword '" + k + "'", ptr);
    }
    LS_RETURN_IF_ERROR(CheckValues(s, ptr));
    auto only = [&](std::initializer_list<const char*> allowed, const char* what) -> Status {
      for (const auto& item : s.items()) {
        const std::string& k = item.key();  // a structured binding: clang 14 (the fuzz build) cannot capture it
        if (IsAnnotation(k) || k == what || k == "uniqueItems") continue;
        if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }) !=
            allowed.end())
          continue;
        return Bad("keyword '" + k + "' beside '" + what + "' is unsupported", ptr);
      }
      return Status::Ok();
    };
    if (s.contains("$ref")) {
      LS_RETURN_IF_ERROR(only({}, "$ref"));
      return Ref(s["$ref"], ptr, depth);
    }
    if (s.contains("allOf")) {
      LS_ASSIGN_OR_RETURN(J merged, MergeAllOf(s, ptr, 0));
      return Visit(merged, ptr, hint, depth + 1);
    }
    for (const char* comb : {"anyOf", "oneOf"}) {
      if (!s.contains(comb)) continue;
      LS_RETURN_IF_ERROR(only({}, comb));
      if (std::string(comb) == "oneOf") LS_RETURN_IF_ERROR(CheckDisjoint(s[comb], Child(ptr, comb)));
      std::string alts;
      for (size_t i = 0; i < s[comb].size(); ++i) {
        LS_ASSIGN_OR_RETURN(std::string e, Visit(s[comb][i], Child(Child(ptr, comb), std::to_string(i)),
                                                 hint + "-" + std::to_string(i), depth + 1));
        if (!e.empty()) alts += (alts.empty() ? "" : " | ") + e;
      }
      return alts.empty() ? alts : rules_.Add(hint, alts);
    }
    if (s.contains("const") || s.contains("enum")) {
      LS_RETURN_IF_ERROR(only({"type", "const", "enum"}, s.contains("const") ? "const" : "enum"));
      std::vector<J> values;
      if (s.contains("const")) values.push_back(s["const"]);
      if (s.contains("enum")) {
        std::vector<J> e(s["enum"].begin(), s["enum"].end());
        if (s.contains("const")) {  // both: the const, if the enum has it
          if (std::find(e.begin(), e.end(), s["const"]) == e.end()) values.clear();
        } else {
          values = e;
        }
      }
      // With "type": only the values of those types ("integer": numbers with no fraction).
      auto type_ok = [&](const J& v) {
        if (!s.contains("type")) return true;
        const J& t = s["type"];
        for (const J& x : t.is_array() ? t : J::array({t})) {
          if (x == "integer" && v.is_number() &&
              (v.is_number_integer() || std::floor(v.get<double>()) == v.get<double>())) {
            return true;
          }
          if (x != "integer" && x == TypeOf(v)) return true;
        }
        return false;
      };
      std::string alts;
      for (const J& v : values) {
        if (type_ok(v)) alts += (alts.empty() ? "" : " | ") + GbnfLiteral(v.dump()) + " " + Space();
      }
      return alts.empty() ? alts : rules_.Add(hint, alts);
    }
    Types types;
    bool integer = false;
    if (s.contains("type")) {
      const J& v = s["type"];
      for (const J& x : v.is_array() ? v : J::array({v})) {
        if (x == "integer") {
          integer = true;
        } else {
          types.insert(x.get<std::string>());
        }
      }
      if (integer && types.count("number")) integer = false;  // number covers integers
      if (integer) types.insert("integer");
    } else {
      types = GenTypes(s);
    }
    std::string alts;
    for (const std::string& t : types) {
      std::string e;
      if (t == "object") {
        LS_ASSIGN_OR_RETURN(e, Object(s, ptr, hint, depth));
      } else if (t == "array") {
        LS_ASSIGN_OR_RETURN(e, Array(s, ptr, hint, depth));
      } else if (t == "string") {
        LS_ASSIGN_OR_RETURN(e, String(s, ptr, hint));
      } else if (t == "number" || t == "integer") {
        LS_ASSIGN_OR_RETURN(e, Number(s, ptr, t == "integer"));
      } else {
        e = rules_.Primitive(t);
      }
      if (!e.empty()) alts += (alts.empty() ? "" : " | ") + e;
    }
    if (alts.empty() || types.size() == 1) return alts;
    return rules_.Add(hint, alts);
  }

  Result<J> MergeAllOf(const J& s, const std::string& ptr, int depth) {
    if (depth > 16) return Bad("'allOf' nested deeper than 16 levels", ptr);
    std::vector<std::pair<const J*, std::string>> parts{{&s, ptr}};
    J storage = J::array();
    for (size_t i = 0; i < s["allOf"].size(); ++i) {
      std::string p = Child(Child(ptr, "allOf"), std::to_string(i));
      const J* part = &s["allOf"][i];
      for (int hops = 0; part->is_object() && part->contains("$ref"); ++hops) {
        if (hops > 16) return Bad("'$ref' chain longer than 16", p);
        std::string pointer;
        LS_ASSIGN_OR_RETURN(part, Resolve((*part)["$ref"], p, &pointer));
        p = pointer;
      }
      if (part->is_object() && part->contains("allOf")) {
        LS_ASSIGN_OR_RETURN(J sub, MergeAllOf(*part, p, depth + 1));
        storage.push_back(std::move(sub));
        part = nullptr;
      }
      parts.push_back({part, p});
    }
    size_t next_stored = 0;
    J merged = J::object();
    merged["type"] = "object";
    merged["properties"] = J::object();
    J required = J::array();
    for (auto& [part, p] : parts) {
      if (part == nullptr) part = &storage[next_stored++];
      if (part->is_boolean() && part->get<bool>()) continue;
      if (!part->is_object()) return Bad("'allOf' is supported only for object schemas", p);
      for (const auto& [k, v] : part->items()) {
        if (IsAnnotation(k) || k == "allOf") continue;
        if (k == "type" && (v == "object" || v == J::array({"object"}))) continue;
        if (k == "properties" && v.is_object()) {
          for (const auto& [name, sub] : v.items()) {
            if (merged["properties"].contains(name) && merged["properties"][name] != sub) {
              return Bad("property '" + name +
                             "' in several 'allOf' schemas (with different schemas) is unsupported",
                         ptr);
            }
            merged["properties"][name] = sub;
          }
          continue;
        }
        if (k == "required" && v.is_array()) {
          for (const J& r : v)
            if (std::find(required.begin(), required.end(), r) == required.end()) required.push_back(r);
          continue;
        }
        return Bad(
            "'allOf' is supported only for object schemas with properties and required (not '" + k + "')", p);
      }
    }
    merged["required"] = required;
    return merged;
  }

  // oneOf is generated as anyOf, so it is accepted only when no value can match two branches.
  Status CheckDisjoint(const J& branches, const std::string& ptr) {
    std::vector<const J*> bs;
    for (size_t i = 0; i < branches.size(); ++i) {
      const J* b = &branches[i];
      for (int hops = 0; b->is_object() && b->contains("$ref") && hops < 16; ++hops) {
        std::string pointer;
        LS_ASSIGN_OR_RETURN(b, Resolve((*b)["$ref"], Child(ptr, std::to_string(i)), &pointer));
      }
      bs.push_back(b);
    }
    for (size_t i = 0; i < bs.size(); ++i) {
      for (size_t j = i + 1; j < bs.size(); ++j) {
        if (!Excludes(*bs[i], *bs[j]) || !Excludes(*bs[j], *bs[i])) {
          return Bad("'oneOf' branches " + std::to_string(i) + " and " + std::to_string(j) +
                         " may match the same value (use anyOf, or tell them apart by type, const/enum or "
                         "required properties)",
                     ptr);
        }
      }
    }
    return Status::Ok();
  }

  static std::vector<J> Values(const J& s) {
    if (!s.is_object()) return {};
    if (s.contains("const")) return {s["const"]};
    if (s.contains("enum") && s["enum"].is_array()) return std::vector<J>(s["enum"].begin(), s["enum"].end());
    return {};
  }
  static bool Closed(const J& s) {  // our generation emits only declared properties
    if (!s.contains("properties") || s["properties"].empty())
      return s.contains("additionalProperties") && s["additionalProperties"] == false;
    return !s.contains("additionalProperties") || s["additionalProperties"] == false;
  }
  static bool Forbids(const J& s, const std::string& key) {  // the standard: s rejects objects with `key`
    if (s.contains("properties") && s["properties"].contains(key)) return s["properties"][key] == false;
    return s.contains("additionalProperties") && s["additionalProperties"] == false;
  }
  static bool Requires(const J& s, const std::string& key) {
    if (!s.contains("required")) return false;
    for (const J& r : s["required"])
      if (r == key) return true;
    return false;
  }

  // True when no value generated for `a` validates against `b` (a conservative check).
  static bool Excludes(const J& a, const J& b) {
    if (!a.is_object() || !b.is_object()) return a == false;
    Types ga = GenTypes(a);
    Types ab = b.contains("type") ? GenTypes(b) : kAllTypes;
    if (a.contains("const") || a.contains("enum")) {
      std::vector<J> va = Values(a), vb = Values(b);
      bool all = true;
      for (const J& v : va) {
        bool rejected = !ab.count(TypeOf(v)) || ((b.contains("const") || b.contains("enum")) &&
                                                 std::find(vb.begin(), vb.end(), v) == vb.end());
        all = all && rejected;
      }
      return all;
    }
    bool disjoint_types = true;
    for (const std::string& t : ga) disjoint_types = disjoint_types && !ab.count(t);
    if (disjoint_types) return true;
    if (ga != Types{"object"} || a.contains("anyOf") || a.contains("oneOf") || a.contains("allOf"))
      return false;
    if (b.contains("required")) {
      for (const J& q : b["required"]) {
        std::string key = q.get<std::string>();
        bool a_emits =
            !Closed(a) ||
            (a.contains("properties") && a["properties"].contains(key) && a["properties"][key] != false) ||
            Requires(a, key);
        if (!a_emits) return true;
      }
    }
    if (a.contains("required")) {
      for (const J& q : a["required"]) {
        std::string key = q.get<std::string>();
        if (Forbids(b, key)) return true;
        if (!Requires(b, key) || !a.contains("properties") || !b.contains("properties")) continue;
        const J& pa = a["properties"].value(key, J());
        const J& pb = b["properties"].value(key, J());
        std::vector<J> va = Values(pa), vb = Values(pb);
        if (va.empty() || vb.empty()) continue;
        bool disjoint = std::none_of(
            va.begin(), va.end(), [&](const J& v) { return std::find(vb.begin(), vb.end(), v) != vb.end(); });
        if (disjoint) return true;
      }
    }
    return false;
  }

  Result<std::string> Object(const J& s, const std::string& ptr, const std::string& hint, int depth) {
    struct Prop {
      std::string name, expr;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (s.contains("required"))
      for (const J& r : s["required"]) required.insert(r.get<std::string>());
    std::set<std::string> declared;
    if (s.contains("properties")) {
      for (const auto& [name, sub] : s["properties"].items()) {
        declared.insert(name);
        std::string p = Child(Child(ptr, "properties"), name);
        LS_ASSIGN_OR_RETURN(std::string e, Visit(sub, p, hint + "-" + name, depth + 1));
        bool req = required.count(name) > 0;
        if (e.empty()) {
          if (req) return Bad("required property '" + name + "' can never be satisfied", p);
          continue;
        }
        props.push_back({name, e, req});
      }
    }
    if (s.contains("required")) {
      for (const J& r : s["required"]) {
        std::string name = r.get<std::string>();
        if (declared.count(name)) continue;
        declared.insert(name);
        props.push_back({name, rules_.Primitive("value"), true});
      }
    }
    // Extra properties: as the schema says; absent, allowed only when no properties are listed (llama.cpp).
    std::string extra;
    bool listed = s.contains("properties") && !s["properties"].empty();
    if (s.contains("additionalProperties")) {
      LS_ASSIGN_OR_RETURN(extra, Visit(s["additionalProperties"], Child(ptr, "additionalProperties"),
                                       hint + "-additional", depth + 1));
    } else if (!listed) {
      extra = rules_.Primitive("value");
    }
    const std::string sp = Space();
    std::string extra_kv;
    if (!extra.empty()) {
      std::string key =
          declared.empty() ? rules_.Primitive("string") : "\"\\\"\" " + NotKeys(declared, hint) + " " + sp;
      extra_kv = rules_.Add(hint + "-extra-kv", key + " \":\" " + sp + " " + extra);
    }
    auto join = [](const std::string& a, const std::string& b) {
      return a.empty() ? b : b.empty() ? a : a + " " + b;
    };
    std::string after = extra_kv.empty() ? "" : "(\",\" " + sp + " " + extra_kv + ")*";
    std::string first = extra_kv.empty() ? "" : "(" + extra_kv + " (\",\" " + sp + " " + extra_kv + ")*)?";
    for (size_t i = props.size(); i-- > 0;) {
      const Prop& pr = props[i];
      std::string kv = rules_.Add(hint + "-" + pr.name + "-kv",
                                  GbnfLiteral(J(pr.name).dump()) + " " + sp + " \":\" " + sp + " " + pr.expr);
      std::string a, f;
      if (pr.required) {
        a = join("\",\" " + sp + " " + kv, after);
        f = join(kv, after);
      } else {
        a = join("(\",\" " + sp + " " + kv + ")?", after);
        f = "(" + join(kv, after) + (first.empty() ? ")?" : " | " + first + ")");
      }
      after = rules_.Add(hint + "-after-" + std::to_string(i), a);
      first = rules_.Add(hint + "-from-" + std::to_string(i), f);
    }
    return rules_.Add(hint, "\"{\" " + sp + " " + join(first, "\"}\" " + sp));
  }

  // A key (after its opening quote, through its closing quote) that is none of `names`: a trie over the
  // names' code points. Extra keys use raw characters only, so an escaped spelling cannot collide.
  std::string NotKeys(const std::set<std::string>& names, const std::string& hint) {
    struct TrieNode {
      std::map<uint32_t, int> kids;
      bool terminal = false;
    };
    std::vector<TrieNode> t(1);
    for (const std::string& n : names) {
      int cur = 0;
      for (size_t i = 0; i < n.size();) {
        unsigned char c = static_cast<unsigned char>(n[i]);
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (int k = 1; k < len && i + k < n.size(); ++k) cp = (cp << 6) | (n[i + k] & 0x3F);
        i += static_cast<size_t>(len);
        if (cp < 0x20 || cp == '"' || cp == '\\') {  // never typed raw: no extra key can spell this name
          cur = -1;
          break;
        }
        auto it = t[cur].kids.find(cp);
        if (it == t[cur].kids.end()) {
          t.push_back({});
          it = t[cur].kids.emplace(cp, static_cast<int>(t.size()) - 1).first;
        }
        cur = it->second;
      }
      if (cur >= 0) t[cur].terminal = true;
    }
    std::string kchar = rules_.Add("key-char", "[^\"\\\\\\x00-\\x1F]");
    std::vector<std::string> names_of(t.size());
    for (size_t i = 0; i < t.size(); ++i) names_of[i] = rules_.Reserve(hint + "-key-" + std::to_string(i));
    for (size_t i = 0; i < t.size(); ++i) {
      std::vector<CpRange> used{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      std::string body;
      if (!t[i].terminal) body = "\"\\\"\"";
      for (const auto& [cp, kid] : t[i].kids) {
        body += (body.empty() ? "" : " | ") + GbnfLiteral(EncodeUtf8(cp)) + " " + names_of[kid];
        used.push_back({cp, cp});
      }
      body += (body.empty() ? "" : " | ") + schema::GbnfClass(ComplementSet(NormalizeSet(used))) + " " +
              kchar + "* \"\\\"\"";
      rules_.Define(names_of[i], body);
    }
    return names_of[0];
  }

  Result<std::string> Array(const J& s, const std::string& ptr, const std::string& hint, int depth) {
    std::vector<std::string> prefix;
    const J* tuple = s.contains("prefixItems")                        ? &s["prefixItems"]
                     : (s.contains("items") && s["items"].is_array()) ? &s["items"]
                                                                      : nullptr;
    const char* tuple_key = s.contains("prefixItems") ? "prefixItems" : "items";
    uint64_t m = s.contains("minItems") ? *Count(s, "minItems", ptr) : 0;
    uint64_t max = s.contains("maxItems") ? *Count(s, "maxItems", ptr) : ~uint64_t{0};
    if (tuple) {
      for (size_t i = 0; i < tuple->size(); ++i) {
        std::string p = Child(Child(ptr, tuple_key), std::to_string(i));
        LS_ASSIGN_OR_RETURN(std::string e, Visit((*tuple)[i], p, hint + "-" + std::to_string(i), depth + 1));
        if (e.empty()) {
          max = std::min<uint64_t>(max, i);
          break;
        }
        prefix.push_back(e);
      }
    }
    std::string rest;
    if (s.contains("items") && !s["items"].is_array()) {
      LS_ASSIGN_OR_RETURN(rest, Visit(s["items"], Child(ptr, "items"), hint + "-item", depth + 1));
    } else {
      rest = rules_.Primitive("value");
    }
    const uint64_t k = prefix.size();
    if (rest.empty()) max = std::min<uint64_t>(max, k);
    if (max < m) return Bad("no array satisfies minItems/maxItems/prefixItems/items", ptr);
    const uint64_t kInf = ~uint64_t{0};
    if (m > schema::kMaxCount || (max != kInf && max > schema::kMaxCount)) {
      return Bad("minItems/maxItems above " + std::to_string(schema::kMaxCount) + " is unsupported", ptr);
    }
    const std::string sp = Space();
    auto elem = [&](uint64_t p) { return p <= k ? prefix[p - 1] : rest; };
    std::function<std::string(uint64_t)> tail = [&](uint64_t p) -> std::string {
      if (p > max) return "";
      if (p <= k) {
        std::string item = "\",\" " + sp + " " + elem(p), t = tail(p + 1);
        std::string both = t.empty() ? item : item + " " + t;
        return p <= m ? both : "(" + both + ")?";
      }
      std::string rep = "(\",\" " + sp + " " + rest + ")", out;
      uint64_t mand = m >= p ? m - p + 1 : 0;
      if (mand > 0) out = rep + "{" + std::to_string(mand) + "}";
      if (max == kInf) {
        out += (out.empty() ? "" : " ") + rep + "*";
      } else {
        uint64_t opt = max - std::max(p - 1, m);
        if (opt > 0) out += (out.empty() ? "" : " ") + rep + "{0," + std::to_string(opt) + "}";
      }
      return out;
    };
    std::string body;
    if (max > 0) {
      std::string t = tail(2), e1 = elem(1);
      std::string both = t.empty() ? e1 : e1 + " " + t;
      body = m >= 1 ? both : "(" + both + ")?";
    }
    return rules_.Add(hint, "\"[\" " + sp + " " + (body.empty() ? "" : body + " ") + "\"]\" " + sp);
  }

  Result<std::string> String(const J& s, const std::string& ptr, const std::string& hint) {
    const std::string q = "\"\\\"\"", sp = Space();
    int kinds =
        s.contains("pattern") + s.contains("format") + (s.contains("minLength") || s.contains("maxLength"));
    if (kinds > 1)
      return Bad("combining 'pattern', 'format' and 'minLength'/'maxLength' is unsupported", ptr);
    if (s.contains("pattern")) {
      LS_ASSIGN_OR_RETURN(std::string body, schema::PatternToGbnf(s["pattern"].get<std::string>(), &rules_,
                                                                  Child(ptr, "pattern")));
      return rules_.Add(hint, q + " " + body + " " + q + " " + sp);
    }
    if (s.contains("format")) {
      LS_ASSIGN_OR_RETURN(std::string body, schema::FormatToGbnf(s["format"].get<std::string>(), &rules_,
                                                                 Child(ptr, "format")));
      return rules_.Add(hint, q + " " + body + " " + q + " " + sp);
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      uint64_t lo = s.contains("minLength") ? *Count(s, "minLength", ptr) : 0;
      bool bounded = s.contains("maxLength");
      uint64_t hi = bounded ? *Count(s, "maxLength", ptr) : 0;
      if (bounded && hi < lo) return Bad("no string satisfies minLength > maxLength", ptr);
      if (lo > schema::kMaxCount || hi > schema::kMaxCount) {
        return Bad("minLength/maxLength above " + std::to_string(schema::kMaxCount) + " is unsupported", ptr);
      }
      std::string rep = "{" + std::to_string(lo) + "," + (bounded ? std::to_string(hi) : "") + "}";
      return rules_.Add(hint, q + " " + rules_.Primitive("char") + rep + " " + q + " " + sp);
    }
    return rules_.Primitive("string");
  }

  static long double NumberOf(const J& v) {
    if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
    if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
    return static_cast<long double>(v.get<double>());
  }

  Result<std::string> Number(const J& s, const std::string& ptr, bool integer) {
    // The tightest lower and upper bounds, each possibly exclusive (draft 4: boolean exclusive*).
    struct Bound {
      long double v;
      bool excl;
      std::string key;
    };
    std::optional<Bound> lo, hi;
    auto tighten = [](std::optional<Bound>& cur, Bound b, bool lower) {
      if (!cur || (lower ? b.v > cur->v : b.v < cur->v) || (b.v == cur->v && b.excl)) cur = b;
    };
    bool draft4_min = s.contains("exclusiveMinimum") && s["exclusiveMinimum"] == true;
    bool draft4_max = s.contains("exclusiveMaximum") && s["exclusiveMaximum"] == true;
    if (s.contains("minimum")) tighten(lo, {NumberOf(s["minimum"]), draft4_min, "minimum"}, true);
    if (s.contains("maximum")) tighten(hi, {NumberOf(s["maximum"]), draft4_max, "maximum"}, false);
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number())
      tighten(lo, {NumberOf(s["exclusiveMinimum"]), true, "exclusiveMinimum"}, true);
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number())
      tighten(hi, {NumberOf(s["exclusiveMaximum"]), true, "exclusiveMaximum"}, false);
    if (!lo && !hi) return rules_.Primitive(integer ? "integer" : "number");
    const long double kLim = static_cast<long double>(schema::kBoundLimit);
    if ((lo && lo->v > kLim) || (hi && hi->v < -kLim)) {
      return Bad("'" + (lo && lo->v > kLim ? lo->key : hi->key) + "' beyond +-1e18 is unsupported", ptr);
    }
    const std::string sp = Space();
    if (integer) {
      int64_t l = -schema::kBoundLimit, h = schema::kBoundLimit;
      if (lo && lo->v >= -kLim) l = static_cast<int64_t>(lo->excl ? std::floor(lo->v) + 1 : std::ceil(lo->v));
      if (hi && hi->v <= kLim) h = static_cast<int64_t>(hi->excl ? std::ceil(hi->v) - 1 : std::floor(hi->v));
      if (l > h) return Bad("no integer satisfies the minimum/maximum", ptr);
      return rules_.Add("int-range", schema::IntegerRangeGbnf(l, h) + " " + sp);
    }
    for (const auto* b : {&lo, &hi}) {
      if (*b && std::floor((*b)->v) != (*b)->v) {
        return Bad("a non-integer '" + (*b)->key + "' for type 'number' is unsupported", ptr);
      }
    }
    std::optional<schema::NumberBound> l, h;  // beyond 1e18 on the loose side: clamped (a tighter bound)
    if (lo) l = schema::NumberBound{static_cast<int64_t>(std::max(lo->v, -kLim)), lo->v >= -kLim && lo->excl};
    if (hi) h = schema::NumberBound{static_cast<int64_t>(std::min(hi->v, kLim)), hi->v <= kLim && hi->excl};
    std::string e = schema::NumberRangeGbnf(l, h);
    if (e.empty()) return Bad("no number satisfies the minimum/maximum", ptr);
    return rules_.Add("number-range", e + " " + sp);
  }

  const J& root_;
  RuleTable rules_;
  std::map<std::string, std::string> ref_rules_;  // JSON pointer -> rule name
};

bool ValidPrefix(std::string_view p) {
  return !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

}  // namespace

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema, std::string_view prefix) {
  if (!ValidPrefix(prefix))
    return InvalidArgument("json_schema: rule prefix '" + std::string(prefix) + "' is not [a-zA-Z0-9-]+");
  std::string text;
  try {
    Converter c(schema, std::string(prefix));
    LS_ASSIGN_OR_RETURN(text, c.Run());
  } catch (const nlohmann::json::exception& e) {  // e.g. a string that is not valid UTF-8
    return InvalidArgument(std::string("json_schema: ") + e.what());
  }
  // Our own output must compile (e.g. a $ref cycle that consumes nothing is left recursion).
  auto compiled = ParseGbnf(text, prefix);
  if (!compiled.ok())
    return InvalidArgument("json_schema: the schema gives an invalid grammar: " +
                           compiled.status().message());
  return text;
}

std::string JsonObjectGbnf(std::string_view prefix) {
  std::string p;
  for (char c : prefix) {
    p += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') ? c : '-';
  }
  if (p.empty()) p = "root";
  RuleTable rules(p);
  std::string object = rules.Primitive("object");
  return rules.Text(object);
}

}  // namespace lazyslot::grammar
