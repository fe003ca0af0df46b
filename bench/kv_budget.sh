#!/usr/bin/env bash
# --kv-budget in practice: starts `lazyslot serve` with more slots and context than the machine could ever
# commit (default --parallel 8 --ctx-size 262144 --kv-budget 1GiB), sends N+1 concurrent requests of P prompt
# tokens (distinct random token ids, so no prefix is shared) and G generated tokens, polls /metrics while they
# run, then sends one request that can never fit. Prints what each request got, how long it waited, and the
# most KV committed (the cache's own tracking), resident (mincore) and reserved against the budget.
# Usage: bench/kv_budget.sh LAZYSLOT_BINARY MODEL [PARALLEL] [CTX] [BUDGET] [PROMPT_TOKENS] [GEN_TOKENS]
#   build/lazyslot synth --preset qwen3-0.6b --type q8_0 -o /tmp/qwen3-0.6b-q8_0.gguf
#   bench/kv_budget.sh build/lazyslot /tmp/qwen3-0.6b-q8_0.gguf 8 262144 1GiB 1000 64
# Needs python3 (standard library only). Extra serve flags can be given in LAZYSLOT_SERVE_ARGS (e.g. "-t 2").
set -euo pipefail
BIN=${1:?lazyslot binary}
MODEL=${2:?model.gguf}
PARALLEL=${3:-8}
CTX=${4:-262144}
BUDGET=${5:-1GiB}
PROMPT=${6:-1000}
GEN=${7:-64}

exec python3 - "$BIN" "$MODEL" "$PARALLEL" "$CTX" "$BUDGET" "$PROMPT" "$GEN" <<'PY'
import http.client, json, os, random, re, socket, subprocess, sys, threading, time

binary, model, parallel, ctx, budget, n_prompt, n_gen = sys.argv[1:8]
parallel, ctx, n_prompt, n_gen = int(parallel), int(ctx), int(n_prompt), int(n_gen)

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
args = [binary, "serve", "-m", model, "--parallel", str(parallel), "--ctx-size", str(ctx), "--kv-budget",
        budget, "--port", str(port), "--max-queue", str(4 * parallel)] + os.environ.get(
            "LAZYSLOT_SERVE_ARGS", "").split()
log = open("/tmp/kv_budget_server.log", "w")
server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

def call(method, path, body=None, timeout=3600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, json.dumps(body) if body is not None else None,
                 {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data

try:
    for _ in range(600):
        try:
            if call("GET", "/health", timeout=2)[0] == 200:
                break
        except OSError:
            pass
        if server.poll() is not None:
            raise SystemExit("server exited; see /tmp/kv_budget_server.log")
        time.sleep(0.5)
    models = json.loads(call("GET", "/v1/models")[1])
    vocab = models["data"][0].get("meta", {}).get("n_vocab") or 1000
    rng = random.Random(1)

    def metrics():
        text = call("GET", "/metrics")[1].decode()
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r"^(lazyslot:[a-z_]+) ([0-9.e+]+)$", text, re.M)}

    m0 = metrics()
    peak = {"kv_resident_bytes": 0, "kv_budget_used_bytes": 0, "process_resident_memory_bytes": 0,
            "queue": 0, "busy": 0}
    done = threading.Event()

    def poll():
        while not done.is_set():
            m = metrics()
            for k in ("kv_resident_bytes", "kv_budget_used_bytes", "process_resident_memory_bytes"):
                peak[k] = max(peak[k], m.get("lazyslot:" + k, 0))
            peak["queue"] = max(peak["queue"], m.get("lazyslot:requests_deferred", 0))
            slots = json.loads(call("GET", "/slots")[1])
            peak["busy"] = max(peak["busy"], sum(1 for s in slots if s["is_processing"]))
            time.sleep(0.25)

    results = [None] * (parallel + 1)

    def request(i):
        prompt = [rng.randrange(10, vocab - 10) for _ in range(n_prompt)]
        t0 = time.monotonic()
        status, data = call("POST", "/v1/completions", {"prompt": prompt, "max_tokens": n_gen,
                                                         "temperature": 0, "ignore_eos": True})
        t1 = time.monotonic()
        j = json.loads(data)
        results[i] = (status, t1 - t0, j.get("usage", {}), j.get("error", {}).get("message", ""))

    poller = threading.Thread(target=poll)
    poller.start()
    t_start = time.monotonic()
    clients = [threading.Thread(target=request, args=(i,)) for i in range(parallel + 1)]
    for c in clients:
        c.start()
        time.sleep(0.05)  # the last one is admitted last
    for c in clients:
        c.join()
    wall = time.monotonic() - t_start
    done.set()
    poller.join()
    m1 = metrics()
    never = [rng.randrange(10, vocab - 10) for _ in range(min(ctx // parallel - 8, 10 * n_prompt))]
    t0 = time.monotonic()
    status, data = call("POST", "/v1/completions", {"prompt": never, "max_tokens": 8})
    t_never = time.monotonic() - t0

    MiB = 1 << 20
    print(f"serve --parallel {parallel} --ctx-size {ctx} --kv-budget {budget}: "
          f"{m0.get('lazyslot:kv_reserved_bytes', 0) / MiB:.0f} MiB of KV reserved, "
          f"budget {m0.get('lazyslot:kv_budget_bytes', 0) / MiB:.0f} MiB, "
          f"{m0.get('lazyslot:kv_committed_bytes', 0) / MiB:.0f} MiB committed at start")
    print(f"\n{parallel + 1} concurrent requests of {n_prompt} prompt + {n_gen} generated tokens "
          f"(wall {wall:.1f} s):\n")
    print("| request | HTTP | seconds | prompt tokens | completion tokens |")
    print("|---:|---:|---:|---:|---:|")
    for i, (st, sec, usage, err) in enumerate(results):
        print(f"| {i} | {st} | {sec:.1f} | {usage.get('prompt_tokens', '-')} | "
              f"{usage.get('completion_tokens', '-')} |" + (f" {err}" if err else ""))
    print(f"\n| figure | MiB |\n|---|---:|")
    print(f"| budget | {m0.get('lazyslot:kv_budget_bytes', 0) / MiB:.1f} |")
    print(f"| peak KV committed (cache tracking) | {m1.get('lazyslot:kv_peak_committed_bytes', 0) / MiB:.1f} |")
    print(f"| peak KV resident (mincore, polled every 0.25 s) | {peak['kv_resident_bytes'] / MiB:.1f} |")
    print(f"| peak KV reserved by admitted requests | {peak['kv_budget_used_bytes'] / MiB:.1f} |")
    print(f"| peak process RSS | {peak['process_resident_memory_bytes'] / MiB:.1f} |")
    print(f"\nmost slots busy at once: {peak['busy']}")
    print(f"\nrequest that can never fit ({len(never)} prompt tokens): HTTP {status} after {t_never:.2f} s: "
          f"{json.loads(data).get('error', {}).get('message', data[:200])}")
    ok = (all(r[0] == 200 for r in results) and status == 503 and
          m1.get("lazyslot:kv_peak_committed_bytes", 0) <= m0.get("lazyslot:kv_budget_bytes", 0) and
          peak["kv_resident_bytes"] <= m0.get("lazyslot:kv_budget_bytes", 0))
    print("\nresult:", "OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)
finally:
    server.terminate()
    server.wait()
PY
