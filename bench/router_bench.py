#!/usr/bin/env python3
"""Serving many models from one server (issue 16): memory and latency of a multi-model router.

Starts a server that serves every GGUF of a directory as its own model id (lazyslot
`serve --models-dir DIR --memory-budget 1GiB`, or llama-server's router `--models-dir DIR --models-max 2`),
waits for /health, then sends --requests short streamed completions from --clients concurrent clients,
spread round-robin over the models (request i goes to the i % n-th model id of GET /v1/models, sorted).
While it runs, the RSS of the server's whole process tree (the server pid and all its descendants: the
router spawns one child per model) is sampled from /proc every 100 ms.

Figures per server: requests ok / failed (failure messages counted by kind), RSS max and over time, latency
p50/p95 of the whole request, and time to first token (first streamed text chunk) split by the model's
status read from GET /models just before the request is sent: "loaded" is resident, any other status
(unloaded, loading, sleeping, ...) is dropped, no status field is unknown.

Output: a JSON file with every RSS sample and per-request record (--out-json), a markdown table on stdout
with one column per server, and an SVG chart of RSS over time, one line per server, with the budget drawn
as a horizontal line (--svg). Several servers run one after the other when --server-cmd is repeated
(each with its --label); --from-json adds runs saved earlier to the table and the chart without rerunning.

  bench/router_bench.py --server-cmd llama-server --label llama-server --models-dir /work/models/router8 \
      --requests 200 --out-json /tmp/router.json --svg /tmp/router.svg
  bench/router_side_by_side.sh      # both servers, models created if missing

--server-cmd is a full command line (shlex-split and run as is; it must listen on --port) or one of the
names `lazyslot` / `llama-server`, for which the standard flags are built here from --models-dir and --port
(binaries from $LAZYSLOT and $LLAMA_SERVER). Python 3 standard library only.
"""
import argparse
import http.client
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------- options

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server-cmd", action="append", default=[],
                   help="command line of a server, or lazyslot|llama-server (repeatable)")
    p.add_argument("--label", action="append", default=[], help="name of each --server-cmd's column")
    p.add_argument("--from-json", action="append", default=[], help="add the runs of an earlier --out-json")
    p.add_argument("--port", type=int, default=18460)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--models-dir", default="/work/models/router8")
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--prompt", default="Write one sentence about the sea.",
                   help="fixed prompt; the request number is appended so that no prefix cache helps")
    p.add_argument("--health-timeout", type=float, default=300.0, help="seconds to wait for /health 200")
    p.add_argument("--request-timeout", type=float, default=300.0, help="a request past this has failed")
    p.add_argument("--sample-ms", type=float, default=100.0, help="RSS sampling period")
    p.add_argument("--resident-probes", type=int, default=5,
                   help="after the load, this many requests in a row to the last model used (resident), for "
                        "the resident time to first token (round-robin over 8 models finds none resident)")
    p.add_argument("--budget-mib", type=float, default=1024 + 64, help="horizontal line on the chart")
    p.add_argument("--no-warm-cache", action="store_true",
                   help="do not read the model files into the page cache before each server starts")
    p.add_argument("--server-log", default="/tmp/router_bench.{label}.log")
    p.add_argument("--out-json", default="/tmp/router_bench.json")
    p.add_argument("--svg", default="/tmp/router_bench.svg")
    args = p.parse_args(argv)
    if not args.server_cmd and not args.from_json:
        p.error("give at least one --server-cmd or --from-json")
    while len(args.label) < len(args.server_cmd):
        args.label.append(server_name(args.server_cmd[len(args.label)]))
    return args


def server_name(cmd):
    """The label of a command line: its program's name (past an `env VAR=...` prefix)."""
    words = [w for w in shlex.split(cmd) if w != "env" and "=" not in w]
    return os.path.basename(words[0]) if words else "server"


def build_command(cmd, args):
    """A name (lazyslot, llama-server) becomes the standard command line; anything else is split as is."""
    common = ["-c", "4096", "-np", "2", "-t", "2", "--host", args.host, "--port", str(args.port)]
    if cmd == "lazyslot":
        here = os.path.dirname(os.path.abspath(__file__))
        binary = os.environ.get("LAZYSLOT", os.path.join(os.path.dirname(here), "build", "lazyslot"))
        return [binary, "serve", "--models-dir", args.models_dir, "--memory-budget", "1GiB"] + common
    if cmd == "llama-server":
        binary = os.environ.get("LLAMA_SERVER", "llama-server")
        return [binary, "--models-dir", args.models_dir, "--models-max", "2"] + common
    return shlex.split(cmd)


