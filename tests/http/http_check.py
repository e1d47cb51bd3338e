#!/usr/bin/env python3
"""A real HTTP client for the endpoint tests (tests/unit/http_endpoint_test.cpp).

Usage: http_check.py CASE PORT [ARG]
  pages        every page answers as documented (200 with the right content, 404, 405, 400)
  malformed    garbage and oversized requests get 400 and 413
  slow         a client that never finishes its request is disconnected; prints the delay
  concurrent N N clients at once, each on its own connection; prints "200=a 503=b"
  refused      nothing listens on PORT any more
  app_pages    the application's pages (render and respond) and a built-in page switched off
  paging POOL  /processes and /tree page through a tree larger than max_page_entries
  console...   the console's cases (console_check.py)
Exits 0 on success, 1 with a message on stderr otherwise.
"""
import http.client
import json
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def fail(msg):
    print("http_check: " + msg, file=sys.stderr)
    sys.exit(1)


def get(port, path, method="GET"):
    c = http.client.HTTPConnection(HOST, port, timeout=30)
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type", ""), body


def expect(cond, msg):
    if not cond:
        fail(msg)


def pages(port):
    status, ctype, body = get(port, "/metrics")
    expect(status == 200, f"/metrics: {status}")
    expect(ctype.startswith("text/plain; version=0.0.4"), f"/metrics content type {ctype}")
    text = body.decode()
    expect("# TYPE beamlet_processes gauge" in text, "/metrics: no beamlet_processes")
    expect('beamlet_supervisor_children{supervisor="app_sup",kind="supervisor"}' in text,
           "/metrics: no supervisor counters")

    status, ctype, body = get(port, "/processes?n=3&by=message_queue_len")
    expect(status == 200 and ctype == "application/json", f"/processes: {status} {ctype}")
    doc = json.loads(body)
    expect(doc["by"] == "message_queue_len", "/processes: by")
    procs = doc["processes"]
    expect(len(procs) == 3, f"/processes: {len(procs)} entries")
    expect(procs[0]["registered_name"] == "backlog" and procs[0]["value"] == 500,
           f"/processes: first is {procs[0]}")
    for key in ("pid", "value", "initial_call", "status", "message_queue_len", "waiting_for"):
        expect(key in procs[0], "/processes: no " + key)

    status, _, body = get(port, "/tree")
    expect(status == 200, f"/tree: {status}")
    tree = json.loads(body)
    roots = [s for s in tree["supervisors"] if s["registered_name"] == "app_sup"]
    expect(len(roots) == 1, f"/tree: app_sup not a root: {tree}")
    app = roots[0]
    expect(app["kind"] == "supervisor" and app["children_total"] == 2, f"/tree: app_sup {app}")
    kinds = sorted(c.get("kind", "worker") for c in app["children"])
    expect(kinds == ["dynamic_supervisor", "worker"], f"/tree: children {kinds}")
    pool = [c for c in app["children"] if c.get("kind") == "dynamic_supervisor"][0]
    expect(pool["children_total"] == 3 and len(pool["children"]) == 2,
           f"/tree: pool (max_children=2 in the test) {pool}")
    for c in pool["children"]:
        expect(c["status"] in ("waiting", "runnable", "running"), f"/tree: status {c}")
        expect("message_queue_len" in c, "/tree: no message_queue_len")

    status, _, body = get(port, "/tree?max_children=0")
    expect(status == 200 and json.loads(body)["supervisors"][0]["children"] == [],
           "/tree?max_children=0")
    status, _, _ = get(port, "/nowhere")
    expect(status == 404, f"/nowhere: {status}")
    status, _, _ = get(port, "/metrics", method="POST")
    expect(status == 405, f"POST: {status}")
    status, _, _ = get(port, "/processes?n=abc")
    expect(status == 400, f"n=abc: {status}")
    status, _, _ = get(port, "/processes?by=color")
    expect(status == 400, f"by=color: {status}")
    status, _, body = get(port, "/metrics", method="HEAD")
    expect(status == 200 and body == b"", f"HEAD: {status} {len(body)}")
    # Keep-alive: two requests on one connection.
    c = http.client.HTTPConnection(HOST, port, timeout=30)
    for _ in range(2):
        c.request("GET", "/")
        r = c.getresponse()
        expect(r.status == 200, "keep-alive")
        r.read()
    c.close()
    print("ok")


