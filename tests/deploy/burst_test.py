#!/usr/bin/env python3
"""Burst test: one `lazyslot serve -np 4 --max-queue 16` hammered directly by 64 client threads.

Each thread sends short completions for --seconds (default 30) and retries at once on a 503, as an
impatient client would. Checks: every request gets an HTTP status and it is 200 or 503 (nothing else),
no connection is reset or fails at the socket level, every thread gets at least one 200 (fairness; reported
with the per-thread minimum), and a normal request succeeds afterwards. Standard library only.
"""
import http.client
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_util import Replica, base_args, free_port, get, percentile, post_json, require_model

BODY = {"prompt": "Once upon a time", "max_tokens": 8}


def client(i, port, deadline, stats):
    ok = busy = other = 0
    errors, lat = {}, []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while time.time() < deadline:
        t0 = time.monotonic()
        try:
            r = post_json(conn, "/v1/completions", BODY)
            r.read()
            if r.status == 200:
                ok += 1
                lat.append(time.monotonic() - t0)
            elif r.status == 503:
                busy += 1  # and retry at once
            else:
                other += 1
                errors[f"HTTP {r.status}"] = errors.get(f"HTTP {r.status}", 0) + 1
        except (OSError, http.client.HTTPException) as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.close()
    stats[i] = {"ok": ok, "busy": busy, "other": other, "errors": errors, "lat": lat}


def metric_lines(port):
    status, body = get(port, "/metrics")
    wanted = ("lazyslot:requests_rejected_total", "lazyslot:connections_rejected_total",
              "lazyslot:http_responses_total", "lazyslot:requests_total ")
    return [ln for ln in body.decode().splitlines() if ln.startswith(wanted)] if status == 200 else []


def main():
    p = base_args(__doc__.splitlines()[0], seconds=30)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--keep", action="store_true", help="keep the server log after a pass")
    args = p.parse_args()
    model = require_model(args, "stories260K.gguf")
    tmp = tempfile.mkdtemp(prefix="lazyslot-burst-")
    port = free_port()
    srv = Replica(args.binary, model, port, f"{tmp}/server.log",
                  ["-np", "4", "--max-queue", "16", "-c", "8192", "-t", str(args.threads)])
    srv.start()
    stats = {}
    try:
        start = time.time()
        threads = [threading.Thread(target=client, args=(i, port, start + args.seconds, stats))
                   for i in range(args.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.time() - start
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        r = post_json(conn, "/v1/completions", BODY)
        r.read()
        after = r.status
        conn.close()
        metrics = metric_lines(port)
    finally:
        rc = srv.stop(signal.SIGTERM)

    ok = sum(s["ok"] for s in stats.values())
    busy = sum(s["busy"] for s in stats.values())
    other = sum(s["other"] for s in stats.values())
    errors = {}
    for s in stats.values():
        for k, v in s["errors"].items():
            errors[k] = errors.get(k, 0) + v
    socket_errors = sum(v for k, v in errors.items() if not k.startswith("HTTP "))
    per = sorted(s["ok"] for s in stats.values())
    lat = [x * 1000 for s in stats.values() for x in s["lat"]]
    log = srv.log_text()
    warnings = [ln for ln in log.splitlines() if re.match(r"[WE] ", ln)]

    print(f"burst: 1 replica -np 4 --max-queue 16 (stories260K, -t {args.threads}), {args.clients} clients "
          f"retrying at once on 503, {elapsed:.1f} s")
    print(f"responses: 200 {ok} ({ok / elapsed:.1f}/s), 503 {busy}, other status {other}; "
          f"socket-level errors {socket_errors} {errors or ''}")
    print(f"200 per thread: min {per[0]}, p50 {per[len(per) // 2]}, max {per[-1]}; threads with none: "
          f"{sum(1 for x in per if x == 0)}")
    print(f"200 latency ms: p50 {percentile(lat, 0.5):.1f}, p95 {percentile(lat, 0.95):.1f}")
    print(f"request afterwards: HTTP {after}; server exit code {rc}; "
          f"server log warnings/errors: {len(warnings)}")
    for ln in warnings[:10]:
        print("  " + ln)
    for ln in metrics:
        print("  " + ln)

    checks = [
        ("every request got 200 or 503", other == 0),
        ("no socket-level errors (resets, disconnects, timeouts)", socket_errors == 0),
        ("every thread got at least one 200", per[0] >= 1 or args.seconds < 10),
        ("a normal request succeeds afterwards", after == 200),
        ("server exited 0", rc == 0),
    ]
    for name, passed in checks:
        print(f"  [{'ok' if passed else 'FAILED'}] {name}")
    passed = all(c for _, c in checks)
    if passed and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"server log: {tmp}/server.log")
    print("burst_test: " + ("PASS" if passed else "FAIL"))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