# ---------------------------------------------------------------------------------------------- HTTP

def http_call(args, method, path, body=None, timeout=10.0):
    """One plain request; returns (status, parsed JSON or raw text)."""
    conn = http.client.HTTPConnection(args.host, args.port, timeout=timeout)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read().decode("utf-8", "replace")
        try:
            return resp.status, json.loads(data)
        except ValueError:
            return resp.status, data
    finally:
        conn.close()


def wait_healthy(args, proc):
    deadline = time.monotonic() + args.health_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before /health answered 200")
        try:
            if http_call(args, "GET", "/health", timeout=2.0)[0] == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"/health not 200 after {args.health_timeout:.0f} s")


def list_models(args):
    """GET /models (falling back to /v1/models): {id: entry}."""
    for path in ("/models", "/v1/models"):
        try:
            status, body = http_call(args, "GET", path)
        except (OSError, http.client.HTTPException):
            continue
        if status == 200 and isinstance(body, dict) and isinstance(body.get("data"), list):
            return {m.get("id"): m for m in body["data"] if isinstance(m, dict)}
    return {}


def model_status(entry):
    """llama-server's router: "status": {"value": "loaded", "args": [...]}; a plain string is read too."""
    status = entry.get("status") if isinstance(entry, dict) else None
    if isinstance(status, dict):
        status = status.get("value")
    return status if isinstance(status, str) and status else "unknown"


def residency(status):
    return "unknown" if status == "unknown" else ("resident" if status == "loaded" else "dropped")


def error_message(body):
    """The message of an error reply ({"error": {"message": ...}} or {"error": "..."}), else the raw text."""
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return body.strip()[:200] or "(empty body)"
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        return str(err.get("message", err))[:200]
    return str(err)[:200]


def stream_completion(args, model, prompt):
    """One streamed /v1/completions request; returns a dict with timings and, on failure, an error."""
    rec = {"t_send": time.monotonic(), "ttft_s": None, "latency_s": None, "http_status": None, "chunks": 0,
           "text": "", "error": None}
    deadline = rec["t_send"] + args.request_timeout
    body = {"model": model, "prompt": prompt, "max_tokens": args.max_tokens, "temperature": 0, "stream": True}
    conn = http.client.HTTPConnection(args.host, args.port, timeout=args.request_timeout)
    try:
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        rec["http_status"] = resp.status
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: " + error_message(resp.read().decode("utf-8", "replace"))
            return rec
        read_events(resp, rec, deadline)
    except TimeoutError:
        rec["error"] = f"timeout after {args.request_timeout:.0f} s"
    except (OSError, http.client.HTTPException) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
        rec["latency_s"] = time.monotonic() - rec["t_send"]
    return rec


def read_events(resp, rec, deadline):
    """Reads the SSE stream: the first non-empty text chunk sets ttft_s; an error event, or an end without
    text or without [DONE], fails the record."""
    for raw in resp:
        if time.monotonic() > deadline:
            raise TimeoutError
        line = raw.decode("utf-8", "replace").strip()
        if line.startswith("error:"):
            line = "data:" + line[len("error:"):]
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            rec["done"] = True
            break
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if "error" in event:
            rec["error"] = "stream: " + error_message(event)
            return
        text = "".join(c.get("text") or "" for c in event.get("choices") or [])
        if text:
            rec["chunks"] += 1
            rec["text"] += text
            if rec["ttft_s"] is None:
                rec["ttft_s"] = time.monotonic() - rec["t_send"]
    if rec["ttft_s"] is None:
        rec["error"] = "stream ended without text"
    elif not rec.get("done"):
        rec["error"] = "stream cut before [DONE]"  # e.g. the router killed the model's process mid-request


# ---------------------------------------------------------------------------------------------- RSS

def process_tree(root):
    """The pid root and all its descendants (from /proc/*/stat's ppid)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def rss_of(pid):
    """(VmRSS, RssAnon, RssFile) in bytes, zeros for a process that is gone."""
    got = {"VmRSS:": 0, "RssAnon:": 0, "RssFile:": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(None, 1)[0] if line.strip() else ""
                if key in got:
                    got[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return got["VmRSS:"], got["RssAnon:"], got["RssFile:"]


class RssSampler(threading.Thread):
    """Samples the tree's summed RSS every period: samples = [[t_s, rss, anon, file, n_processes], ...]."""

    def __init__(self, root, period_s, t0):
        super().__init__(daemon=True)
        self.root, self.period_s, self.t0 = root, period_s, t0
        self.samples, self.stop_event = [], threading.Event()

    def sample(self):
        pids = process_tree(self.root)
        totals = [sum(v) for v in zip(*(rss_of(p) for p in pids))]
        self.samples.append([round(time.monotonic() - self.t0, 3)] + totals + [len(pids)])

    def run(self):
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.period_s)

    def stop(self):
        self.stop_event.set()
        self.join()


