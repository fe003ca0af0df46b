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


# ---- seeds from the tests' own inputs ----------------------------------------------------------------------
REPO = os.path.join(HERE, "..")
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "\"": "\"", "'": "'", "?": "?", "a": "\a",
           "b": "\b", "f": "\f", "v": "\v"}


def c_literals(rel):
    """The string literals of a C++ file in order, adjacent ones joined, raw R"(...)" ones included, escapes
    (\\n \\t \\" \\\\ \\xHH) decoded to bytes."""
    src = open(os.path.join(REPO, rel), encoding="utf-8").read()
    out, i, n = [], 0, len(src)
    cur, last_end = None, -1
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
            continue
        if c == "'" and i + 2 < n:  # a char literal: skip it whole
            j = i + 1
            while j < n and src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        raw = src.startswith('R"', i) and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_"))
        if raw or c == '"':
            if raw:
                open_paren = src.index("(", i)
                delim = src[i + 2:open_paren]
                close = src.index(")" + delim + '"', open_paren)
                piece = src[open_paren + 1:close].encode("utf-8")
                end = close + len(delim) + 2
            else:
                j, piece = i + 1, bytearray()
                while src[j] != '"':
                    if src[j] == "\\":
                        e = src[j + 1]
                        if e == "x":
                            k = j + 2
                            while k < n and src[k] in "0123456789abcdefABCDEF":
                                k += 1
                            piece.append(int(src[j + 2:k], 16) & 0xFF)
                            j = k
                            continue
                        piece += ESCAPES.get(e, e).encode("utf-8")
                        j += 2
                    else:
                        piece += src[j].encode("utf-8")
                        j += 1
                piece, end = bytes(piece), j + 1
            if cur is not None and src[last_end:i].strip() == "":
                cur += piece
            else:
                if cur is not None:
                    out.append(cur)
                cur = piece
            last_end = i = end
            continue
        i += 1
    if cur is not None:
        out.append(cur)
    return out


def write_unique(target, prefix, items, limit=200):
    seen = []
    for it in items:
        if it not in seen:
            seen.append(it)
    for k, it in enumerate(seen[:limit]):
        write(target, "%s_%03d.txt" % (prefix, k), it)


def json_schema_seeds():
    schemas = []
    for rel in ["tests/grammar/json_schema_test.cpp", "tests/chat/tool_calls_test.cpp"]:
        if not os.path.exists(os.path.join(REPO, rel)):
            continue
        for lit in c_literals(rel):
            try:
                v = json.loads(lit.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(v, (dict, bool)) and lit.strip() not in (b"{}", b"true", b"false") or lit == b"{}":
                schemas.append(lit)
    write_unique("json_schema", "test", schemas)


GBNF_SEP = b"\n#input#\n"


def gbnf_seeds():
    items = []
    for rel in ["tests/grammar/gbnf_parser_test.cpp", "tests/grammar/matcher_test.cpp"]:
        lits = c_literals(rel)
        for k, lit in enumerate(lits):
            if b"::=" not in lit:
                continue
            items.append(lit)
            # The next literal that is not a grammar is usually a string the test matches against it.
            for nxt in lits[k + 1:k + 4]:
                if b"::=" not in nxt and b"grammar:" not in nxt:
                    items.append(lit + GBNF_SEP + nxt)
                    break
    write_unique("gbnf", "test", items)


def preset_seeds():
    items = [lit for lit in c_literals("tests/router/model_catalog_test.cpp")
             if b"=" in lit and (b"[" in lit or b"version" in lit) and b"p.ini:" not in lit]
    write_unique("preset", "test", items)


# Slot files (kv/kv_state.h) for the two caches of kv_state_fuzz.cpp, checksummed as core/hash.cpp does.
M64 = (1 << 64) - 1
K_A, K_B, K_C = 0xc2b2ae3d27d4eb4f, 0x9e3779b185ebca87, 0x165667b19e3779f9
SLOT_MODEL_ID = 0x6c617a79736c6f74


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def checksum64(data, seed=0):
    rnd = lambda lane, w: (rotl((lane + w * K_A) & M64, 31) * K_B) & M64
    lanes = [(seed + K_A + K_B) & M64, (seed + K_A) & M64, seed, (seed - K_B) & M64]
    full = len(data) // 32 * 32
    for p in range(0, full, 32):
        for i in range(4):
            lanes[i] = rnd(lanes[i], struct.unpack_from("<Q", data, p + 8 * i)[0])
    tail = data[full:]
    h = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18)) & M64
    for i in range(4):
        h = ((h ^ rnd(0, lanes[i])) * K_B + K_C) & M64
    h = (h + (len(data) ^ seed)) & M64
    i = 0
    while i + 8 <= len(tail):
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", tail, i)[0]), 27) * K_B + K_C) & M64
        i += 8
    for b in tail[i:]:
        h = (rotl(h ^ ((b * K_C) & M64), 11) * K_A) & M64
    h ^= h >> 33
    h = (h * K_A) & M64
    h ^= h >> 29
    h = (h * K_C) & M64
    return h ^ (h >> 32)


