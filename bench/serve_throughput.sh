#!/usr/bin/env bash
# Generation throughput of a running `lazyslot serve` (or llama-server) for 1, 2 and 4 concurrent streams:
# each stream asks for N tokens (ignore_eos, temperature 0) through /v1/completions with SSE, and the table
# gives aggregate tokens/s, per-stream decode tokens/s (after the first token) and time to first token.
# Usage: bench/serve_throughput.sh [URL] [TOKENS] [CONCURRENCIES...]
#   lazyslot synth --preset qwen3-0.6b --type q8_0 -o /tmp/qwen3-0.6b-q8_0.gguf
#   lazyslot serve -m /tmp/qwen3-0.6b-q8_0.gguf --parallel 4 --ctx-size 8192 &
#   bench/serve_throughput.sh http://127.0.0.1:8080 128 1 2 4
# Needs python3 (standard library only). The server needs --parallel >= the largest concurrency, or the
# extra streams wait in its queue (which the table then shows as a longer time to first token).
# LAZYSLOT_API_KEY, when set, is sent as the bearer key.
set -euo pipefail
URL=${1:-http://127.0.0.1:8080}
TOKENS=${2:-128}
shift $(($# > 2 ? 2 : $#))
CONC="${*:-1 2 4}"

exec python3 - "$URL" "$TOKENS" $CONC <<'PY'
import http.client, json, os, sys, threading, time, urllib.parse

url, n_tokens, concs = sys.argv[1], int(sys.argv[2]), [int(c) for c in sys.argv[3:]]
u = urllib.parse.urlparse(url)
headers = {"Content-Type": "application/json"}
if os.environ.get("LAZYSLOT_API_KEY"):
    headers["Authorization"] = "Bearer " + os.environ["LAZYSLOT_API_KEY"]

def stream(prompt, out):
    """One streamed completion; out gets (t_start, t_first_text, t_end, completion_tokens)."""
    body = json.dumps({"prompt": prompt, "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True,
                       "stream": True, "stream_options": {"include_usage": True}})
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    t0 = time.monotonic()
    conn.request("POST", "/v1/completions", body, headers)
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    first, n = None, 0
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        j = json.loads(line[6:])
        if j.get("usage"):
            n = j["usage"]["completion_tokens"]
        if first is None and any(c.get("text") for c in j.get("choices", [])):
            first = time.monotonic()
    out.append((t0, first or time.monotonic(), time.monotonic(), n))
    conn.close()

stream("Hello", [])  # warm-up: pages the weights in
print(f"{'streams':>7} {'tokens':>7} {'wall_s':>8} {'agg_tok/s':>10} {'stream_tok/s':>13} {'ttft_s':>7}")
for c in concs:
    results, threads = [], []
    t0 = time.monotonic()
    for i in range(c):
        t = threading.Thread(target=stream, args=(f"Stream {i}: once upon a time", results))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    tokens = sum(r[3] for r in results)
    # Decode rate of each stream after its first token (n - 1 tokens over that span), averaged.
    per = sum((r[3] - 1) / (r[2] - r[1]) for r in results if r[2] > r[1]) / len(results)
    ttft = sum(r[1] - r[0] for r in results) / len(results)
    print(f"{c:>7} {tokens:>7} {wall:>8.2f} {tokens / wall:>10.1f} {per:>13.1f} {ttft:>7.3f}")
PY