# ---------------------------------------------------------------------------------------------- one run

def warm_page_cache(models_dir):
    """Reads every GGUF once so that each server starts with the files in the page cache."""
    for name in sorted(os.listdir(models_dir)):
        if name.endswith(".gguf"):
            with open(os.path.join(models_dir, name), "rb") as f:
                while f.read(16 * MIB):
                    pass


def start_server(cmd, log_path):
    log = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def stop_server(proc):
    """SIGTERM, then SIGKILL (the whole process group, children included) after 10 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group of the session started for it: leftover children
    except ProcessLookupError:
        pass
    proc.wait()


def pick_model_ids(args):
    ids = sorted(list_models(args), key=lambda m: (len(m or ""), m or ""))
    if not ids:
        ids = sorted((n[:-5] for n in os.listdir(args.models_dir) if n.endswith(".gguf")),
                     key=lambda m: (len(m), m))
    return ids


class Clients:
    """--clients threads taking request numbers in order; request i goes to ids[i % len(ids)]. Each reads
    the model's status from GET /models just before sending its request."""

    def __init__(self, args, ids, t0):
        self.args, self.ids, self.t0 = args, ids, t0
        self.records, self.next_i, self.lock, self.stopped = [], 0, threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self.loop, args=(c,), daemon=True) for c in range(args.clients)]

    def take(self):
        with self.lock:
            if self.stopped.is_set() or self.next_i >= self.args.requests:
                return None
            self.next_i += 1
            return self.next_i - 1

    def loop(self, client):
        while (i := self.take()) is not None:
            model = self.ids[i % len(self.ids)]
            status = model_status(list_models(self.args).get(model))
            rec = stream_completion(self.args, model, f"{self.args.prompt} {i}")
            rec.update({"i": i, "client": client, "model": model, "status_before": status,
                        "residency": residency(status), "ok": rec["error"] is None})
            rec["t_send"] = round(rec["t_send"] - self.t0, 3)
            with self.lock:
                self.records.append(rec)
                done = len(self.records)
            if done % 20 == 0:
                n_ok = sum(r["ok"] for r in self.records)
                print(f"   {done}/{self.args.requests} requests, {n_ok} ok, "
                      f"{time.monotonic() - self.t0:.0f} s", file=sys.stderr)

    def run(self):
        for t in self.threads:
            t.start()
        for t in self.threads:
            t.join()

    def cancel(self):
        """No new requests; those in flight end when the server stops."""
        self.stopped.set()
        for t in self.threads:
            if t.ident is not None:
                t.join(15)

    def sorted_records(self):
        with self.lock:
            return sorted(self.records, key=lambda r: r["i"])


def resident_probes(args, records):
    """--resident-probes requests, one at a time, to the model the last request used."""
    if not records or args.resident_probes <= 0:
        return []
    model, probes = records[-1]["model"], []
    for k in range(args.resident_probes):
        status = model_status(list_models(args).get(model))
        rec = stream_completion(args, model, f"{args.prompt} again {k}")
        rec.update({"model": model, "status_before": status, "residency": residency(status),
                    "ok": rec["error"] is None})
        probes.append(rec)
    return probes


def run_server(args, label, server_cmd):
    cmd = build_command(server_cmd, args)
    if not args.no_warm_cache:
        warm_page_cache(args.models_dir)
    print(f"== {label}: {shlex.join(cmd)}", file=sys.stderr)
    t0 = time.monotonic()
    proc = start_server(cmd, args.server_log.format(label=label))
    sampler = RssSampler(proc.pid, args.sample_ms / 1000, t0)
    sampler.start()
    run = {"label": label, "cmd": cmd, "models_dir": args.models_dir, "error": None}
    clients = None
    try:
        wait_healthy(args, proc)
        run["healthy_s"] = round(time.monotonic() - t0, 3)
        sampler.sample()
        run["rss_after_start"] = sampler.samples[-1][1]
        ids = pick_model_ids(args)
        run["model_ids"] = ids
        run["models_before"] = list_models(args)
        print(f"== {label}: healthy after {run['healthy_s']:.1f} s, models {ids}", file=sys.stderr)
        run["requests_start_s"] = round(time.monotonic() - t0, 3)
        clients = Clients(args, ids, t0)
        clients.run()
        run["requests_end_s"] = round(time.monotonic() - t0, 3)
        run["probes"] = resident_probes(args, clients.sorted_records())
        run["models_after"] = list_models(args)
    except (RuntimeError, OSError) as e:
        run["error"] = str(e)
        print(f"== {label}: {e} (server log: {args.server_log.format(label=label)})", file=sys.stderr)
    except KeyboardInterrupt:
        run["error"] = "interrupted"  # what was measured so far is still written
        print(f"== {label}: interrupted", file=sys.stderr)
    finally:
        sampler.stop()
        if clients:
            clients.stopped.set()
        stop_server(proc)
        if clients:
            clients.cancel()
        run["exit_code"] = proc.returncode
        run["rss_samples"] = sampler.samples
        run["requests"] = clients.sorted_records() if clients else []
    run["summary"] = summarize(run)
    return run


