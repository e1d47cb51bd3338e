#!/usr/bin/env python3
"""beamlet-top in a terminal (tmux) and as a script's tool (--once, --once --json).

Starts console_server (a `hoarder` holding messages), then:
  * `beamlet-top --once --json`: one sample and one page; the hoarder is first;
  * `beamlet-top --once`: the same as a table;
  * `beamlet-top` in a detached tmux session: the screen (capture-pane) lists the hoarder first
    and fills the terminal, refreshes (processes spawned meanwhile show in its header), `m`
    sorts by memory, `p` by pid, `o` flips the order, `q` quits with status 0;
  * wrong use: no port (status 2), a port where nothing listens (status 1, a message).

usage: beamlet_top_test.py BEAMLET_TOP CONSOLE_SERVER
Exit status 0: every check held; 77: no tmux; 1: a check failed (the reason is printed).
"""
import json
import re
import shutil
import socket
import subprocess
import sys
import time


def fail(msg):
    print("beamlet_top_test: " + msg, file=sys.stderr)
    sys.exit(1)


def tmux(*args, check=True):
    r = subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        fail("tmux %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


SOCKET = "beamlet-top-test-%d" % id(fail)


def screen():
    return tmux("capture-pane", "-p", "-t", "top")


def wait_screen(pred, what, timeout=15):
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        text = screen()
        if pred(text):
            return text
        time.sleep(0.1)
    fail("timed out waiting for %s; the screen:\n%s" % (what, text))


def rows(text):
    """The table's data rows: lines starting with a pid."""
    return [line for line in text.splitlines() if re.match(r"<\d+\.\d+\.\d+>", line)]


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    top, server = sys.argv[1], sys.argv[2]
    if shutil.which("tmux") is None:
        print("beamlet_top_test: tmux is not installed (scripts/bootstrap installs it)")
        sys.exit(77)
    svc = subprocess.Popen([server, "--processes", "2000", "--backlog", "5000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        m = re.match(r"console: http://127\.0\.0\.1:(\d+)/console", svc.stdout.readline())
        if not m:
            fail("console_server printed no address")
        port = m.group(1)
        hoarder = svc.stdout.readline().split(": ", 1)[1].strip()
        svc.stdout.readline()  # "node: " (none: no --node)

        # -- for scripts ------------------------------------------------------------------------
        r = subprocess.run([top, "--port", port, "--once", "--json", "--n", "5"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail("--once --json exited %d: %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        if doc["processes"][0]["pid"] != hoarder or len(doc["processes"]) != 5:
            fail("--once --json: %s" % r.stdout[:500])
        if doc["processes"][0]["message_queue_len"] < 5000 or doc["total"] < 2000:
            fail("--once --json counts: %s" % r.stdout[:500])
        r = subprocess.run([top, "--port", port, "--once", "--sort", "pid", "--n", "3"],
                           capture_output=True, text=True, timeout=30)
        table = rows(r.stdout)
        if r.returncode != 0 or len(table) != 3 or not table[0].startswith("<0.1.0>"):
            fail("--once --sort pid:\n" + r.stdout + r.stderr)

        # -- wrong use -------------------------------------------------------------------------
        r = subprocess.run([top], capture_output=True, text=True, timeout=30)
        if r.returncode != 2 or "usage" not in r.stderr:
            fail("no port: %d %s" % (r.returncode, r.stderr))
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed_port = str(s.getsockname()[1])
        s.close()
        r = subprocess.run([top, "--port", closed_port, "--once"], capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 1 or "beamlet-top:" not in r.stderr:
            fail("nothing listening: %d %s" % (r.returncode, r.stderr))

        # -- in a terminal ---------------------------------------------------------------------
        tmux("new-session", "-d", "-s", "top", "-x", "150", "-y", "30",
             "%s --port %s; echo beamlet-top-exited-$?; sleep 30" % (top, port))
        first = wait_screen(lambda t: len(rows(t)) > 5, "the table")
        if not rows(first)[0].startswith(hoarder):
            fail("the hoarder is not first:\n" + first)
        if len(rows(first)) != 30 - 5:
            fail("the table does not fill the terminal (%d rows):\n%s" % (len(rows(first)), first))
        # Refreshed every second: a thousand processes more show in the header.
        count = re.search(r"processes ([\d,]+)", first).group(1)
        svc.stdin.write("spawn\n")
        svc.stdin.flush()
        if svc.stdout.readline().strip() != "spawned":
            fail("console_server did not spawn")
        wait_screen(lambda t: re.search(r"processes ([\d,]+)", t).group(1) != count,
                    "the header to show the new processes", timeout=10)
        tmux("send-keys", "-t", "top", "m")
        wait_screen(lambda t: "sorted by memory (desc)" in t, "the sort by memory")
        tmux("send-keys", "-t", "top", "p")
        wait_screen(lambda t: "sorted by pid (asc)" in t and rows(t) and
                             rows(t)[0].startswith("<0.1.0>"), "the sort by pid")
        tmux("send-keys", "-t", "top", "o")
        wait_screen(lambda t: "sorted by pid (desc)" in t, "the other order")
        tmux("send-keys", "-t", "top", "q")
        after = wait_screen(lambda t: "beamlet-top-exited-" in t, "beamlet-top to quit")
        if "beamlet-top-exited-0" not in after:
            fail("beamlet-top did not exit cleanly:\n" + after)
        print("beamlet-top: --once --json lists %s first of %d; the terminal view fills %d rows,"
              " sorts by memory, pid and back, quits with 0" %
              (hoarder, doc["total"], len(rows(first))))
    finally:
        tmux("kill-server", check=False)
        svc.stdin.close()
        try:
            svc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            svc.kill()
            svc.wait()


if __name__ == "__main__":
    main()
