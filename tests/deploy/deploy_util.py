"""Helpers shared by tests/deploy/*_test.py (Python 3 standard library only).

The skip rule mirrors tests/test_util.h: missing ../shared data (or a missing tool such as nginx) FAILS when
the environment has CI=true and otherwise prints a loud SKIP and exits SKIP_CODE, which CMake registers as
the test's SKIP_RETURN_CODE (ctest would count a plain exit 0 as a pass).
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

SKIP_CODE = 77


def in_ci():
    return os.environ.get("CI") == "true"


def skip_or_fail(reason):
    if in_ci():
        print(f"FAIL: {reason} (CI=true, so this is not skipped)", flush=True)
        sys.exit(1)
    print(f"\n*** SKIPPING: {reason} ***\n", flush=True)
    sys.exit(SKIP_CODE)


def base_args(description, seconds):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--binary", required=True, help="the lazyslot executable")
    p.add_argument("--shared", required=True, help="the ../shared directory (models/ inside)")
    p.add_argument("--seconds", type=float, default=seconds, help="length of the load phase")
    p.add_argument("--threads", type=int, default=1, help="-t of each replica (2 cores here: keep it 1)")
    return p


def require_model(args, name):
    path = os.path.join(args.shared, "models", name)
    if not os.path.isfile(path):
        skip_or_fail(f"shared test data missing: {path}")
    if not os.access(args.binary, os.X_OK):
        print(f"FAIL: {args.binary} is not an executable", flush=True)
        sys.exit(1)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


class Replica:
    """One `lazyslot serve` process on a loopback port, its stderr/stdout in a log file."""

    def __init__(self, binary, model, port, log_path, extra):
        self.binary, self.model, self.port, self.log_path, self.extra = binary, model, port, log_path, extra
        self.proc = None

    def start(self, timeout=60):
        self.log = open(self.log_path, "ab")
        cmd = [self.binary, "serve", "-m", self.model, "--port", str(self.port)] + self.extra
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica on {self.port} exited with {self.proc.returncode}; see {self.log_path}")
            try:
                status, _ = get(self.port, "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"replica on {self.port} not healthy after {timeout} s")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=60):
        """Waits for the process to exit (after a signal sent with self.proc.send_signal); kills it after
        `timeout` s (then None). Returns the exit code."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def connect_refused(port, within=2.0):
    """True once a TCP connect to 127.0.0.1:port is refused (tried every 20 ms for `within` seconds)."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def post_json(conn, path, body, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    conn.request("POST", path, body=json.dumps(body), headers=h)
    return conn.getresponse()
