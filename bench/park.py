#!/usr/bin/env python3
"""Conversations that return after their KV was released (issue 39): time to first token of a returning turn
and the process's memory over time, for lazyslot parking to disk (--kv-park), lazyslot recomputing, and
llama-server with its host-RAM prompt cache (--cache-ram, 8 GiB by default).

Starts one server at a time and opens --conversations conversations of --prompt-tokens distinct token ids
each (greedy, --predict tokens, return_tokens). Then every conversation returns once, in a seeded random
order: its first prompt, its answer's tokens and --turn-tokens new ones. A returning turn asks for one token,
so its wall time (client side, restore included) is its time to first token; timings.cache_n says how much of
the prompt was not computed. A sampler thread reads the server's VmRSS and Pss every --sample-ms the whole
time. lazyslot runs with --kv-budget (the issue: 1 GiB on -np 4), so conversations must leave memory.

Output: a markdown summary per server on stdout and, with --out-json, every figure (per turn, and the memory
samples with the phase they fall in). Binaries from $LAZYSLOT and $LLAMA_SERVER.

  LLAMA_SERVER=/path/to/llama-server bench/park.py --model /work/models/qwen3-0.6b-q4_k.gguf \
      --server lazyslot-park --server lazyslot --server llama-server --conversations 64 --out-json park.json

Python 3 standard library only.
"""
import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_http import metric, proc_kib, request  # noqa: E402
args_vocab = 997  # token ids stay below this (--vocab)


def tokens(n, salt):
    return [3 + (i * 53 + salt * 131 + (i * i + salt) % 89) % args_vocab for i in range(n)]


def command(kind, args, park_dir):
    common = ["-m", args.model, "-np", str(args.parallel), "-c", str(args.ctx), "-t", str(args.threads),
              "--port", str(args.port)]
    if kind.startswith("lazyslot"):
        binary = os.environ.get("LAZYSLOT", os.path.join(HERE, "..", "build", "lazyslot"))
        cmd = [binary, "serve"] + common + ["--metrics", "--kv-budget", args.kv_budget]
        if kind == "lazyslot-park":
            cmd += ["--kv-park", park_dir]
            if args.park_max:
                cmd += ["--kv-park-max", args.park_max]
            if args.park_after:
                cmd += ["--kv-park-after", str(args.park_after)]
        return cmd, None
    binary = os.environ.get("LLAMA_SERVER")
    if not binary:
        sys.exit("llama-server: set LLAMA_SERVER to its binary")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(binary))
    return [binary] + common + ["--metrics"], env


class Sampler(threading.Thread):
    def __init__(self, pid, every_s):
        super().__init__(daemon=True)
        self.pid, self.every_s, self.phase = pid, every_s, "start"
        self.samples, self.stop = [], threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.stop.is_set():
            self.samples.append({"t": round(time.monotonic() - self.t0, 3), "phase": self.phase,
                                 "rss": proc_kib(self.pid, "status", "VmRSS"),
                                 "pss": proc_kib(self.pid, "smaps_rollup", "Pss")})
            self.stop.wait(self.every_s)


