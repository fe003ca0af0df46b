#!/usr/bin/env python3
"""Fleet test: N `lazyslot serve` replicas behind nginx (deploy/nginx.conf), under multi-turn chat load.

Runs once per nginx configuration (--configs): `non_idempotent` is deploy/nginx.conf as is; `plain` is the same
with `proxy_next_upstream error timeout http_503;`, which never re-sends a POST that reached a replica, so a
drain loses nothing there only if no request reaches the draining replica at all (its listener closes at once,
its idle keep-alive connections too). Each run: 16 client threads (for --seconds, default 28) each hold a
conversation under its own X-Session-Id, alternating streamed and whole answers. At --kill-at seconds one
replica gets SIGTERM while it has requests in flight: its port must refuse new connections at once, its
--health-port say "draining" (/livez 200) until it exits 0 having drained them, and it is then restarted on the
same port. Checks: every request is a 200 through nginx (nothing lost), every stream ends with `data: [DONE]`,
usage is consistent, >= 90% of follow-up turns reuse a kept KV prefix (cached_tokens > 0). Prints the figures
quoted in docs/deploy.md, per configuration. Standard library only.
"""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_util import (Replica, base_args, connect_refused, free_port, get, percentile, post_json, require_model,
                         skip_or_fail)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(REPO, "deploy", "nginx.conf")
API_KEY = "fleet-test-key"
MAX_TOKENS = 16
LONG_TOKENS = 1500  # the request kept in flight across the drain
TURNS = 8  # then a new conversation (and session id): prompts stay a few hundred tokens, far below a slot
ANIMALS = ["cat", "dog", "bird", "fish", "frog", "bear", "lion", "duck"]
RETRY_LINE = "proxy_next_upstream error timeout http_503 non_idempotent;"
# The nginx configurations the test runs: the file as is, and the same without non_idempotent.
CONFIGS = {"non_idempotent": RETRY_LINE, "plain": "proxy_next_upstream error timeout http_503;"}
FOLLOW_UPS = ["What happened next?", "And then?", "Tell me more.", "Why?"]


def render_nginx_conf(template, listen_port, ports, tmp, retry_line=RETRY_LINE):
    """deploy/nginx.conf with this run's ports and every path inside tmp (see its placeholder list), and
    `retry_line` in place of its proxy_next_upstream directive."""
    if template.count(RETRY_LINE) != 1:
        raise RuntimeError(f"deploy/nginx.conf must contain `{RETRY_LINE}` once")
    template = template.replace(RETRY_LINE, retry_line)
    out, in_block = [], False
    for line in template.splitlines():
        m = re.match(r"(\s*)server\s+\S+(.*?);\s*# @replica", line)
        if m:
            if not in_block:  # the first line of a block stands for the whole list
                out += [f"{m.group(1)}server 127.0.0.1:{p}{m.group(2)};" for p in ports]
            in_block = True
            continue
        in_block = False
        if re.match(r"\s*listen\s.*# @listen", line):
            line = f"        listen 127.0.0.1:{listen_port};"
        elif line.startswith("user "):
            # Only a root master switches users; keep the workers as root then, so they can use tmp.
            line = "user root;" if os.geteuid() == 0 else ""
        out.append(line.replace("/var/log/nginx/", tmp + "/").replace("/var/lib/nginx/", tmp + "/"))
    return "\n".join(out) + "\n"


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.records, self.failures = [], []

    def add(self, rec):
        with self.lock:
            self.records.append(rec)
            if rec["problems"]:
                self.failures.append(rec)


