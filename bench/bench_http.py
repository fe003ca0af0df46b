"""Helpers shared by the Python benchmarks that drive a server over HTTP (shared_prefix.py, park.py): one
request on a fresh connection, a /proc field of the server process, one sample of a Prometheus exposition.
Python 3 standard library only."""
import http.client
import json


def request(port, method, path, body=None, timeout=1800):
    """(status, body bytes) of one request to 127.0.0.1:port, JSON body if given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def proc_kib(pid, path, field):
    """A "Field: N kB" line of /proc/PID/<path> (status: VmRSS; smaps_rollup: Pss), 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def metric(text, name):
    """The first sample of `name` in a Prometheus text exposition, or None."""
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None
