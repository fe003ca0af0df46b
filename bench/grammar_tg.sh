#!/usr/bin/env bash
# Token generation with and without a JSON schema, against a running server (docs/bench.md, issue 13): the
# same chat request, alternately free and with response_format json_schema, ROUNDS times each; prints the
# median of the server's own predicted_per_second (timings) for both and their ratio. Sampling is random
# (temperature 1, a seed per round) so the schema's strings and numbers are filled with varied tokens.
# Usage: bench/grammar_tg.sh URL [ROUNDS] [MAX_TOKENS]
#   lazyslot serve -m qwen3-0.6b-vocab-q8_0.gguf -np 1 -c 4096 -t 2 --port 8080 &
#   bench/grammar_tg.sh http://127.0.0.1:8080 5 128
# The model should have the full 151,936-token Qwen3 vocabulary (synth --preset qwen3-0.6b --vocab-from
# ../shared/models/qwen3-vocab-tiny-q8_0.gguf). Needs python3 (standard library only).
set -euo pipefail
URL=${1:?usage: grammar_tg.sh URL [ROUNDS] [MAX_TOKENS]}
ROUNDS=${2:-5}
MAX_TOKENS=${3:-128}

exec python3 - "$URL" "$ROUNDS" "$MAX_TOKENS" <<'PY'
import http.client, json, statistics, sys, urllib.parse

url, rounds, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = urllib.parse.urlparse(url)

def post(path, body):
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=1200)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"{path}: HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)

schema = {"type": "object", "properties": {
    "title": {"type": "string"}, "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
    "rating": {"type": "number"}, "genres": {"type": "array", "items": {"enum": ["drama", "comedy", "horror"]}},
    "cast": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "role": {"type": "string"}}, "required": ["name", "role"]}},
    "summary": {"type": "string"}},
    "required": ["title", "year", "rating", "genres", "cast", "summary"], "additionalProperties": False}
messages = [{"role": "user", "content": "Describe a film as JSON."}]

free, constrained, n_free, n_con = [], [], [], []
for i in range(rounds):
    for mode in ("free", "schema"):
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 1.0, "seed": 1000 + i}
        if mode == "free":
            body["ignore_eos"] = True
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "film", "schema": schema}}
        r = post("/v1/chat/completions", body)
        t = r["timings"]
        (free if mode == "free" else constrained).append(t["predicted_per_second"])
        (n_free if mode == "free" else n_con).append(t["predicted_n"])
        if mode == "schema":
            json.loads(r["choices"][0]["message"]["content"])  # must be JSON (it is complete or cut at max_tokens)

mf, mc = statistics.median(free), statistics.median(constrained)
print(f"tg free    : median {mf:7.2f} tok/s over {rounds} runs (tokens {statistics.median(n_free):.0f})")
print(f"tg schema  : median {mc:7.2f} tok/s over {rounds} runs (tokens {statistics.median(n_con):.0f})")
print(f"schema cost: {100.0 * (1.0 - mc / mf):.1f}% of tg (ratio {mc / mf:.3f})")
PY