def chat(conn, sid, messages, stream):
    """One request; returns a record (problems empty when it is a correct 200)."""
    body = {"model": "fleet", "messages": messages, "max_tokens": MAX_TOKENS}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    rec = {"stream": stream, "problems": [], "content": "", "usage": None, "upstream": "", "ttft": None}
    t0 = time.monotonic()
    try:
        r = post_json(conn, "/v1/chat/completions", body,
                      {"X-Session-Id": sid, "Authorization": "Bearer " + API_KEY})
        rec["status"], rec["upstream"] = r.status, r.getheader("X-Lazyslot-Upstream", "")
        if r.status != 200:
            rec["problems"].append(f"HTTP {r.status}: {r.read()[:200]!r}")
        elif not stream:
            d = json.loads(r.read())
            rec["content"], rec["usage"] = d["choices"][0]["message"].get("content") or "", d.get("usage")
        else:
            done, pieces = False, 0
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data: "):
                    continue
                if line == b"data: [DONE]":
                    done = True
                    continue
                ev = json.loads(line[6:])
                if ev.get("usage"):
                    rec["usage"] = ev["usage"]
                for ch in ev.get("choices", []):
                    piece = ch.get("delta", {}).get("content")
                    if piece:
                        pieces += 1
                        rec["content"] += piece
                        rec["ttft"] = rec["ttft"] or time.monotonic() - t0
            rec["pieces"] = pieces
            if not done:
                rec["problems"].append("stream did not end with data: [DONE]")
    except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError) as e:
        rec["status"] = None
        rec["problems"].append(f"{type(e).__name__}: {e}")
    rec["latency"] = time.monotonic() - t0
    u = rec["usage"]
    if rec["status"] == 200:
        if not u:
            rec["problems"].append("no usage")
        elif not (0 < u["completion_tokens"] <= MAX_TOKENS) or \
                u["total_tokens"] != u["prompt_tokens"] + u["completion_tokens"]:
            rec["problems"].append(f"inconsistent usage {u}")
    return rec


def client(i, port, deadline, results):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    n, conv = 0, 0
    while time.time() < deadline:
        conv += 1
        sid = f"fleet-{i}-{conv}-{os.urandom(3).hex()}"
        messages = [{"role": "user", "content": f"Story {sid}: tell me about a {ANIMALS[i % len(ANIMALS)]}."}]
        prev = None
        for turn in range(1, TURNS + 1):
            if time.time() >= deadline:
                break
            n += 1
            rec = chat(conn, sid, messages, stream=(n + i) % 2 == 0)
            rec.update(thread=i, turn=turn, t=time.time(), prev=prev)
            results.add(rec)
            if rec["problems"]:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                break
            prev = rec
            messages += [{"role": "assistant", "content": rec["content"]},
                         {"role": "user", "content": FOLLOW_UPS[turn % len(FOLLOW_UPS)]}]
    conn.close()


