#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/ (deterministic; re-run after changing it).

`make_seeds.py --gguf-out DIR` writes only the GGUF seeds, into DIR: they are binary files, so they are not kept in
the repository; scripts/fuzz.sh generates them into its scratch corpus (with the files of ../shared/models).

Small valid GGUF files built field by field, tokenizer texts from ../shared vocab test inputs, request bodies,
and chat templates read from the vocab GGUFs in ../shared. Every file stays far below 64 KB.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared")
CORPUS = os.path.join(HERE, "corpus")


GGUF_OUT = None  # set by --gguf-out


def write(target, name, data):
    d = GGUF_OUT if target == "gguf" else os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    assert len(data) < 64 * 1024, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- GGUF -------------------------------------------------------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B",
              U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == STR:
        return gstr(v)
    return struct.pack(SCALAR_FMT[t], v)


def kv(key, t, v):
    return gstr(key) + struct.pack("<I", t) + gval(t, v)


def kv_arr(key, et, vals):
    return gstr(key) + struct.pack("<IIQ", ARR, et, len(vals)) + b"".join(gval(et, v) for v in vals)


def gguf(kvs, tensors=(), version=3, align=32):
    """tensors: (name, ne list, type id, data bytes); offsets packed and aligned as writers do."""
    head = b"GGUF" + struct.pack("<Iqq", version, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data = b"", b""
    for name, ne, ttype, payload in tensors:
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, len(data))
        data += payload + b"\0" * ((-len(payload)) % align)
    out = head + infos
    if tensors:
        out += b"\0" * ((-len(out)) % align) + data
    return out