# (type_k, type_v, n_embd_k, n_embd_v, k_row_bytes, v_row_bytes, layer windows) of kv_state_fuzz.cpp's caches.
SLOT_CACHES = [(1, 1, 32, 16, 64, 32, [0, 0]), (8, 0, 32, 32, 34, 128, [8, 0, 8])]


def slot_file(cache, n, floor=None, scope=0, version=2, model_id=SLOT_MODEL_ID):
    tk, tv, ek, ev, kr, vr, windows = SLOT_CACHES[cache]
    w = max(windows)
    if floor is None:
        floor = max(0, n - w) if w else 0
    body = struct.pack("<%di" % n, *[(7 * t + 3) % 151936 for t in range(n)])
    for il, win in enumerate(windows):
        rows = n - min(floor, n) if win else n
        for kind, rb in ((0, kr), (1, vr)):
            body += bytes(((il * 31 + kind * 17 + r) * 13 + b) & 0xFF for r in range(rows) for b in range(rb))
    head = b"LZSLOTKV" + struct.pack("<IIIIQQQQQIIQQ", version, tk, tv, len(windows), ek, ev, kr, vr, model_id,
                                     n, floor, scope, 0)
    digest = checksum64(head + body)
    return head[:80] + struct.pack("<Q", digest) + body


def kv_state_seeds():
    # The first byte is the harness's mode: bit 0 the cache, bit 1 fix the size, bit 2 fix the checksum,
    # bits 3-7 cells the slot holds before (times 2).
    seeds = {
        "global_empty.bin": bytes([0]) + slot_file(0, 0),
        "global_5.bin": bytes([0]) + slot_file(0, 5, scope=42),
        "global_full_over_filled.bin": bytes([0x08 * 10]) + slot_file(0, 48),
        "global_over_longer.bin": bytes([0x08 * 20]) + slot_file(0, 3),
        "window_5.bin": bytes([1]) + slot_file(1, 5),
        "window_20.bin": bytes([1 | 0x08 * 4]) + slot_file(1, 20),
        "window_64.bin": bytes([1 | 0x08 * 31]) + slot_file(1, 64, scope=7),
        "window_floor_early.bin": bytes([1]) + slot_file(1, 20, floor=3),
        "window_floor_late.bin": bytes([1]) + slot_file(1, 20, floor=16),
        "bad_checksum_fixed.bin": bytes([4]) + slot_file(0, 6)[:90] + b"\xff" + slot_file(0, 6)[91:],
        "bad_checksum.bin": bytes([0x10]) + slot_file(0, 6)[:90] + b"\xff" + slot_file(0, 6)[91:],
        "truncated.bin": bytes([0x18]) + slot_file(0, 6)[:-5],
        "truncated_fixed.bin": bytes([1 | 2 | 4]) + slot_file(1, 9)[:-40],
        "too_many_tokens.bin": bytes([2 | 4]) + slot_file(0, 49),
        "foreign_model.bin": bytes([0]) + slot_file(0, 4, model_id=1),
        "foreign_cache.bin": bytes([1]) + slot_file(0, 4),
        "version1.bin": bytes([0]) + slot_file(0, 4, version=1),
        "header_only.bin": bytes([2]) + slot_file(0, 4)[:88],
        "short.bin": bytes([0]) + b"LZSLOTKV\x02\x00",
    }
    for name, data in seeds.items():
        write("kv_state", name, data)


def json_literals(rel):
    out = []
    for lit in c_literals(rel):
        try:
            out.append(json.loads(lit.decode("utf-8")))
        except (ValueError, UnicodeDecodeError):
            pass
    return out


def dumps(v):
    return json.dumps(v, ensure_ascii=False).encode("utf-8")


