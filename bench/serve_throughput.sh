#!/usr/bin/env bash
# Generation throughput of a running `lazyslot serve` (or llama-server) for 1, 2 and 4 concurrent streams:
# each stream asks for N tokens (ignore_eos) and the table gives aggregate and per-stream tokens/s.
# Usage: bench/serve_throughput.sh [URL] [TOKENS] [CONCURRENCIES...]
#   e.g. lazyslot synth --preset qwen3-0.6b --type q8_0 -o /tmp/q06.gguf
#        lazyslot serve -m /tmp/q06.gguf --parallel 4 --ctx-size 8192 &
#        bench/serve_throughput.sh http://127.0.0.1:8080 128 1 2 4
# Needs curl and python3. The server needs --parallel >= the largest concurrency, or streams queue.
set -euo pipefail
URL=${1:-http://127.0.0.1:8080}
TOKENS=${2:-128}
shift $(( $# > 2 ? 2 : $# )) || true
CONC=("$@")
[ ${#CONC[@]} -eq 0 ] && CONC=(1 2 4)
KEY_HEADER=()
[ -n "${LAZYSLOT_API_KEY:-}" ] && KEY_HEADER=(-H "Authorization: Bearer ${LAZYSLOT_API_KEY}")

curl -sf "${KEY_HEADER[@]}" "$URL/health" >/dev/null || { echo "no healthy server at $URL" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One streamed request; writes "<first-token seconds> <total seconds> <completion tokens>".
one_stream() {
  local out=$1 prompt=$2
  local body
  body=$(printf '{"prompt": "%s", "max_tokens": %d, "temperature": 0, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}' "$prompt" "$TOKENS")
  curl -sN "${KEY_HEADER[@]}" -H 'Content-Type: application/json' -d "$body" "$URL/v1/completions" |
    python3 -c '
import sys, time, json
t0 = time.monotonic(); first = None; n = 0
for line in sys.stdin:
    if not line.startswith("data: ") or line.startswith("data: [DONE]"): continue
    j = json.loads(line[6:])
    if j.get("usage"): n = j["usage"]["completion_tokens"]
    if first is None and any(c.get("text") for c in j.get("choices", [])): first = time.monotonic() - t0
print(f"{first or 0:.4f} {time.monotonic() - t0:.4f} {n}")' >"$out"
}

# Warm-up (page in the weights).
one_stream "$TMP/warm" "Hello"

printf '%-8s %-10s %-12s %-14s %-16s %-10s\n' streams tokens wall_s "agg tok/s" "per-stream tok/s" "ttft_s"
for c in "${CONC[@]}"; do
  start=$(date +%s.%N)
  for i in $(seq 1 "$c"); do
    one_stream "$TMP/r$c-$i" "Stream $i: once upon a time" &
  done
  wait
  end=$(date +%s.%N)
  cat "$TMP"/r"$c"-* | python3 -c "
import sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
wall = $end - $start
tok = sum(r[2] for r in rows)
per = sum(r[2] / (r[1] - r[0]) for r in rows if r[1] > r[0]) / len(rows)
ttft = sum(r[0] for r in rows) / len(rows)
print(f'{$c:<8d} {int(tok):<10d} {wall:<12.2f} {tok / wall:<14.1f} {per:<16.1f} {ttft:<10.3f}')"
done