def gguf_seeds():
    write("gguf", "empty_v3.bin", gguf([]))
    write("gguf", "empty_v2.bin", gguf([], version=2))
    scalars = [kv("k.u8", U8, 200), kv("k.i8", I8, -5), kv("k.u16", U16, 60000), kv("k.i16", I16, -300),
               kv("k.u32", U32, 7), kv("k.i32", I32, -7), kv("k.f32", F32, 0.5), kv("k.bool", BOOL, 1),
               kv("k.str", STR, "h\u00e9llo"), kv("k.u64", U64, 1 << 40), kv("k.i64", I64, -(1 << 40)),
               kv("k.f64", F64, 2.25)]
    arrays = [kv_arr("a.u32", U32, [1, 2, 3]), kv_arr("a.i32", I32, [4, -5, 6]), kv_arr("a.f32", F32, [1.5]),
              kv_arr("a.str", STR, ["x", "", "yz"]), kv_arr("a.bool", BOOL, [0, 1]), kv_arr("a.u8", U8, [9]),
              kv_arr("a.f64", F64, [3.0]), kv_arr("a.i64", I64, []), kv_arr("a.u16", U16, [1, 2])]
    write("gguf", "all_value_types.bin", gguf(scalars + arrays))
    f32 = struct.pack("<8f", *range(8))
    f16 = struct.pack("<8e", *[0.5 * i for i in range(8)])
    q8 = struct.pack("<e", 0.25) + bytes(range(32))  # one Q8_0 block: f16 scale + 32 int8
    tensors = [("w.f32", [4, 2], 0, f32), ("w.f16", [8], 1, f16), ("w.q8_0", [32, 1], 8, q8)]
    model_kvs = [kv("general.architecture", STR, "llama"), kv("general.alignment", U32, 64),
                 kv("llama.block_count", U32, 2), kv_arr("llama.attention.head_count", I32, [2, 2])]
    write("gguf", "three_tensors.bin", gguf(model_kvs, tensors, align=64))
    write("gguf", "three_tensors_align32.bin", gguf(model_kvs[:1], tensors))

    # A tiny SPM vocabulary: specials, byte fallback for every byte, a few merges by score.
    spm_tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    spm_tokens += ["\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "<|user|>"]
    spm_types = [2, 3, 3] + [6] * 256 + [1] * 6 + [4]
    spm_scores = [0.0] * 259 + [-1.0, -2.0, -2.0, -0.5, -0.7, -0.1, 0.0]
    spm = [kv("tokenizer.ggml.model", STR, "llama"), kv_arr("tokenizer.ggml.tokens", STR, spm_tokens),
           kv_arr("tokenizer.ggml.scores", F32, spm_scores), kv_arr("tokenizer.ggml.token_type", I32, spm_types),
           kv("tokenizer.ggml.bos_token_id", U32, 1), kv("tokenizer.ggml.eos_token_id", U32, 2),
           kv("tokenizer.ggml.unknown_token_id", U32, 0), kv("tokenizer.ggml.add_bos_token", BOOL, 1),
           kv("tokenizer.chat_template", STR, "{% for m in messages %}{{ m.content }}{% endfor %}")]
    write("gguf", "vocab_spm.bin", gguf(spm))

    # A tiny byte-level BPE vocabulary (qwen2 pre-tokenizer): the 256 byte characters, merges, specials.
    def byte_char(b):
        keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
        if b in keep:
            return chr(b)
        others = [x for x in range(256) if x not in keep]
        return chr(0x100 + others.index(b))
    bpe_tokens = [byte_char(b) for b in range(256)]
    merges = ["\u0120 t", "h e", "t he", "\u0120t he", "l l", "e ll", "h ell", "hell o"]
    for m in merges:
        bpe_tokens.append(m.replace(" ", ""))
    bpe_tokens += ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"]
    bpe_types = [1] * (len(bpe_tokens) - 4) + [3, 3, 3, 4]
    for pre in ["qwen2", "llama-bpe", "gpt-2"]:
        bpe = [kv("tokenizer.ggml.model", STR, "gpt2"), kv("tokenizer.ggml.pre", STR, pre),
               kv_arr("tokenizer.ggml.tokens", STR, bpe_tokens), kv_arr("tokenizer.ggml.token_type", I32, bpe_types),
               kv_arr("tokenizer.ggml.merges", STR, merges),
               kv("tokenizer.ggml.eos_token_id", U32, len(bpe_tokens) - 2),
               kv("tokenizer.ggml.bos_token_id", U32, len(bpe_tokens) - 4),
               kv("tokenizer.ggml.eot_token_id", U32, 0xFFFFFFFF)]
        write("gguf", "vocab_bpe_%s.bin" % pre, gguf(bpe))



# ---- minimal GGUF reader for the chat templates in ../shared -----------------------------------------------
def read_gguf_strings(path, wanted):
    with open(path, "rb") as f:
        b = f.read(1 << 26)
    pos = 24
    n_kv = struct.unpack_from("<q", b, 16)[0]
    out = {}

    def rd_str(p):
        n = struct.unpack_from("<Q", b, p)[0]
        return b[p + 8:p + 8 + n], p + 8 + n

    def skip(t, p):
        if t == STR:
            return rd_str(p)[1]
        if t == ARR:
            et, n = struct.unpack_from("<IQ", b, p)
            p += 12
            for _ in range(n):
                p = skip(et, p)
            return p
        return p + struct.calcsize(SCALAR_FMT[t])

    for _ in range(n_kv):
        key, pos = rd_str(pos)
        t = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        if t == STR and key.decode() in wanted:
            v, pos = rd_str(pos)
            out[key.decode()] = v.decode("utf-8")
        else:
            pos = skip(t, pos)
    return out


# ---- tokenizer texts ---------------------------------------------------------------------------------------
def tokenizer_seeds():
    inp = os.path.join(SHARED, "models", "vocab", "ggml-vocab-qwen2.gguf.inp")
    with open(inp, "rb") as f:
        cases = f.read().split(b"\n__ggml_vocab_test__\n")
    joined = [c for c in cases if c]
    for i in range(0, len(joined), 8):
        write("tokenizer", "vocab_cases_%02d.txt" % (i // 8), b"\n".join(joined[i:i + 8]))
    write("tokenizer", "specials.txt", "<s>hi</s> <|im_start|>user\n<think>x</think><|im_end|><|endoftext|>")
    write("tokenizer", "spaces.txt", "   a  b\t\t\n\n\r\n  \u00a0\u3000end ")
    write("tokenizer", "unicode.txt", "h\u00e9llo \u4f60\u597d \U0001F600 \u2581x \u0130 \u00df 12345 3.14 don't I'M")
    write("tokenizer", "invalid_utf8.bin", b"\xff\xfe a \xe2\x96 \xc3 \xf0\x9f\x98 \xed\xa0\x80 \xc0\x80 \xf8\x88")
    write("tokenizer", "empty.txt", b"")


# ---- request bodies ----------------------------------------------------------------------------------------
def request_seeds():
    bodies = {
        "chat_basic.json": {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                                       {"role": "user", "content": "Hi"}]},
        "chat_full.json": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]},
                                        {"role": "assistant", "content": None, "tool_calls": []}],
                           "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": -1,
                           "max_tokens": 16, "max_completion_tokens": 8, "n_predict": 4, "stop": ["\n", ""],
                           "stream": True, "stream_options": {"include_usage": True}, "n": 1,
                           "logprobs": False, "top_logprobs": 0, "response_format": {"type": "text"},
                           "repeat_penalty": 1.1, "repeat_last_n": 64, "frequency_penalty": 0.5,
                           "presence_penalty": -0.5, "ignore_eos": False, "cache_prompt": True,
                           "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                           "chat_template_kwargs": {"enable_thinking": False}},
        "completion_text.json": {"prompt": "Once upon a time", "max_tokens": 8, "echo": True, "suffix": ""},
        "completion_tokens.json": {"prompt": [1, 2, 3], "stop": "x", "seed": 42},
        "completion_batch.json": {"prompt": ["a", [4, 5], "c"], "temperature": 0},
        "embeddings.json": {"input": ["hello", "world"], "encoding_format": "base64"},
        "embeddings_tokens.json": {"input": [[1, 2], [3]], "encoding_format": "float"},
        "tokenize.json": {"content": "hi <|im_end|>", "add_special": True, "with_pieces": True},
        "detokenize.json": {"tokens": [1, 2, 2147483647]},
        "bad_types.json": {"messages": "x", "temperature": "hot", "n": 2, "top_k": 1.5, "stop": [1]},
    }
    for name, body in bodies.items():
        write("request", name, json.dumps(body))
    write("request", "not_json.txt", "{\"messages\": [")
    write("request", "array.json", "[1, 2, 3]")
    write("request", "numbers.json", '{"seed": 1e300, "max_tokens": -1.0, "top_k": 18446744073709551615,'
                                     ' "temperature": -0.0, "n_predict": 2147483648}')