def run(kind, args):
    park_dir = tempfile.mkdtemp(prefix="lazyslot-park-", dir=args.park_root)
    cmd, env = command(kind, args, park_dir)
    log_path = f"/tmp/park_bench.{kind}.log"
    log = open(log_path, "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    sampler = Sampler(p.pid, args.sample_ms / 1000)
    try:
        for _ in range(3000):
            try:
                if request(args.port, "GET", "/health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            sys.exit(f"{kind}: no /health after 300 s; see {log_path}")
        sampler.start()
        convs, first, returns = [], [], []
        sampler.phase = "first turns"
        for i in range(args.conversations):
            prompt = tokens(args.prompt_tokens, i + 1)
            t0 = time.monotonic()
            st, body = request(args.port, "POST", "/completion",
                               {"prompt": prompt, "n_predict": args.predict, "temperature": 0,
                                "cache_prompt": True, "return_tokens": True})
            if st != 200:
                sys.exit(f"{kind}: conversation {i}: HTTP {st}: {body[:300]!r}")
            j = json.loads(body)
            convs.append(prompt + j["tokens"])
            first.append({"i": i, "wall_ms": (time.monotonic() - t0) * 1000, "cache_n": j["timings"]["cache_n"]})
            print(f"  {kind}: conversation {i + 1}/{args.conversations} opened", file=sys.stderr)
        sampler.phase = "returns"
        order = list(range(args.conversations))
        random.Random(args.seed).shuffle(order)
        for k, i in enumerate(order):
            prompt = convs[i] + tokens(args.turn_tokens, 1000 + i)
            t0 = time.monotonic()
            st, body = request(args.port, "POST", "/completion",
                               {"prompt": prompt, "n_predict": 1, "temperature": 0, "cache_prompt": True})
            wall = (time.monotonic() - t0) * 1000
            if st != 200:
                sys.exit(f"{kind}: return of {i}: HTTP {st}: {body[:300]!r}")
            t = json.loads(body)["timings"]
            returns.append({"i": i, "wall_ms": wall, "cache_n": t["cache_n"], "prompt_n": t["prompt_n"]})
            print(f"  {kind}: return {k + 1}/{args.conversations}: {wall:,.0f} ms, cache_n {t['cache_n']}",
                  file=sys.stderr)
        sampler.phase = "end"
        time.sleep(args.sample_ms / 1000 * 2)
        extra = {}
        if kind.startswith("lazyslot"):
            m = request(args.port, "GET", "/metrics")[1].decode()
            for name in ("kv_parks_total", "kv_resumes_total", "kv_parked_bytes", "kv_parked_files",
                         "kv_park_failures_total", "kv_peak_committed_bytes", "kv_budget_bytes",
                         "weights_resident_bytes"):
                extra[name] = metric(m, "lazyslot:" + name)
        return {"server": kind, "cmd": " ".join(shlex.quote(c) for c in cmd), "first": first,
                "returns": returns, "memory": sampler.samples, "metrics": extra}
    finally:
        sampler.stop.set()
        p.terminate()
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
        shutil.rmtree(park_dir, ignore_errors=True)


def summary(result):
    r = result["returns"]
    walls = [x["wall_ms"] for x in r]
    mem = result["memory"]
    peak = max(s["rss"] for s in mem) / 1024 if mem else 0
    peak_pss = max(s["pss"] for s in mem) / 1024 if mem else 0
    end = mem[-1]["rss"] / 1024 if mem else 0
    print(f"\n**{result['server']}**: `{result['cmd']}`\n")
    print("| returning turns | TTFT median ms | p90 ms | min / max ms | cache_n median | peak VmRSS / Pss MiB | "
          "VmRSS at the end MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    p90 = sorted(walls)[int(0.9 * (len(walls) - 1))] if walls else 0
    print(f"| {len(r)} | {statistics.median(walls):,.0f} | {p90:,.0f} | {min(walls):,.0f} / {max(walls):,.0f} | "
          f"{statistics.median(x['cache_n'] for x in r):,.0f} | {peak:,.0f} / {peak_pss:,.0f} | {end:,.0f} |")
    if result.get("metrics"):
        print("\n" + ", ".join(f"{k} {v:,.0f}" for k, v in result["metrics"].items() if v is not None))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--server", action="append", choices=["lazyslot-park", "lazyslot", "llama-server"])
    ap.add_argument("--conversations", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=4000)
    ap.add_argument("--turn-tokens", type=int, default=50)
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=16384)
    ap.add_argument("--kv-budget", default="1GiB")
    ap.add_argument("--park-max", default="", help="--kv-park-max (default: none)")
    ap.add_argument("--park-after", type=float, default=0, help="--kv-park-after S (default: not given)")
    ap.add_argument("--park-root", default=None, help="where the park folder is made (default: $TMPDIR)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18472)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample-ms", type=int, default=250)
    ap.add_argument("--vocab", type=int, default=997, help="token ids stay below this (a tiny model: 500)")
    ap.add_argument("--out-json")
    args = ap.parse_args()
    global args_vocab
    args_vocab = args.vocab
    results = []
    for kind in args.server or ["lazyslot-park"]:
        results.append(run(kind, args))
        if args.out_json:  # after each server, so a long run keeps what it measured
            with open(args.out_json, "w") as f:
                json.dump(results, f, indent=1)
    for r in results:
        summary(r)


if __name__ == "__main__":
    main()