def raw(port, data, read_timeout=10):
    s = socket.create_connection((HOST, port), timeout=read_timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def malformed(port):
    r = raw(port, b"GARBAGE\r\n\r\n")
    expect(r.startswith(b"HTTP/1.1 400"), f"garbage: {r[:40]!r}")
    r = raw(port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
    expect(r.startswith(b"HTTP/1.1 413"), f"oversized: {r[:40]!r}")
    r = raw(port, b"GET /metrics HTTP/9.9\r\n\r\n")
    expect(r.startswith(b"HTTP/1.1 400") or r.startswith(b"HTTP/1.1 505") or r.startswith(b"HTTP/"),
           f"bad version: {r[:40]!r}")
    print("ok")


def slow(port):
    s = socket.create_connection((HOST, port), timeout=30)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
    t0 = time.monotonic()
    data = s.recv(1024)  # b"" once the server hangs up
    elapsed = time.monotonic() - t0
    s.close()
    expect(data == b"", f"slow: got {data[:40]!r}")
    print(f"closed after {elapsed:.2f} s")


def concurrent(port, n):
    counts = {}
    errors = []
    lock = threading.Lock()
    start = threading.Barrier(n)

    def one():
        try:
            start.wait()
            status, _, _ = get(port, "/metrics")
            with lock:
                counts[status] = counts.get(status, 0) + 1
        except Exception as e:  # noqa: BLE001 - any failure is reported
            with lock:
                errors.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(not errors, f"{len(errors)} clients failed, e.g. {errors[:3]}")
    expect(set(counts) <= {200, 503}, f"statuses {counts}")
    expect(sum(counts.values()) == n, f"answers {counts}")
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))


def refused(port):
    try:
        socket.create_connection((HOST, port), timeout=5).close()
    except OSError:
        print("ok")
        return
    fail("still listening")


def app_pages(port):
    # The application's pages (http_endpoint_options::pages), as the test registers them.
    status, ctype, body = get(port, "/app/echo?x=1&y=2")
    expect(status == 200, f"/app/echo: {status}")
    expect(ctype == "text/plain", f"/app/echo content type {ctype}")
    expect(body == b"query=x=1&y=2", f"/app/echo body {body!r}")
    status, _, body = get(port, "/app/throws")
    expect(status == 500, f"/app/throws: {status}")
    expect(b"render failed" in body, f"/app/throws body {body!r}")
    status, ctype, body = get(port, "/")
    expect(status == 200 and ctype.startswith("text/html"), f"/: {status} {ctype}")
    expect(body == b"<p>replaced</p>", f"/ body {body!r}")
    status, _, _ = get(port, "/metrics")
    expect(status == 200, f"/metrics next to application pages: {status}")
    # A page that chooses its status, and a built-in page switched off.
    status, ctype, body = get(port, "/app/secret")
    expect(status == 403 and ctype == "text/plain" and body == b"forbidden",
           f"/app/secret: {status} {ctype} {body!r}")
    status, _, body = get(port, "/app/secret?token=yes")
    expect(status == 200 and body == b"the secret", f"/app/secret?token=yes: {status} {body!r}")
    status, _, _ = get(port, "/tree")
    expect(status == 404, f"/tree switched off: {status}")
    print("ok")


def paging(port, pool):
    # /processes pages through every process, max_page_entries at a time (3 in the test).
    status, _, _ = get(port, "/processes?n=4")
    expect(status == 400, f"n over max_page_entries: {status}")
    seen = []
    offset = 0
    while True:
        status, _, body = get(port, f"/processes?n=3&offset={offset}")
        expect(status == 200, f"/processes offset={offset}: {status}")
        doc = json.loads(body)
        expect(doc["offset"] == offset, f"offset echoed: {doc}")
        seen += [p["pid"] for p in doc["processes"]]
        if "next_offset" not in doc:
            break
        offset = doc["next_offset"]
    expect(len(seen) == len(set(seen)), f"a pid twice: {seen}")
    expect(len(seen) == doc["total"], f"{len(seen)} listed of {doc['total']}")
    # /tree holds at most max_page_entries nodes, and pages one supervisor's children.
    status, _, body = get(port, "/tree")
    tree = json.loads(body)
    expect(tree.get("truncated") is True, f"/tree not truncated: {tree}")
    status, _, body = get(port, f"/tree?supervisor={pool}&offset=2&max_children=2")
    expect(status == 200, f"/tree?supervisor=: {status}")
    node = json.loads(body)["supervisors"][0]
    expect(node["children_offset"] == 2 and len(node["children"]) == 2 and
           node["children_total"] == 5, f"/tree page {node}")
    status, _, _ = get(port, "/tree?supervisor=<0.1.0>")
    expect(status == 404, f"/tree of a non-supervisor: {status}")
    print(f"ok {len(seen)}")


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    case, port = sys.argv[1], int(sys.argv[2])
    if case.startswith("console"):
        import console_check  # beside this file
        try:
            console_check.run(case, port, sys.argv[3:])
        except console_check.Failure as e:
            fail(str(e))
        return
    if case == "pages":
        pages(port)
    elif case == "malformed":
        malformed(port)
    elif case == "slow":
        slow(port)
    elif case == "concurrent":
        concurrent(port, int(sys.argv[3]))
    elif case == "app_pages":
        app_pages(port)
    elif case == "paging":
        paging(port, sys.argv[3])
    elif case == "refused":
        refused(port)
    else:
        fail("unknown case " + case)


if __name__ == "__main__":
    main()
