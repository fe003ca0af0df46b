#!/usr/bin/env python3
"""A small MCP server over stdio for lazyslot's MCP tests (server_mcp_test.cpp).

JSON-RPC 2.0, one message a line. Each request is answered on a thread of its own, so replies can come back
out of order (the client must match them by id), and every tools/call reply is preceded by a progress
notification written in the same write() (the client must skip it). Tools:
  greet {name}          -> "hi <name> from <server label>"
  add {a, b}            -> the sum, as text
  pid {}                -> this process's id (a new one after a restart)
  env {name}            -> the value of an environment variable
  sleep {seconds}       -> waits, then "slept"
  fail {}               -> a result with isError: true
  crash {}              -> the process exits at once with status 7, without answering
Options: --label TEXT (in greet's answer), --exit-at-start (write to stderr, exit 3 before reading),
--grandchild (start a long-lived child that inherits stdin/stdout/stderr and keeps them open).
"""
import json
import os
import subprocess
import sys
import threading
import time

label = "fixture"
args = sys.argv[1:]
if "--label" in args:
    label = args[args.index("--label") + 1]
if "--exit-at-start" in args:
    sys.stderr.write("fixture: refusing to start (--exit-at-start)\n")
    sys.stderr.flush()
    sys.exit(3)
if "--grandchild" in args:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

TOOLS = [
    {"name": "greet", "description": "Greets someone",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "add", "description": "Adds two numbers",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
    {"name": "pid", "description": "The server's process id"},
    {"name": "env", "description": "An environment variable",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "sleep", "description": "Waits", "inputSchema": {"type": "object",
                                                              "properties": {"seconds": {"type": "number"}}}},
    {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exits the server", "inputSchema": {"type": "object", "properties": {}}},
]

out_lock = threading.Lock()


def send(*messages):
    data = "".join(json.dumps(m) + "\n" for m in messages).encode()
    with out_lock:
        os.write(1, data)


def text(req_id, s, is_error=False):
    result = {"content": [{"type": "text", "text": s}]}
    if is_error:
        result["isError"] = True
    return {"jsonrpc": "2.0", "id": req_id, "result": result}


def call(req_id, name, a):
    if name == "greet":
        return text(req_id, "hi %s from %s" % (a.get("name", "?"), label))
    if name == "add":
        return text(req_id, str(a.get("a", 0) + a.get("b", 0)))
    if name == "pid":
        return text(req_id, str(os.getpid()))
    if name == "env":
        return text(req_id, os.environ.get(a.get("name", ""), "<unset>"))
    if name == "sleep":
        time.sleep(float(a.get("seconds", 1)))
        return text(req_id, "slept")
    if name == "fail":
        return text(req_id, "fail: this tool always fails", is_error=True)
    if name == "crash":
        sys.stderr.write("fixture: crashing on request\n")
        sys.stderr.flush()
        os._exit(7)
    return {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32602, "message": "unknown tool " + name}}


def handle(req):
    req_id, method, params = req.get("id"), req.get("method"), req.get("params") or {}
    if req_id is None:
        return  # a notification
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": req_id, "result": {
            "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
            "serverInfo": {"name": "lazyslot-fixture", "version": "1"}}})
    elif method == "tools/list":
        # Two pages, to exercise nextCursor.
        if params.get("cursor") == "page2":
            send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": TOOLS[4:]}})
        else:
            send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": TOOLS[:4], "nextCursor": "page2"}})
    elif method == "tools/call":
        reply = call(req_id, params.get("name"), params.get("arguments") or {})
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
        send(note, reply)
    else:
        send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "no method " + str(method)}})


def main():
    sys.stderr.write("fixture %s ready\n" % label)
    sys.stderr.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            continue
        threading.Thread(target=handle, args=(req,), daemon=True).start()


if __name__ == "__main__":
    main()