def anthropic_seeds():
    base = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}
    items = [dumps(base)]
    for v in json_literals("tests/server/anthropic_api_test.cpp"):
        first = v[0] if isinstance(v, list) and v and isinstance(v[0], dict) else {}
        if isinstance(v, dict) and ("messages" in v or "max_tokens" in v):
            items.append(dumps(dict(base, **v)))
        elif "role" in first:
            items.append(dumps(dict(base, messages=v)))
        elif "input_schema" in first or first.get("type") == "custom":
            items.append(dumps(dict(base, tools=v)))
        elif first.get("type") in ("text", "thinking", "tool_use", "tool_result", "image"):
            items.append(dumps(dict(base, messages=[{"role": "user", "content": v}])))
            if first.get("type") == "text":
                items.append(dumps(dict(base, system=v)))
        elif isinstance(v, dict) and v.get("type") in ("auto", "any", "tool", "none"):
            items.append(dumps(dict(base, tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
                                    tool_choice=v)))
        elif isinstance(v, dict) and v.get("type") in ("enabled", "disabled", "adaptive"):
            items.append(dumps(dict(base, thinking=v)))
        elif isinstance(v, dict) and ("type" in v or "properties" in v):
            items.append(dumps(dict(base, output_config={"format": {"type": "json_schema", "schema": v}})))
    full = {"model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                         {"role": "assistant", "content": [
                             {"type": "thinking", "thinking": "call it", "signature": "s"},
                             {"type": "text", "text": "Checking."},
                             {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                              "input": {"city": "Paris"}}]},
                         {"role": "user", "content": [
                             {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                             {"type": "text", "text": "And \u00e9t\u00e9?"}]}],
            "stop_sequences": ["\n\n", "END"], "temperature": 0.5, "top_p": 0.9, "top_k": 40, "stream": True,
            "tools": [{"name": "get_weather", "description": "d",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                        "required": ["city"]}}],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "metadata": {"user_id": "u"},
            "service_tier": "auto", "cache_control": {"type": "ephemeral"},
            "chat_template_kwargs": {"enable_thinking": False}}
    items.append(dumps(full))
    items.append(dumps(dict(base, output_config={"format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"a": {"type": "integer"}}}}, "effort": "low"})))
    items.append(b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}')
    write_unique("anthropic", "test", items)


def responses_seeds():
    base = {"model": "m", "input": "Hello"}
    items = [dumps(base)]
    for v in json_literals("tests/server/responses_api_test.cpp"):
        first = v[0] if isinstance(v, list) and v and isinstance(v[0], dict) else {}
        if isinstance(v, dict) and ("input" in v or "instructions" in v):
            items.append(dumps(dict(base, **v)))
        elif "role" in first or first.get("type") in ("message", "function_call", "function_call_output",
                                                      "reasoning", "input_text"):
            items.append(dumps(dict(base, input=v)))
        elif isinstance(v, dict) and "format" in v:
            items.append(dumps(dict(base, text=v)))
        elif isinstance(v, dict) and "effort" in v:
            items.append(dumps(dict(base, reasoning=v)))
        elif isinstance(v, dict) and v.get("type") == "function":
            items.append(dumps(dict(base, tools=[v], tool_choice="auto")))
    full = {"model": "m", "instructions": "Be brief.",
            "input": [{"role": "developer", "content": "Answer in French."},
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                      {"type": "reasoning", "id": "rs_1", "summary": [],
                       "content": [{"type": "reasoning_text", "text": "call it"}]},
                      {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                       "arguments": "{\"city\":\"Paris\"}"},
                      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
                      {"role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
                      {"role": "user", "content": "Merci \u00e9t\u00e9"}],
            "max_output_tokens": 64, "temperature": 0.7, "top_p": 0.9, "stream": True,
            "parallel_tool_calls": False, "store": False, "metadata": {"k": "v"}, "user": "u",
            "tools": [{"type": "function", "name": "get_weather", "description": "d", "strict": True,
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "tool_choice": {"type": "function", "name": "get_weather"},
            "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
            "reasoning": {"effort": "low"}, "truncation": "disabled", "seed": 3, "top_k": 5, "min_p": 0.1,
            "stop": ["END"]}
    items.append(dumps(full))
    items.append(dumps(dict(base, previous_response_id="resp_1")))
    items.append(dumps(dict(base, tools=[{"type": "web_search"}])))
    write_unique("responses", "test", items)

def main():
    global GGUF_OUT
    if len(sys.argv) == 3 and sys.argv[1] == "--gguf-out":
        GGUF_OUT = sys.argv[2]
        gguf_seeds()
        return 0
    tokenizer_seeds()
    request_seeds()
    chat_template_seeds()
    json_schema_seeds()
    gbnf_seeds()
    preset_seeds()
    kv_state_seeds()
    anthropic_seeds()
    responses_seeds()
    total = 0
    for root, _, files in os.walk(CORPUS):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("corpus: %d bytes" % total)
    assert total < 1 << 20


if __name__ == "__main__":
    sys.exit(main())
