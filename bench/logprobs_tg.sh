#!/usr/bin/env bash
# Generation speed with and without log-probabilities (docs/bench.md, issue 14): the same /completion
# request, alternately plain, with n_probs 20 (the raw distribution) and with n_probs 20 +
# post_sampling_probs, ROUNDS times each; prints the median of the server's predicted_per_second for each and
# the ratios. Usage: bench/logprobs_tg.sh URL [ROUNDS] [N_PREDICT]
#   lazyslot serve -m qwen3-0.6b-vocab-q8_0.gguf -np 1 -t 2 --port 8080 &
#   bench/logprobs_tg.sh http://127.0.0.1:8080 5 128
# Needs python3 (standard library only).
set -euo pipefail
URL=${1:?usage: logprobs_tg.sh URL [ROUNDS] [N_PREDICT]}
ROUNDS=${2:-5}
N=${3:-128}

exec python3 - "$URL" "$ROUNDS" "$N" <<'PY'
import http.client, json, statistics, sys, urllib.parse

url, rounds, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = urllib.parse.urlparse(url)

def tps(extra, seed):
    body = {"prompt": "Once upon a time", "n_predict": n, "ignore_eos": True, "temperature": 1.0, "seed": seed}
    body.update(extra)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=1200)
    conn.request("POST", "/completion", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)["timings"]["predicted_per_second"]

modes = {"plain": {}, "n_probs 20": {"n_probs": 20},
         "n_probs 20, post-sampling": {"n_probs": 20, "post_sampling_probs": True}}
got = {k: [] for k in modes}
for r in range(rounds):
    for k, extra in modes.items():
        got[k].append(tps(extra, 100 + r))
base = statistics.median(got["plain"])
print(f"{n} tokens, {rounds} rounds, medians of predicted_per_second")
for k, v in got.items():
    m = statistics.median(v)
    print(f"  {k:28s} {m:7.2f} t/s   {m / base:5.3f}x plain")
PY