# ---- chat templates ----------------------------------------------------------------------------------------
SEP = "\n#messages#\n"


def chat_template_seeds():
    sources = {}
    for name, rel in [("qwen3", "models/vocab/ggml-vocab-qwen3-derived.gguf"),
                      ("llama3", "models/vocab/ggml-vocab-llama3-derived.gguf")]:
        path = os.path.join(SHARED, rel)
        if os.path.exists(path):
            t = read_gguf_strings(path, {"tokenizer.chat_template"}).get("tokenizer.chat_template")
            if t:
                sources[name] = t
    convo = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"},
             {"role": "assistant", "content": "Hello!", "reasoning_content": "think"},
             {"role": "user", "content": "Joke?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    tool_convo = convo + [{"role": "assistant", "content": "",
                           "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                            "arguments": {"city": "Paris"}}}]},
                          {"role": "tool", "content": "sunny"}]
    for name, src in sources.items():
        write("chat_template", name + ".jinja", src + SEP + json.dumps(convo))
        write("chat_template", name + "_tools.jinja",
              src + SEP + json.dumps({"messages": tool_convo, "tools": tools, "enable_thinking": False}))
    small = {
        "chatml.jinja": "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + "
                        "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                        "{% endif %}",
        "macro.jinja": "{%- macro f(x, y=2) -%}{{ x * y }}{%- endmacro -%}{% set ns = namespace(a=1) %}"
                       "{% for i in range(5) if i is odd %}{{ f(i) }}{% set ns.a = ns.a + i %}{% else %}none"
                       "{% endfor %}{{ ns.a }}{{ loop is defined }}",
        "filters.jinja": "{{ messages | length }}{{ messages[0].content | upper | replace('E', 'e') | trim }}"
                         "{{ [3,1,2] | sort | join(',') }}{{ {'b': 1, 'a': 2} | dictsort | list }}"
                         "{{ messages | map(attribute='role') | unique | list | tojson }}{{ '%s-%d' % ('a', 3) }}"
                         "{{ 'a,b'.split(',') }}{{ messages[-1]['content'][::-1] }}{{ 7 // 2 }}{{ 2 ** 10 }}",
        "raise.jinja": "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first must be user') }}{% endif %}",
        "strings.jinja": "{{ 'x' * 10 }}{{ 'abc'.startswith('a') }}{{ ' s '.strip() }}{{ 'A b'.title() }}"
                         "{% set d = {'k': [1, 2.5, none, true]} %}{{ d | tojson(indent=2) }}{{ d.items() | list }}",
    }
    for name, src in small.items():
        write("chat_template", name, src + SEP + json.dumps(convo))
    write("chat_template", "no_messages.jinja", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}")


def main():
    global GGUF_OUT
    if len(sys.argv) == 3 and sys.argv[1] == "--gguf-out":
        GGUF_OUT = sys.argv[2]
        gguf_seeds()
        return 0
    tokenizer_seeds()
    request_seeds()
    chat_template_seeds()
    total = 0
    for root, _, files in os.walk(CORPUS):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("corpus: %d bytes" % total)
    assert total < 1 << 20


if __name__ == "__main__":
    sys.exit(main())
