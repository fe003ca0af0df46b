#!/usr/bin/env bash
# n choices of one prompt (docs/bench.md, issue 14): one /completion request with n_cmpl N against N
# concurrent requests for the same prompt with cache_prompt off (each computes the prompt itself). Prints the
# median wall time of each, their ratio, and the prompt tokens each computed (timings.prompt_n), ROUNDS times
# alternately. Usage: bench/n_choices.sh URL [N] [PROMPT_WORDS] [ROUNDS]
#   lazyslot serve -m qwen3-0.6b-q8_0.gguf -np 3 -c 12288 -t 2 --port 8080 &
#   bench/n_choices.sh http://127.0.0.1:8080 3 1000 3
# Needs python3 (standard library only).
set -euo pipefail
URL=${1:?usage: n_choices.sh URL [N] [PROMPT_WORDS] [ROUNDS]}
N=${2:-3}
WORDS=${3:-1000}
ROUNDS=${4:-3}

exec python3 - "$URL" "$N" "$WORDS" "$ROUNDS" <<'PY'
import http.client, json, statistics, sys, threading, time, urllib.parse

url, n, words, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlparse(url)

def post(body):
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=3600)
    conn.request("POST", "/completion", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)

def one_request(r):
    prompt = f"Round {r}. " + " ".join(f"word{i % 97}" for i in range(words))
    t0 = time.perf_counter()
    out = post({"prompt": prompt, "n_predict": 16, "n_cmpl": n, "cache_prompt": False, "seed": r})
    out = out if isinstance(out, list) else [out]
    return time.perf_counter() - t0, sum(o["timings"]["prompt_n"] for o in out)

def separate(r):
    prompt = f"Round {r} apart. " + " ".join(f"word{i % 97}" for i in range(words))
    results = [None] * n
    def run(j):
        results[j] = post({"prompt": prompt, "n_predict": 16, "cache_prompt": False, "seed": r + j})
    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=(j,)) for j in range(n)]
    for t in threads: t.start()
    for t in threads: t.join()
    return time.perf_counter() - t0, sum(o["timings"]["prompt_n"] for o in results)

shared, apart = [], []
for r in range(rounds):
    shared.append(one_request(r))
    apart.append(separate(r))
ms = statistics.median(t for t, _ in shared)
ma = statistics.median(t for t, _ in apart)
print(f"n={n}, prompt of {words} words, 16 tokens each, {rounds} rounds (medians)")
print(f"  one request, n_cmpl {n}:    {ms:7.2f} s   prompt tokens computed {shared[0][1]}")
print(f"  {n} separate requests:       {ma:7.2f} s   prompt tokens computed {apart[0][1]}")
print(f"  ratio separate / shared:   {ma / ms:7.2f}x")
PY
