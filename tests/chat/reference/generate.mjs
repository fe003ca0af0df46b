// Writes expected.json: every ../shared/templates/*.jinja rendered by @huggingface/jinja (the JS port of
// Hugging Face transformers' chat-template renderer) for every conversation in conversations.json, with and
// without add_generation_prompt. template_reference_test.cpp renders the same cases and compares bytes.
//
//   cd tests/chat/reference && npm install && node generate.mjs [SHARED_DIR] && python3 fill_jinja2_gaps.py
//
// The second step renders, with Python Jinja2, the few cases this renderer cannot (kReferenceGaps below)
// and cross-checks every other case against Jinja2.
// SHARED_DIR defaults to $LAZYSLOT_SHARED_DIR, else ../../../../shared (the checkout's sibling).
import { Environment, Template } from "@huggingface/jinja";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const sharedDir = resolve(process.argv[2] ?? process.env.LAZYSLOT_SHARED_DIR ?? join(here, "../../../../shared"));
const templatesDir = join(sharedDir, "templates");
const pkg = JSON.parse(readFileSync(join(here, "node_modules/@huggingface/jinja/package.json"), "utf8"));
const doc = JSON.parse(readFileSync(join(here, "conversations.json"), "utf8"));

// Wire form -> template form, as PrepareMessagesForTemplate (src/chat/chat_messages.cpp): tool-call
// arguments that are JSON strings become objects (JSON.parse keeps key order), and an assistant message
// whose content is null or missing (the wire form of a turn that only calls tools) gets content "", since
// templates test and concatenate it as a string. Everything else is unchanged.
function toTemplateForm(messages) {
  return messages.map((m) => {
    if (m.role !== "assistant") return m;
    const out = { ...m };
    if (out.content === null || out.content === undefined) out.content = "";
    if (Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls.map((tc) => {
        const fn = tc.function;
        if (!fn || typeof fn.arguments !== "string") return tc;
        return { ...tc, function: { ...fn, arguments: JSON.parse(fn.arguments) } };
      });
    }
    return out;
  });
}

// Python's time.strftime for the fixed instant in conversations.json ("now", UTC), C locale.
const now = new Date(doc.now);
const kMonths = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                 "October", "November", "December"];
const kDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
function strftime(format) {
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  const dayOfYear = Math.floor((now - Date.UTC(now.getUTCFullYear(), 0, 1)) / 86400000) + 1;
  const fields = {
    Y: String(now.getUTCFullYear()), y: pad(now.getUTCFullYear() % 100), m: pad(now.getUTCMonth() + 1),
    d: pad(now.getUTCDate()), e: String(now.getUTCDate()).padStart(2, " "), H: pad(now.getUTCHours()),
    M: pad(now.getUTCMinutes()), S: pad(now.getUTCSeconds()), B: kMonths[now.getUTCMonth()],
    b: kMonths[now.getUTCMonth()].slice(0, 3), A: kDays[now.getUTCDay()], a: kDays[now.getUTCDay()].slice(0, 3),
    j: pad(dayOfYear, 3), "%": "%",
  };
  return format.replace(/%(.)/g, (token, c) => fields[c] ?? token);
}

// raise_exception replaced so the expected error can say it was raised by the template.
class Raised extends Error {}
const raiseException = (message) => {
  throw new Raised(String(message));
};

// Template.render() installs its globals with Environment.set, which refuses to redeclare a name, so the
// fixed-date strftime_now and our raise_exception replace the built-ins at that point instead.
const kGlobalOverrides = new Map([["strftime_now", strftime], ["raise_exception", raiseException]]);
const originalSet = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
  return originalSet.call(this, name, kGlobalOverrides.has(name) ? kGlobalOverrides.get(name) : value);
};

// Errors of @huggingface/jinja where Python Jinja2 (what transformers runs) renders. Such a case keeps the
// error as "reference_error" plus the reason in "reference_gap"; fill_jinja2_gaps.py then renders it with
// Jinja2 in transformers' environment and stores that output.
const kReferenceGaps = [
  [/^Expected iterable or object type in for loop: got UndefinedValue/,
   "Jinja2 iterates an undefined value (here: no tools) as an empty sequence"],
  [/^Cannot unpack non-iterable type: TupleValue/,
   "Jinja2 unpacks the tuples of a list literal in a for loop"],
];

const templates = readdirSync(templatesDir).filter((f) => f.endsWith(".jinja")).sort();
const cases = [];
for (const file of templates) {
  const source = readFileSync(join(templatesDir, file), "utf8");
  let template = null;
  let parseError = null;
  try {
    template = new Template(source);
  } catch (e) {
    parseError = String(e.message ?? e);
  }
  for (const conv of doc.conversations) {
    for (const addGenerationPrompt of [false, true]) {
      const entry = { template: file, conversation: conv.name, add_generation_prompt: addGenerationPrompt };
      if (parseError !== null) {
        entry.error = parseError;
      } else {
        const context = {
          ...doc.context,
          messages: toTemplateForm(conv.messages),
          add_generation_prompt: addGenerationPrompt,
        };
        if (conv.tools) context.tools = conv.tools;
        try {
          entry.output = template.render(context);
        } catch (e) {
          const message = String(e.message ?? e);
          const gap = e instanceof Raised ? undefined : kReferenceGaps.find(([re]) => re.test(message));
          if (gap) {
            entry.reference_error = message;
            entry.reference_gap = gap[1];
          } else {
            entry.error = message;
            if (e instanceof Raised) entry.raised = true;
          }
        }
      }
      cases.push(entry);
    }
  }
}

const out = { generator: `${pkg.name} ${pkg.version}`, now: doc.now, cases };
writeFileSync(join(here, "expected.json"), JSON.stringify(out, null, 1) + "\n");
const errors = cases.filter((c) => "error" in c);
const gaps = cases.filter((c) => "reference_gap" in c);
console.log(`${cases.length} cases (${templates.length} templates x ${doc.conversations.length} conversations x 2), ` +
            `${errors.length} raise (${errors.filter((c) => c.raised).length} via raise_exception)`);
for (const c of errors) console.log(`  ${c.template} / ${c.conversation} / ${c.add_generation_prompt}: ${c.error}`);
if (gaps.length > 0) {
  console.log(`${gaps.length} cases hit known @huggingface/jinja gaps; now run: python3 fill_jinja2_gaps.py`);
}