def long_request(port, drain, started, n=LONG_TOKENS):
    """A streamed completion sent to one replica directly; `started` is set once its first event arrived."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    tokens, done = None, False
    try:
        r = post_json(conn, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": n, "ignore_eos": True,
                                                "stream": True, "stream_options": {"include_usage": True}},
                      {"Authorization": "Bearer " + API_KEY})
        while r.status == 200:
            line = r.readline().strip()
            if not line:
                if r.isclosed():
                    break
                continue
            started.set()
            if line == b"data: [DONE]":
                done = True
            elif line.startswith(b"data: ") and json.loads(line[6:]).get("usage"):
                tokens = json.loads(line[6:])["usage"]["completion_tokens"]
        drain["long"] = (r.status, tokens if done else "no [DONE]")
    except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
        drain["long"] = (None, f"{type(e).__name__}: {e}")
    finally:
        started.set()
        conn.close()


def watch_health_port(port, drain, exited):
    """Polls --health-port every 10 ms from the SIGTERM until the process exits; records the first answer
    given while draining (/health 503 "draining" with /livez 200), else the last thing seen."""
    drain["health"], drain["livez"] = "no answer before the exit", None
    while not exited.is_set():
        try:
            st, body = get(port, "/health", timeout=2)
            state = (st, json.loads(body).get("status"))
            drain["health"] = state
            if state == (503, "draining"):
                drain["livez"] = get(port, "/livez", timeout=2)[0]
                return
        except (OSError, ValueError, http.client.HTTPException) as e:
            drain["health"] = f"{type(e).__name__}: {e}"
        time.sleep(0.01)


def drain_and_restart(victim, at, drain):
    """SIGTERM `victim` at time `at` while a long stream runs on it, check its drain, restart it."""
    time.sleep(max(0, at - time.time()))
    # A long request sent to the victim directly is sure to be in flight when the signal comes; the drain
    # must let it run to its end (the fleet's own 16-token requests finish in tens of ms).
    started = threading.Event()
    long_req = threading.Thread(target=long_request, args=(victim.port, drain, started))
    long_req.start()
    started.wait(30)
    t0 = time.time()
    # The health port is watched from a thread of its own, started with the signal: on a loaded machine the
    # main port's check below can outlast a short drain, and a probe after it would find the process gone.
    exited = threading.Event()
    watcher = threading.Thread(target=watch_health_port, args=(victim.health_port, drain, exited))
    victim.proc.send_signal(signal.SIGTERM)
    watcher.start()
    drain["refused"] = connect_refused(victim.port)
    drain["rc"] = victim.wait(timeout=60)
    exited.set()
    watcher.join()
    drain["exit_s"] = time.time() - t0
    drain["health_closed"] = connect_refused(victim.health_port, within=1)
    long_req.join()
    log = victim.log_text()
    m = re.search(r"draining: (\d+) request\(s\) in flight", log)
    drain["in_flight"] = int(m.group(1)) if m else None
    m = re.search(r"drain: every request finished in (\S+) s", log)
    drain["finished_line"] = m.group(0) if m else None
    t1 = time.time()
    victim.start()
    drain["restart_s"], drain["restarted_at"] = time.time() - t1, time.time()


def routing_checks(port, n_replicas):
    """After the load: no X-Session-Id -> spread by least_conn; one session id -> one replica; no key -> 401."""
    def send(headers):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            r = post_json(conn, "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}, headers)
            r.read()
            return r.status, r.getheader("X-Lazyslot-Upstream", "")
        finally:
            conn.close()
    auth = {"Authorization": "Bearer " + API_KEY}
    plain = [send(auth) for _ in range(3 * n_replicas)]
    pinned = [send(dict(auth, **{"X-Session-Id": "routing-check"})) for _ in range(3 * n_replicas)]
    nokey = send({})
    spread = {u for st, u in plain if st == 200}
    pin = {u for st, u in pinned if st == 200}
    print(f"routing: {len(plain)} requests without X-Session-Id went to {sorted(spread)}; {len(pinned)} with one "
          f"session id to {sorted(pin)}; without the API key: HTTP {nokey[0]}")
    return [
        ("requests without X-Session-Id reach several replicas (least_conn)",
         all(st == 200 for st, _ in plain) and len(spread) >= min(2, n_replicas)),
        ("requests with one X-Session-Id all reach one replica", all(st == 200 for st, _ in pinned) and len(pin) == 1),
        ("Authorization reaches the replicas (no key: 401, not retried)", nokey[0] == 401 and "," not in nokey[1]),
    ]


def summarize_nginx_log(path):
    """How often nginx saw a replica fail (each such attempt was retried on another replica)."""
    kinds = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = re.search(r"\[(error|warn)\] \S+ (?:\*\d+ )?([^,(]+)", line)
            if m:
                kinds[m.group(2).strip()] = kinds.get(m.group(2).strip(), 0) + 1
    print(f"nginx error log: {kinds or 'empty'}")


def main():
    p = base_args(__doc__.splitlines()[0], seconds=28)
    p.add_argument("--configs", default="non_idempotent,plain",
                   help="nginx configurations to run, comma-separated: " + ", ".join(CONFIGS))
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--parallel", type=int, default=4, help="-np of each replica")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--kill-at", type=float, default=9, help="seconds into the load to SIGTERM one replica")
    p.add_argument("--keep", action="store_true", help="keep the logs and nginx files after a pass")
    p.add_argument("--strict-cache", action="store_true",
                   help="also require the whole previous prompt reused in >= 90%% of follow-ups (needs enough "
                        "slots: --parallel 8 for 16 clients on 3 replicas)")
    args = p.parse_args()
    model = require_model(args, "stories260K.gguf")
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not nginx:
        skip_or_fail("nginx is not installed (Debian: apt-get install nginx-light)")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        p.error(f"--configs: unknown {unknown}; known: {', '.join(CONFIGS)}")
    summary, ok = [], True
    for name in configs:
        print(f"\n=== nginx configuration '{name}': {CONFIGS[name]} ===", flush=True)
        passed, figures = run_config(args, model, nginx, name)
        summary.append((name, passed, figures))
        ok = ok and passed
    print("\nsummary (figures in docs/deploy.md):")
    for name, passed, f in summary:
        print(f"  {name:15s} requests {f.get('requests', 0)}, lost {f.get('lost', '?')}, retried by nginx "
              f"{f.get('retried', 0)}, drained replica: {f.get('drain', '?')} -> {'PASS' if passed else 'FAIL'}")
    print("fleet_test: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


def run_config(args, model, nginx, name):
    """One run with nginx configuration `name` (CONFIGS); returns (passed, figures)."""
    tmp = tempfile.mkdtemp(prefix=f"lazyslot-fleet-{name}-")
    ports = []
    while len(ports) < 2 * args.replicas + 1:
        port = free_port()
        if port not in ports:
            ports.append(port)
    nginx_port, ports, health_ports = ports[0], ports[1:args.replicas + 1], ports[args.replicas + 1:]
    flags = ["-np", str(args.parallel), "-c", str(2048 * args.parallel), "--drain-timeout", "30",
             "-t", str(args.threads), "--api-key", API_KEY]
    replicas = []
    for port, hp in zip(ports, health_ports):
        replicas.append(Replica(args.binary, model, port, f"{tmp}/replica-{port}.log",
                                flags + ["--health-port", str(hp)]))
        replicas[-1].health_port = hp
    ngx, ok, figures = None, False, {}
    try:
        for r in replicas:
            r.start()
        conf = f"{tmp}/nginx.conf"
        with open(TEMPLATE) as f, open(conf, "w") as out:
            out.write(render_nginx_conf(f.read(), nginx_port, ports, tmp, CONFIGS[name]))
        base = [nginx, "-c", conf, "-p", tmp + "/"]
        t = subprocess.run(base + ["-t", "-g", f"pid {tmp}/nginx.pid;"], capture_output=True, text=True)
        print(t.stderr.strip())
        if t.returncode != 0:
            raise RuntimeError("nginx -t rejected the generated config")
        ngx = subprocess.Popen(base + ["-g", f"daemon off; pid {tmp}/nginx.pid;"],
                               stdout=open(f"{tmp}/nginx.out", "wb"), stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                if get(nginx_port, "/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        ok = run_load(args, nginx_port, replicas, figures)
    finally:
        if ngx:
            ngx.send_signal(signal.SIGQUIT)
            ngx.wait(30)
        rcs = [r.stop(signal.SIGTERM) for r in replicas]
        summarize_nginx_log(f"{tmp}/lazyslot-error.log")
        print(f"replicas stopped with exit codes {rcs}; logs and nginx files in {tmp}")
        ok = ok and all(rc == 0 for rc in rcs)
    if ok and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"configuration '{name}': " + ("PASS" if ok else "FAIL"))
    return ok, figures


def run_load(args, nginx_port, replicas, figures):
    results, drain = Results(), {}
    start = time.time()
    deadline = start + args.seconds
    threads = [threading.Thread(target=client, args=(i, nginx_port, deadline, results))
               for i in range(args.clients)]
    victim = replicas[len(replicas) // 2]
    killer = threading.Thread(target=drain_and_restart, args=(victim, start + args.kill_at, drain))
    for th in threads + [killer]:
        th.start()
    for th in threads + [killer]:
        th.join()
    elapsed = time.time() - start

    recs = results.records
    ok200 = [r for r in recs if r["status"] == 200 and not r["problems"]]
    streams = [r for r in ok200 if r["stream"]]
    follow = [r for r in ok200 if r["turn"] >= 2 and r["prev"]]
    hit = [r for r in follow if r["usage"]["prompt_tokens_details"]["cached_tokens"] > 0]
    whole = [r for r in follow if r["usage"]["prompt_tokens_details"]["cached_tokens"] >=
             r["prev"]["usage"]["prompt_tokens"] - 1]
    same = [r for r in follow if r["upstream"].split(", ")[-1] == r["prev"]["upstream"].split(", ")[-1]]
    exact = [r for r in streams if r["usage"]["completion_tokens"] == r["pieces"]]
    retried = [r for r in recs if "," in r["upstream"]]
    after = [r for r in ok200 if r["t"] > drain.get("restarted_at", 1e18) and
             r["upstream"].endswith(f":{victim.port}")]
    share = len(hit) / len(follow) if follow else 0
    lat = [r["latency"] * 1000 for r in ok200]
    ttft = [r["ttft"] * 1000 for r in streams if r["ttft"]]
    tokens = sum(r["usage"]["completion_tokens"] for r in ok200)

    def pct(a, b):
        return f"{a} of {b} ({100.0 * a / b:.1f}%)" if b else f"{a} of 0"

    print(f"fleet: {len(replicas)} replicas x -np {args.parallel} (stories260K, -t {args.threads}) behind nginx, "
          f"{args.clients} clients, {elapsed:.1f} s")
    print(f"requests: {len(recs)} ({len(recs) / elapsed:.1f}/s), 200 and correct: {len(ok200)}, "
          f"failed: {len(results.failures)}, streamed: {len(streams)}, retried by nginx: {len(retried)}")
    print(f"latency ms: p50 {percentile(lat, 0.5):.1f}, p95 {percentile(lat, 0.95):.1f}, "
          f"max {max(lat, default=0):.1f}; stream first token p50 {percentile(ttft, 0.5):.1f}, "
          f"p95 {percentile(ttft, 0.95):.1f}; completion tokens/s through nginx {tokens / elapsed:.0f}")
    print(f"follow-up turns: cached_tokens > 0 in {pct(len(hit), len(follow))}; whole previous prompt reused "
          f"in {pct(len(whole), len(follow))}; same replica as the previous turn in {pct(len(same), len(follow))}")
    if follow and len(whole) < 0.9 * len(follow):
        print("note: cached_tokens > 0 also counts reusing only the chat template's common preamble from another "
              "conversation's slot; 'whole previous prompt reused' is the stricter figure (docs/deploy.md)")
    per, follow_ids, whole_ids = {}, {id(r) for r in follow}, {id(r) for r in whole}
    for r in ok200:
        u = r["upstream"].split(", ")[-1]
        per.setdefault(u, [0, 0, 0])[0] += 1
        if id(r) in follow_ids:
            per[u][1] += 1
            per[u][2] += id(r) in whole_ids
    print("per replica (requests, follow-ups, whole prompt reused): " +
          ", ".join(f"{u} {n}/{f}/{w}" for u, (n, f, w) in sorted(per.items())))
    print(f"streams: usage.completion_tokens == content chunks in {pct(len(exact), len(streams))}")
    print(f"drain: replica :{victim.port} had {drain.get('in_flight')} request(s) in flight, exit code "
          f"{drain.get('rc')} after {drain.get('exit_s', 0):.2f} s, log: {drain.get('finished_line')!r}; "
          f"restarted in {drain.get('restart_s', 0):.2f} s, then served {len(after)} request(s); "
          f"long request during the drain: {drain.get('long')}")
    print(f"drain sockets: port refused new connections at once: {drain.get('refused')}; health port during "
          f"the drain: /health {drain.get('health')}, /livez {drain.get('livez')}; health port closed after "
          f"the exit: {drain.get('health_closed')}")
    figures.update(requests=len(recs), lost=len(results.failures), retried=len(retried),
                   drain=f"{drain.get('in_flight')} in flight, exit {drain.get('rc')} after "
                         f"{drain.get('exit_s', 0):.2f} s")
    for r in results.failures[:10]:
        print(f"  failed: thread {r['thread']} turn {r['turn']} stream={r['stream']} "
              f"upstream={r['upstream']!r}: {'; '.join(r['problems'])}")

    checks = [
        ("every request 200 and well-formed", not results.failures and len(recs) > 0),
        ("every stream ended with [DONE]", not any("[DONE]" in p for r in recs for p in r["problems"])),
        (">= 90% of follow-up turns have cached_tokens > 0", share >= 0.9),
        (">= 90% of follow-up turns reuse the whole previous prompt (--strict-cache)",
         not args.strict_cache or len(whole) >= 0.9 * len(follow)),
        (f"the {LONG_TOKENS}-token request in flight during the drain completed", drain.get("long") == (200, LONG_TOKENS)),
        ("drained replica exited 0", drain.get("rc") == 0),
        ("drained replica's port refused new connections at once", drain.get("refused") is True),
        ("its --health-port said draining (503) and /livez 200 during the drain",
         drain.get("health") == (503, "draining") and drain.get("livez") == 200),
        ("its --health-port closed with the process", drain.get("health_closed") is True),
        ("drained replica logged that its requests finished", bool(drain.get("finished_line"))),
        ("restarted replica serves again", bool(after) or deadline - drain.get("restarted_at", 0) < 15),
    ]
    checks += routing_checks(nginx_port, len(replicas))
    for name, passed in checks:
        print(f"  [{'ok' if passed else 'FAILED'}] {name}")
    return all(passed for _, passed in checks)


if __name__ == "__main__":
    sys.exit(main())
