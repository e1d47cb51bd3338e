#!/usr/bin/env python3
"""Runs the program of docs/getting-started.md as its page says: two increments over TCP, a
scrape of /metrics, then SIGTERM, after which it must exit 0. Usage: getting_started_check.py BIN"""
import re
import signal
import socket
import subprocess
import sys
import urllib.request

service = subprocess.Popen([sys.argv[1], "0", "0"], stdout=subprocess.PIPE, text=True)
try:
    banner = service.stdout.readline()
    print(banner, end="")
    ports = re.search(r"counter on port (\d+), metrics on port (\d+)", banner)
    counter_port, metrics_port = int(ports.group(1)), int(ports.group(2))
    with socket.create_connection(("127.0.0.1", counter_port), timeout=10) as c:
        c.sendall(b"x\nx\n")
        got = b""
        while got.count(b"\n") < 2:
            chunk = c.recv(64)
            if not chunk:
                break
            got += chunk
    print("counter answered", got)
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    processes = re.search(r"^beamlet_processes (\d+)$", metrics, re.M)
    print("beamlet_processes", processes.group(1) if processes else None)
    service.send_signal(signal.SIGTERM)
    service.wait(timeout=30)
    print("exit status", service.returncode)
    ok = got == b"1\n2\n" and processes is not None and service.returncode == 0
    sys.exit(0 if ok else 1)
finally:
    if service.poll() is None:
        service.kill()
