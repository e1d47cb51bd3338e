#!/usr/bin/env python3
"""echo_server --serve as an operator runs it: it echoes until SIGTERM, then stops its tree in
order and exits 0. Usage: serve_until_signal.py <echo_server binary>."""
import re
import signal
import socket
import subprocess
import sys

server = subprocess.Popen([sys.argv[1], "--serve"], stdout=subprocess.PIPE, text=True)
try:
    banner = server.stdout.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", banner).group(1))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(b"hello\n")
        got = b""
        while len(got) < 6:
            chunk = c.recv(64)
            if not chunk:
                break
            got += chunk
    print("echoed:", got)
    server.send_signal(signal.SIGTERM)
    rest, _ = server.communicate(timeout=30)
    print(rest, end="")
    print("exit status", server.returncode)
    sys.exit(0 if got == b"hello\n" and server.returncode == 0 and
             "stopped by signal 15" in rest else 1)
finally:
    if server.poll() is None:
        server.kill()