# ---------------------------------------------------------------------------------------------- figures

def percentile(values, q):
    """Linear interpolation between the closest ranks; None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def error_kind(message):
    """Groups failure messages: numbers become N (so "needs 123 bytes" and "needs 456 bytes" count together),
    except an HTTP status."""
    head, sep, rest = message.partition(": ") if message.startswith("HTTP ") else ("", "", message)
    return (head + sep + re.sub(r"\d+(\.\d+)?", "N", rest))[:120]


def summarize(run):
    reqs = run.get("requests", [])
    ok = [r for r in reqs if r["ok"]]
    kinds = {}
    for r in reqs:
        if not r["ok"]:
            kinds[error_kind(r["error"])] = kinds.get(error_kind(r["error"]), 0) + 1
    s = {"error": run.get("error"), "requests": len(reqs), "ok": len(ok), "failed": len(reqs) - len(ok), "failures": kinds,
         "latency_p50_s": percentile([r["latency_s"] for r in ok], 50),
         "latency_p95_s": percentile([r["latency_s"] for r in ok], 95),
         "rss_max": max((x[1] for x in run["rss_samples"]), default=0),
         "processes_max": max((x[4] for x in run["rss_samples"]), default=0),
         "wall_s": (run["requests_end_s"] - run["requests_start_s"]) if "requests_end_s" in run else None}
    for kind in ("resident", "dropped", "unknown"):
        ttft = [r["ttft_s"] for r in ok if r["residency"] == kind]
        s[f"ttft_{kind}"] = {"n": len(ttft), "p50_s": percentile(ttft, 50), "p95_s": percentile(ttft, 95)}
    probes = [r for r in run.get("probes", []) if r["ok"] and r["residency"] == "resident"]
    ttft = [r["ttft_s"] for r in probes]
    s["ttft_probe"] = {"n": len(ttft), "p50_s": percentile(ttft, 50), "p95_s": percentile(ttft, 95),
                       "sent": len(run.get("probes", []))}
    s["statuses_before"] = {}
    for r in reqs:
        s["statuses_before"][r["status_before"]] = s["statuses_before"].get(r["status_before"], 0) + 1
    return s


def fmt_s(x):
    return "-" if x is None else (f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s")


def fmt_ttft(t):
    return f"n={t['n']}: p50 {fmt_s(t['p50_s'])}, p95 {fmt_s(t['p95_s'])}" if t["n"] else "n=0"


def table(runs):
    """Markdown, one column per server."""
    rows = [
        ("run error", lambda s, r: s.get("error") or "-"),
        ("requests ok / failed", lambda s, r: f"{s['ok']} / {s['failed']}"),
        ("failures by kind", lambda s, r: "; ".join(f"{n}x {k}" for k, n in s["failures"].items()) or "-"),
        ("wall time of the requests", lambda s, r: fmt_s(s["wall_s"])),
        ("latency p50 / p95", lambda s, r: f"{fmt_s(s['latency_p50_s'])} / {fmt_s(s['latency_p95_s'])}"),
        ("TTFT, model resident", lambda s, r: fmt_ttft(s["ttft_resident"])),
        ("TTFT, model dropped / not loaded", lambda s, r: fmt_ttft(s["ttft_dropped"])),
        ("TTFT, same model again (resident probes)", lambda s, r: fmt_ttft(s.get("ttft_probe", {"n": 0}))),
        ("TTFT, status unknown", lambda s, r: fmt_ttft(s["ttft_unknown"])),
        ("status before each request", lambda s, r: ", ".join(
            f"{k} {n}" for k, n in sorted(s["statuses_before"].items()))),
        ("RSS after start", lambda s, r: f"{r.get('rss_after_start', 0) / MIB:.0f} MiB"),
        ("RSS max (process tree)", lambda s, r: f"{s['rss_max'] / MIB:.0f} MiB"),
        ("processes max", lambda s, r: str(s["processes_max"])),
    ]
    out = ["| | " + " | ".join(r["label"] for r in runs) + " |",
           "|---|" + "---|" * len(runs)]
    for name, cell in rows:
        out.append(f"| {name} | " + " | ".join(cell(r["summary"], r).replace("|", "/") for r in runs) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- chart

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def nice_step(span, ticks=6):
    raw = span / ticks
    for m in (1, 2, 5, 10):
        step = m * 10 ** int(f"{raw:e}".split("e")[1])
        if step >= raw:
            return step
    return raw


def svg_chart(runs, budget_mib, title):
    """RSS MiB over time since the server started, one polyline per run, the budget as a dashed line."""
    w, h, left, right, top, bottom = 760, 400, 64, 150, 36, 44
    t_max = max([x[0] for r in runs for x in r["rss_samples"]] + [1])
    y_max = max([x[1] / MIB for r in runs for x in r["rss_samples"]] + [budget_mib]) * 1.1
    sx = lambda t: left + (w - left - right) * t / t_max
    sy = lambda m: h - bottom - (h - top - bottom) * m / y_max
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    out += svg_axes(sx, sy, t_max, y_max, left, w - right, top, h - bottom)
    out.append(f'<line x1="{left}" y1="{sy(budget_mib):.1f}" x2="{w - right}" y2="{sy(budget_mib):.1f}" '
               'stroke="#555" stroke-dasharray="6,4"/>')
    out.append(f'<text x="{w - right + 6}" y="{sy(budget_mib) + 4:.1f}" fill="#555">budget '
               f'{budget_mib:.0f} MiB</text>')
    for k, r in enumerate(runs):
        color = COLORS[k % len(COLORS)]
        pts = " ".join(f"{sx(x[0]):.1f},{sy(x[1] / MIB):.1f}" for x in r["rss_samples"])
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        y = top + 30 + 18 * k
        out.append(f'<line x1="{w - right + 6}" y1="{y}" x2="{w - right + 26}" y2="{y}" stroke="{color}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{w - right + 30}" y="{y + 4}">{xml_escape(r["label"])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def svg_axes(sx, sy, t_max, y_max, x0, x1, y0, y1):
    out = []
    step = nice_step(t_max)
    t = 0.0
    while t <= t_max + 1e-9:
        out.append(f'<line x1="{sx(t):.1f}" y1="{y1}" x2="{sx(t):.1f}" y2="{y1 + 4}" stroke="black"/>')
        out.append(f'<text x="{sx(t):.1f}" y="{y1 + 17}" text-anchor="middle">{t:g}</text>')
        t += step
    step = nice_step(y_max)
    m = 0.0
    while m <= y_max + 1e-9:
        out.append(f'<line x1="{x0}" y1="{sy(m):.1f}" x2="{x1}" y2="{sy(m):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{sy(m) + 4:.1f}" text-anchor="end">{m:g}</text>')
        m += step
    out.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
    out.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 34}" text-anchor="middle">seconds since start</text>')
    out.append(f'<text x="16" y="{(y0 + y1) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(y0 + y1) / 2})">RSS of the process tree (MiB)</text>')
    return out


def xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------------- main

def on_sigterm(signum, frame):
    raise KeyboardInterrupt  # so that the running server is stopped on the way out


def main(argv):
    signal.signal(signal.SIGTERM, on_sigterm)
    args = parse_args(argv)
    runs = []
    for path in args.from_json:
        with open(path) as f:
            runs += json.load(f)["runs"]
    for run in runs:
        run["summary"] = summarize(run)  # with this version's figures
    for label, server_cmd in zip(args.label, args.server_cmd):
        runs.append(run_server(args, label, server_cmd))
        if runs[-1]["error"] == "interrupted":
            break
    config = {k: getattr(args, k) for k in ("requests", "clients", "max_tokens", "prompt", "models_dir",
                                            "request_timeout", "sample_ms", "budget_mib")}
    with open(args.out_json, "w") as f:
        json.dump({"config": config, "runs": runs}, f, indent=1)
    with open(args.svg, "w") as f:
        f.write(svg_chart(runs, args.budget_mib, f"{args.requests} requests over {args.clients} clients, "
                          f"round-robin over the models of {os.path.basename(args.models_dir.rstrip('/'))}"))
    print(f"{args.requests} requests, {args.clients} clients, max_tokens {args.max_tokens}, "
          f"models in {args.models_dir}\n")
    print(table(runs))
    print(f"\nraw samples and records: {args.out_json}; chart: {args.svg}", file=sys.stderr)
    return 0 if not any(r.get("error") for r in runs) else 1  # failed requests are a figure, not an error


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
