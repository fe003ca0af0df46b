#!/usr/bin/env python3
"""Second step after generate.mjs: renders, with Python Jinja2 in Hugging Face transformers' chat-template
environment (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, {% generation %},
tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now), the cases of expected.json that
@huggingface/jinja could not render ("reference_gap"), and stores that output. It also renders every other
case and reports any disagreement between the two renderers (exit status 1 if there is one).

    python3 fill_jinja2_gaps.py [SHARED_DIR]      # needs jinja2 (pip install jinja2)
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                         os.environ.get("LAZYSLOT_SHARED_DIR", os.path.join(HERE, "../../../../shared")))


class Raised(Exception):
    pass


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class Generation(Extension):
    """transformers' AssistantTracker without the mask bookkeeping: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def template_form(messages):
    """Same as generate.mjs / PrepareMessagesForTemplate."""
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            out.append(m)
            continue
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if isinstance(m.get("tool_calls"), list):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function")
                if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                    tc = dict(tc, function=dict(fn, arguments=json.loads(fn["arguments"])))
                calls.append(tc)
            m["tool_calls"] = calls
        out.append(m)
    return out


def main():
    conversations = json.load(open(os.path.join(HERE, "conversations.json"), encoding="utf-8"))
    expected_path = os.path.join(HERE, "expected.json")
    expected = json.load(open(expected_path, encoding="utf-8"))
    now = datetime.fromisoformat(conversations["now"].replace("Z", "+00:00"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = now.strftime
    convs = {c["name"]: c for c in conversations["conversations"]}
    templates = {}
    filled = disagreements = 0
    for case in expected["cases"]:
        name = case["template"]
        if name not in templates:
            with open(os.path.join(SHARED, "templates", name), encoding="utf-8") as f:
                templates[name] = env.from_string(f.read())
        conv = convs[case["conversation"]]
        ctx = dict(conversations["context"], messages=template_form(conv["messages"]),
                   add_generation_prompt=case["add_generation_prompt"])
        if "tools" in conv:
            ctx["tools"] = conv["tools"]
        try:
            result = {"output": templates[name].render(**ctx)}
        except Raised as e:
            result = {"error": str(e), "raised": True}
        except Exception as e:  # noqa: BLE001 - any template error is a result here
            result = {"error": f"{type(e).__name__}: {e}"}
        label = f"{name} / {case['conversation']} / {case['add_generation_prompt']}"
        if "reference_gap" in case:
            case.pop("output", None)
            case.pop("error", None)
            case.pop("raised", None)
            case.update(result)
            case["output_from"] = f"jinja2 {jinja2.__version__}"
            filled += 1
            continue
        same = result.get("output") == case.get("output") and result.get("raised") == case.get("raised")
        if "error" in result and "error" in case and not case.get("raised"):
            same = True  # both failed; the messages of two renderers differ
        if not same:
            disagreements += 1
            print(f"renderers disagree: {label}: jinja2 {result.get('error', 'renders')!r}")
    with open(expected_path, "w", encoding="utf-8") as f:
        f.write(json.dumps(expected, ensure_ascii=False, indent=1) + "\n")
    print(f"filled {filled} cases from jinja2 {jinja2.__version__}; {disagreements} disagreements elsewhere")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
