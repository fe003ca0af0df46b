#!/usr/bin/env python3
"""Conversations that start with one long system prompt (issue 38): KV and memory against their number.

Starts one server (lazyslot with shared prefix pages, lazyslot with --no-kv-share, or llama-server), waits for
/health, then opens --conversations conversations one after the other: each is the same --system-tokens
token ids followed by --tail-tokens of its own, sent to /completion (greedy, --predict tokens). After each it
reads the server's VmRSS and Pss (/proc/PID/status, /proc/PID/smaps_rollup: Pss counts a page mapped at
several addresses once) and, from lazyslot's /metrics, the distinct KV bytes committed and the bytes shared.
Per conversation it records timings.cache_n (prompt tokens not computed) and timings.prompt_ms (time to the
first token, near enough: the prompt pass). With --pin-slots conversation i names slot i (id_slot), as a
service keeping each user's conversation in its slot would: every conversation then stays held; without it
each server picks the slot, and a server without sharing hands a new conversation the slot of the last one
that holds the prompt (its cache gone).

Output: a markdown table per server on stdout and, with --out-json, every figure. Several servers run one
after the other when --server is repeated (lazyslot, lazyslot-noshare, llama-server; binaries from
$LAZYSLOT and $LLAMA_SERVER).

  bench/shared_prefix.py --model /work/models/qwen3-0.6b-q4_k.gguf --server lazyslot \
      --server lazyslot-noshare --server llama-server --out-json /tmp/shared_prefix.json

Token ids are fixed pseudo-random ids below 1,000, so any vocabulary of that size takes them. Python 3
standard library only.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_http import metric, proc_kib, request  # noqa: E402


def tokens(n, salt):
    return [3 + (i * 53 + salt * 17 + (i * i) % 89) % 997 for i in range(n)]


def command(kind, args):
    common = ["-m", args.model, "-np", str(args.parallel), "-c", str(args.ctx), "-t", str(args.threads),
              "--port", str(args.port)]
    if kind.startswith("lazyslot"):
        binary = os.environ.get("LAZYSLOT", os.path.join(HERE, "..", "build", "lazyslot"))
        cmd = [binary, "serve"] + common + ["--metrics"]
        if kind == "lazyslot-noshare":
            cmd.append("--no-kv-share")
        return cmd, None
    binary = os.environ.get("LLAMA_SERVER")
    if not binary:
        sys.exit("llama-server: set LLAMA_SERVER to its binary")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(binary))
    return [binary] + common + ["--metrics"], env


def run(kind, args):
    cmd, env = command(kind, args)
    log = open(f"/tmp/shared_prefix.{kind}.log", "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(3000):
            try:
                if request(args.port, "GET", "/health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            sys.exit(f"{kind}: no /health after 300 s; see /tmp/shared_prefix.{kind}.log")
        rows = [{"n": 0, "rss": proc_kib(p.pid, "status", "VmRSS"), "pss": proc_kib(p.pid, "smaps_rollup", "Pss")}]
        system = tokens(args.system_tokens, 1)
        for i in range(args.conversations):
            prompt = system + tokens(args.tail_tokens, 100 + i)
            body = {"prompt": prompt, "n_predict": args.predict, "temperature": 0, "cache_prompt": True}
            if args.pin_slots:
                body["id_slot"] = i % args.parallel
            st, body = request(args.port, "POST", "/completion", body)
            if st != 200:
                sys.exit(f"{kind}: conversation {i}: HTTP {st}: {body[:300]!r}")
            t = json.loads(body)["timings"]
            row = {"n": i + 1, "cache_n": t.get("cache_n"), "prompt_n": t.get("prompt_n"),
                   "prompt_ms": t.get("prompt_ms"), "rss": proc_kib(p.pid, "status", "VmRSS"),
                   "pss": proc_kib(p.pid, "smaps_rollup", "Pss")}
            if kind.startswith("lazyslot"):
                m = request(args.port, "GET", "/metrics")[1].decode()
                row["kv"] = metric(m, "lazyslot:kv_committed_bytes")
                row["kv_shared"] = metric(m, "lazyslot:kv_shared_bytes")
            rows.append(row)
        return {"server": kind, "cmd": " ".join(shlex.quote(c) for c in cmd), "rows": rows}
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()


def table(result):
    mib = lambda kib: f"{kib / 1024:,.0f}"
    print(f"\n**{result['server']}**: `{result['cmd']}`\n")
    print("| conversations | cache_n | prompt ms | KV committed MiB | KV shared MiB | VmRSS MiB | Pss MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in result["rows"]:
        kv = f"{r['kv'] / 2**20:,.1f}" if r.get("kv") is not None else "-"
        sh = f"{r['kv_shared'] / 2**20:,.1f}" if r.get("kv_shared") is not None else "-"
        ms = f"{r['prompt_ms']:,.0f}" if r.get("prompt_ms") is not None else "-"
        print(f"| {r['n']} | {r.get('cache_n', '-')} | {ms} | {kv} | {sh} | {mib(r['rss'])} | {mib(r['pss'])} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--server", action="append", choices=["lazyslot", "lazyslot-noshare", "llama-server"])
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--system-tokens", type=int, default=2000)
    ap.add_argument("--tail-tokens", type=int, default=50)
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=40960)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18471)
    ap.add_argument("--pin-slots", action="store_true", help="conversation i names slot i (id_slot)")
    ap.add_argument("--out-json")
    args = ap.parse_args()
    results = [run(kind, args) for kind in (args.server or ["lazyslot"])]
    for r in results:
        table(r)
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
