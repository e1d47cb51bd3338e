"""The console's cases of http_check.py (tests/unit/console_test.cpp): its JSON API, its event
stream and its actions, as a browser's script would use them.

  console_off PORT                       the console is off: its paths are 404, POSTs 405
  console_up PORT                        the console answers (its overview)
  console PORT HOARDER POOL WORKER TOKEN every page, the stream, and the actions with the token
  console_shed PORT POOL TOKEN           switches POOL's shedding on (the C++ side checks it)
  console_no_token PORT PID              no console_token configured: every action is 403
  console_tokens PORT PID TOKEN          near-miss tokens are refused
  console_nodes_off PORT                 no node: the Nodes view's paths are 404
  console_nodes PORT NODE                NODE listed; its longest queues (`backlogged` first)
  console_source PORT NAME BODY          /console/api/NAME answers BODY ("-": 404)
  console_gauges PORT NAME=VALUE         the samples' gauges hold NAME=VALUE ("-": absent)
"""
import http.client
import json
import socket
import time
import urllib.parse

HOST = "127.0.0.1"


class Failure(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def request(port, path, method="GET", body=None, headers=None):
    c = http.client.HTTPConnection(HOST, port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Content-Type", ""), data


def get_json(port, path):
    status, ctype, body = request(port, path)
    expect(status == 200, f"{path}: {status} {body[:200]!r}")
    expect(ctype == "application/json", f"{path}: content type {ctype}")
    return json.loads(body)


def q(pid):
    return urllib.parse.quote(pid)


def action(port, token, **form):
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if token is not None:
        headers["X-Beamlet-Token"] = token
    status, _, body = request(port, "/console/api/action", "POST",
                              urllib.parse.urlencode(form), headers)
    return status, body.decode()


def console_off(port):
    for path in ("/console", "/console/api/overview", "/console/api/processes",
                 "/console/api/events"):
        status, _, _ = request(port, path)
        expect(status == 404, f"{path} with the console off: {status}")
    status, _, _ = request(port, "/console/api/action", "POST", "action=kill&pid=%3C0.1.0%3E",
                           {"X-Beamlet-Token": "x"})
    expect(status == 405, f"a POST with the console off: {status}")
    status, _, body = request(port, "/")
    expect(b"/console" not in body, "the index names the console while it is off")


def read_events(port, count, timeout=5):
    """Opens the event stream and returns its head and the first `count` events' data."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.sendall(b"GET /console/api/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    buf = b""
    deadline = time.time() + timeout
    while buf.count(b"data: ") < count or not buf.endswith(b"\n\n"):
        expect(time.time() < deadline, f"the stream sent {buf.count(b'data: ')} events: {buf!r}")
        chunk = s.recv(65536)
        expect(chunk, "the stream closed")
        buf += chunk
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    events = [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    return head.decode(), events


def console(port, hoarder, pool, worker, token):
    # The page: one document, nothing fetched from elsewhere.
    status, ctype, body = request(port, "/console")
    expect(status == 200 and ctype.startswith("text/html"), f"/console: {status} {ctype}")
    page = body.decode()
    expect("<script>" in page and "/console/api/events" in page, "/console is not the console")
    for outside in ('src="http', "src='http", 'href="http', "url(http", "@import"):
        expect(outside not in page, f"the page loads something from outside ({outside})")
    status, _, body = request(port, "/")
    expect(b"/console" in body, "the index does not name the console")

    # Overview: samples every 50 ms, at most console_history (5) kept.
    time.sleep(0.5)
    o = get_json(port, "/console/api/overview")
    expect(o["interval_ms"] == 50 and o["actions"] is True, f"overview head: {o}")
    expect(2 <= len(o["history"]) <= 5, f"overview keeps {len(o['history'])} samples")
    s = o["history"][-1]
    expect(s["processes"] >= 8 and len(s["run_queues"]) == o["schedulers"], f"a sample: {s}")
    expect(s["rss_bytes"] > 0 and s["messages"] >= 300, f"a sample: {s}")

    # Processes: sorted, filtered, paged, with bad parameters refused.
    p = get_json(port, "/console/api/processes")
    expect(p["processes"][0]["pid"] == hoarder, f"first by queue length: {p['processes'][0]}")
    expect(p["processes"][0]["message_queue_len"] >= 300, "the hoarder's queue")
    expect(p["sort"] == "message_queue_len" and p["order"] == "desc", f"defaults: {p['sort']}")
    total = p["total"]
    by_pid = get_json(port, "/console/api/processes?sort=pid&n=3")
    serials = [int(x["pid"].split(".")[1]) for x in by_pid["processes"]]
    expect(serials == sorted(serials) and by_pid["order"] == "asc", f"by pid: {serials}")
    f = get_json(port, "/console/api/processes?filter=HOARD")
    expect(f["total"] == 1 and f["processes"][0]["registered_name"] == "hoarder",
           f"filter by name: {f}")
    f = get_json(port, "/console/api/processes?filter=" + q("console_worker"))
    expect(f["total"] == 3, f"filter by initial call: {f['total']}")
    page2 = get_json(port, "/console/api/processes?sort=pid&offset=2&n=2")
    expect(page2["processes"][0]["pid"] == by_pid["processes"][2]["pid"], "offset")
    beyond = get_json(port, "/console/api/processes?offset=%d" % (total + 10))
    expect(beyond["processes"] == [] and beyond["offset"] == total, f"past the end: {beyond}")
    for bad in ("n=0", "n=101", "sort=name", "order=up", "offset=x"):
        status, _, _ = request(port, "/console/api/processes?" + bad)
        expect(status == 400, f"processes?{bad}: {status}")

    # One process: its lists, its first messages' types, its supervisor path.
    d = get_json(port, "/console/api/process?pid=" + q(hoarder))
    expect(d["complete"] and d["status"] == "waiting", f"detail: {d}")
    expect(d["queued_types"] == ["int"] * 10, f"queued types: {d['queued_types']}")
    expect(d["labels"] == {"role": "keeps everything"}, f"labels: {d['labels']}")
    expect([a["registered_name"] for a in d["supervisor_path"]][-1] == "app_sup",
           f"supervisor path: {d['supervisor_path']}")
    expect(d["supervisor_path"][-1]["kind"] == "supervisor", "app_sup's kind")
    pd = get_json(port, "/console/api/process?pid=" + q(pool))
    expect(pd["supervisor_kind"] == "dynamic_supervisor" and pd["supervisor_children"] == 2,
           f"pool detail: {pd}")
    for bad, code in (("pid=nonsense", 400), ("pid=" + q("<0.999999.0>"), 404)):
        status, _, _ = request(port, "/console/api/process?" + bad)
        expect(status == code, f"process?{bad}: {status}")

    # The tree and the alarms page (the console is the system monitor's subscriber).
    t = get_json(port, "/console/api/tree")
    expect(any(s["registered_name"] == "app_sup" for s in t["supervisors"]), f"tree: {t}")
    a = get_json(port, "/console/api/alarms")
    expect(a["subscribed"] is True and a["subscriber"], f"alarms: {a}")
    status, _, _ = request(port, "/console/api/nothing")
    expect(status == 404, f"an unknown console path: {status}")

    # The stream: server-sent events, one sample each.
    head, events = read_events(port, 2)
    expect("200 OK" in head and "text/event-stream" in head, f"stream head: {head}")
    expect(len(events) >= 2 and events[1]["time_ms"] >= events[0]["time_ms"], f"{events}")

    # Actions: POSTs only, with the token.
    status, _, _ = request(port, "/console/api/action?action=kill&pid=" + q(hoarder))
    expect(status == 405, f"a GET of the action path: {status}")
    status, _, _ = request(port, "/console/api/processes", "POST", "x=1")
    expect(status == 405, f"a POST elsewhere: {status}")
    status, _ = action(port, None, action="kill", pid=hoarder)
    expect(status == 403, f"kill without a token: {status}")
    status, _ = action(port, "wrong", action="kill", pid=hoarder)
    expect(status == 403, f"kill with a wrong token: {status}")
    expect(get_json(port, "/console/api/process?pid=" + q(hoarder))["pid"] == hoarder,
           "the hoarder died from a refused kill")
    for form, code in (({"action": "explode", "pid": hoarder}, 400),
                       ({"action": "kill", "pid": "me"}, 400),
                       ({"action": "kill", "pid": "<0.999999.0>"}, 404),
                       ({"action": "shed_on", "pid": worker}, 409),
                       ({"action": "suspend", "pid": hoarder}, 409)):
        status, text = action(port, token, **form)
        expect(status == code, f"{form}: {status} {text}")
    for act in ("suspend", "resume"):
        status, text = action(port, token, action=act, pid=worker)
        expect(status == 200 and json.loads(text)["ok"], f"{act} worker: {status} {text}")
    status, text = action(port, token, action="shed_on", pid=pool)
    expect(status == 200, f"shed_on: {status} {text}")
    status, text = action(port, token, action="shed_auto", pid=pool)
    expect(status == 200, f"shed_auto: {status} {text}")
    status, text = action(port, token, action="kill", pid=hoarder)
    expect(status == 200, f"kill: {status} {text}")
    deadline = time.time() + 5
    while request(port, "/console/api/process?pid=" + q(hoarder))[0] != 404:
        expect(time.time() < deadline, "the hoarder outlived its kill")
        time.sleep(0.05)


def console_up(port):
    get_json(port, "/console/api/overview")


def console_shed(port, pool, token):
    status, text = action(port, token, action="shed_on", pid=pool)
    expect(status == 200, f"shed_on: {status} {text}")


def console_no_token(port, pid):
    for token in (None, "", "anything"):
        status, text = action(port, token, action="kill", pid=pid)
        expect(status == 403 and "off" in text, f"token {token!r}: {status} {text}")
    o = get_json(port, "/console/api/overview")
    expect(o["actions"] is False, "the overview says actions are on")


def console_tokens(port, pid, token):
    for near in (token[:-1], token + "x", token[:-1] + chr(ord(token[-1]) ^ 1), token.upper()):
        status, text = action(port, near, action="kill", pid=pid)
        expect(status == 403, f"token {near!r}: {status} {text}")


def console_nodes_off(port):
    for path in ("/console/api/nodes", "/console/api/node?name=x%40y"):
        status, _, _ = request(port, path)
        expect(status == 404, f"{path} without a node: {status}")


def console_nodes(port, node):
    n = get_json(port, "/console/api/nodes")
    expect(n["node"] and any(x["name"] == node for x in n["nodes"]), f"nodes: {n}")
    d = get_json(port, "/console/api/node?" + urllib.parse.urlencode({"name": node, "n": 5}))
    expect(d["name"] == node and d["processes"] > 20 and len(d["top"]) == 5, f"node: {d}")
    first = d["top"][0]
    expect(first["registered_name"] == "backlogged" and first["message_queue_len"] == 1500,
           f"the longest queue: {first}")
    queues = [p["message_queue_len"] for p in d["top"]]
    expect(queues == sorted(queues, reverse=True), f"not sorted: {queues}")
    expect(first["pid"].startswith("<") and ":" in first["current_function"], f"{first}")
    for query, code in (("name=nobody%40nowhere", 404), ("", 400),
                        (urllib.parse.urlencode({"name": node, "n": 0}), 400)):
        status, _, body = request(port, "/console/api/node?" + query)
        expect(status == code, f"node?{query}: {status} {body[:200]!r}")


def console_source(port, name, expected):
    status, _, body = request(port, "/console/api/" + name)
    if expected == "-":
        expect(status == 404, f"/console/api/{name} after its removal: {status}")
    else:
        expect(status == 200 and body.decode() == expected, f"/console/api/{name}: {status} {body}")


def console_gauges(port, want):
    """The newest sample's gauges: `ports` at least 1 (the test's listener), a gauge that
    throws left out, and want ("name=value", or "name=-" for absent) once a sample shows it."""
    name, value = want.split("=")
    deadline = time.time() + 5
    while True:
        g = get_json(port, "/console/api/overview")["history"][-1]["gauges"]
        if (g.get(name) == int(value)) if value != "-" else (name not in g):
            break
        expect(time.time() < deadline, f"gauges: {g}, wanted {want}")
        time.sleep(0.05)
    expect(g.get("ports", 0) >= 1 and "failing" not in g, f"gauges: {g}")


def run(case, port, args):
    """Runs one case; raises Failure with the reason."""
    cases = {"console_off": console_off, "console_up": console_up, "console": console, "console_shed": console_shed,
             "console_no_token": console_no_token, "console_tokens": console_tokens,
             "console_nodes_off": console_nodes_off, "console_nodes": console_nodes,
             "console_source": console_source, "console_gauges": console_gauges}
    cases[case](port, *args)
