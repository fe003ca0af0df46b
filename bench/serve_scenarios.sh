#!/usr/bin/env bash
# Two end-to-end timings against a running server (lazyslot serve or llama-server, same model and flags), for
# side-by-side figures (docs/bench.md):
#   embed:   64 texts of about 220 tokens (word counts calibrated on the server's /tokenize), sent as
#            /v1/embeddings requests of 8 inputs, CONC requests in flight; prints prompt tokens/s.
#   embed45: the same with 256 texts of about 45 tokens in requests of 32.
#   seed:  one /v1/completions request of a ~2,260-token prompt plus 64 generated tokens (greedy,
#          ignore_eos); prints the wall time of the whole request.
# Usage: bench/serve_scenarios.sh URL embed|embed45|seed [REPEATS] [CONC]
#   lazyslot serve -m qwen3-0.6b-q8_0.gguf --embeddings --pooling last -np 2 -c 16384 --port 8080 &
#   bench/serve_scenarios.sh http://127.0.0.1:8080 embed 3
# The texts are the same words for every server (a fixed pseudo-random sequence), so both get the same
# tokens when they share the GGUF's tokenizer. Needs python3 (standard library only).
set -euo pipefail
URL=${1:?usage: serve_scenarios.sh URL embed|embed45|seed [REPEATS] [CONC]}
WHAT=${2:?usage: serve_scenarios.sh URL embed|embed45|seed [REPEATS] [CONC]}
REPEATS=${3:-3}
CONC=${4:-1}

exec python3 - "$URL" "$WHAT" "$REPEATS" "$CONC" <<'PY'
import http.client, json, statistics, sys, threading, time, urllib.parse

url, what, repeats, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlparse(url)

def post(path, body):
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=1200)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"{path}: HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)

def n_tokens(text):
    return len(post("/tokenize", {"content": text})["tokens"])

WORDS = ("the of and to in is was for on that with as by at from his her an which be this had not are but "
         "were they one all their been has have more when who will would there can said so time into only "
         "other new some could these two may first then any like now than over such after also most made "
         "river mountain library window garden summer winter history science music market village").split()

def text(seed, n_words):
    s, out = seed * 2654435761 % 2**32 + 1, []
    for _ in range(n_words):
        s = (s * 1664525 + 1013904223) % 2**32
        out.append(WORDS[(s >> 8) % len(WORDS)])
    return " ".join(out).capitalize() + "."

def words_for(tokens, seed):
    """The word count whose text comes closest to `tokens` tokens on this server's tokenizer."""
    lo, hi = 1, tokens * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if n_tokens(text(seed, mid)) < tokens:
            lo = mid + 1
        else:
            hi = mid
    return lo

if what in ("embed", "embed45"):
    tokens, n_texts, per_request = (220, 64, 8) if what == "embed" else (45, 256, 32)
    n_words = words_for(tokens, 1)
    texts = [text(1 + i, n_words) for i in range(n_texts)]
    total = sum(n_tokens(t) for t in texts)
    requests = [texts[i:i + per_request] for i in range(0, len(texts), per_request)]
    post("/v1/embeddings", {"input": texts[:2]})  # warm-up
    rates = []
    for r in range(repeats):
        queue, lock = list(requests), threading.Lock()
        def worker():
            while True:
                with lock:
                    if not queue:
                        return
                    batch = queue.pop()
                out = post("/v1/embeddings", {"input": batch})
                assert len(out["data"]) == len(batch)
        t0 = time.monotonic()
        threads = [threading.Thread(target=worker) for _ in range(conc)]
        for t in threads: t.start()
        for t in threads: t.join()
        dt = time.monotonic() - t0
        rates.append(total / dt)
        print(f"{what} round {r + 1}: {len(texts)} texts, {total} tokens ({total / len(texts):.0f} per text), "
              f"{dt:.2f} s, {total / dt:.1f} tokens/s", flush=True)
    print(f"{what} median: {statistics.median(rates):.1f} tokens/s ({conc} request(s) in flight)")
elif what == "seed":
    n_words = words_for(2260, 7)
    prompt = text(7, n_words)
    print(f"seed prompt: {n_tokens(prompt)} tokens", flush=True)
    times = []
    for r in range(repeats):
        t0 = time.monotonic()
        out = post("/v1/completions", {"prompt": prompt + f" {r}", "max_tokens": 64, "temperature": 0,
                                       "ignore_eos": True, "cache_prompt": False})
        dt = time.monotonic() - t0
        times.append(dt)
        print(f"seed round {r + 1}: {out['usage']['prompt_tokens']} + {out['usage']['completion_tokens']} "
              f"tokens in {dt:.2f} s", flush=True)
    print(f"seed median: {statistics.median(times):.2f} s")
else:
    raise SystemExit("what: embed, embed45 or seed")
PY
