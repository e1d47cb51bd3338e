#!/usr/bin/env python3
"""A misbehaving distribution peer, for the bad-input tests.

Usage: bad_peer.py <port> <cookie> <scenario>
       bad_peer.py <port> <cookie> slow <bytes-per-second> <seconds>

Connects to a node on 127.0.0.1:<port>, misbehaves as <scenario> says, then waits for the node
to close the connection. Exit status 0 when it did (within 10 s), 1 when it did not, 2 when the
handshake itself went wrong in a way the scenario did not ask for.

Handshake scenarios: silent (sends nothing), garbage (a malformed name packet), wrong_cookie
(a challenge reply with a bad digest). After a good handshake: not_p (a packet without 'p'),
bad_control (a control message that is not {Op, ...}), truncated (a term cut short),
deep (nesting beyond the limit), huge (announces a 2 GiB packet and stops), mute (says nothing
more, not even ticks: the node must drop it after its net_ticktime). Fragments (the peer then
advertises DFLAG_FRAGMENTS): frag_ok (a good message in two fragments to frag_sink, then a
packet the node refuses), frag_unknown (a fragment of a sequence never started), frag_order
(fragment 1 where 2 was due), frag_twice (a sequence started twice), frag_many (more sequences
under way than the node allows), frag_huge (pieces adding up to more than the node's
max_packet, which the test sets to 1 MiB), frag_cache (a distribution header with atom-cache
references, never negotiated). expect_p (without fragments): waits for the node to send it
{frag_probe, Node} ! hello and checks that it came in the pass-through form; exit status 0 if so.

slow (bench-dist's slow reader): after a good handshake, reads what the node sends at
<bytes-per-second> (with a small receive buffer, so the kernel absorbs little), ticks every
second, and closes after <seconds>; prints the bytes it read. Exit status 0.
"""
import hashlib
import os
import socket
import struct
import sys
import time

REQUIRED = (0x4 | 0x10 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x20000 | 0x40000
            | 0x1000000)
FLAGS = REQUIRED | 0x8 | 0x20 | (4 << 32) | 0x2000000
FRAGMENTS = 0x800000


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def packet2(s):
    (n,) = struct.unpack(">H", recv_exact(s, 2))
    return recv_exact(s, n)


def send2(s, body):
    s.sendall(struct.pack(">H", len(body)) + body)


def digest(cookie, challenge):
    return hashlib.md5((cookie + str(challenge)).encode()).digest()


def handshake(s, cookie, good_digest=True, flags=FLAGS):
    name = ("bad_%d@127.0.0.1" % os.getpid()).encode()
    send2(s, b"N" + struct.pack(">QIH", flags, 1, len(name)) + name)
    status = packet2(s)
    if not status.startswith(b"sok"):
        sys.exit(2)
    ch = packet2(s)
    (challenge,) = struct.unpack(">I", ch[9:13])
    mine = 12345
    d = digest(cookie, challenge) if good_digest else b"\0" * 16
    send2(s, b"r" + struct.pack(">I", mine) + d)
    if not good_digest:
        return
    ack = packet2(s)
    if ack[:1] != b"a" or ack[1:] != digest(cookie, mine):
        sys.exit(2)


def first_fragment(seq, count, piece):
    return b"\x83E" + struct.pack(">QQ", seq, count) + b"\0" + piece


def next_fragment(seq, number, piece):
    return b"\x83F" + struct.pack(">QQ", seq, number) + piece


def own_pid():
    """A pid of this peer's node (NEW_PID_EXT, no version byte), creation 1 as in handshake()."""
    name = ("bad_%d@127.0.0.1" % os.getpid()).encode()
    return b"\x58\x77" + bytes([len(name)]) + name + struct.pack(">III", 1, 0, 1)


def frag_ok_packets():
    """{frag_sink, Node} ! <<0, 1, 2, ... (100,000 bytes)>> in two fragments, then a packet the
    node refuses, so that it closes (the test checks the message arrived first)."""
    control = b"\x68\x04\x61\x06" + own_pid() + b"\x77\x00" + b"\x77\x09frag_sink"
    payload = bytes(i & 255 for i in range(100000))
    message = b"\x6d" + struct.pack(">I", len(payload)) + payload
    data = control + message
    cut = len(data) // 2
    return [first_fragment(9, 2, data[:cut]), next_fragment(9, 1, data[cut:]), b"x\x83\x6a"]


def expect_pass_through(s):
    """Without fragments, the node must write the pass-through form: waits for the data packet
    {'frag_probe', Node} ! hello, and checks that it and every data packet before it (the node's
    pg scope introduces itself, say) are in that form: 'p', the control term's version byte and
    the message with its own. 0 when they are so."""
    s.settimeout(10)
    try:
        while True:
            (n,) = struct.unpack(">I", recv_exact(s, 4))
            if n == 0:
                continue
            p = recv_exact(s, n)
            if p.startswith(b"p\x83") and b"frag_probe" not in p:
                continue  # another process's packet, in the right form
            ok = p.startswith(b"p\x83\x68\x04\x61\x06") and p.endswith(b"\x83\x77\x05hello")
            print("bad_peer expect_p: %s" % ("pass-through" if ok else repr(p[:16])), flush=True)
            return 0 if ok else 1
    except (socket.timeout, EOFError, OSError):
        return 1


def fragment_packets(scenario):
    """The packets of a fragment scenario: each ends with what the node must refuse."""
    atom = b"\x77\x01x"  # the atom x, without a version byte, cut into pieces below
    if scenario == "frag_ok":
        return frag_ok_packets()
    if scenario == "frag_unknown":
        return [next_fragment(7, 1, atom)]
    if scenario == "frag_order":
        return [first_fragment(7, 3, atom[:1]), next_fragment(7, 1, atom[1:])]
    if scenario == "frag_twice":
        return [first_fragment(7, 2, atom[:1]), first_fragment(7, 2, atom[:1])]
    if scenario == "frag_many":
        return [first_fragment(seq, 2, atom[:1]) for seq in range(1, 1100)]
    if scenario == "frag_huge":  # 1.31 MiB in pieces, to a node whose max_packet is 1 MiB
        piece = b"\0" * 65536
        return [first_fragment(7, 40, piece)] + [next_fragment(7, n, piece)
                                                 for n in range(39, 19, -1)]
    if scenario == "frag_cache":
        return [b"\x83D\x01\x08\x00\x01x" + atom]
    sys.exit(2)


def wait_closed(s):
    s.settimeout(10)
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, EOFError):
        return True
    except socket.timeout:
        return False


def read_slowly(s, rate, seconds):
    """Reads at `rate` bytes per second for `seconds`, in 10 ms steps, ticking every second."""
    step = 0.01
    per_step = max(1, int(rate * step))
    total = 0
    start = time.monotonic()
    next_tick = start
    s.settimeout(step)
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        if now >= next_tick:
            try:
                s.sendall(b"\0\0\0\0")
            except (BrokenPipeError, ConnectionResetError):
                return total
            next_tick = now + 1.0
        want = per_step
        while want > 0:
            try:
                got = s.recv(want)
            except socket.timeout:
                break
            except ConnectionResetError:  # the node went away first (its measurement is done)
                return total
            if not got:
                return total
            total += len(got)
            want -= len(got)
        # The step's budget is spent (or nothing was there): wait for the next step.
        time.sleep(max(0.0, start + step * (int((time.monotonic() - start) / step) + 1)
                       - time.monotonic()))
    return total


def main():
    port, cookie, scenario = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if scenario == "slow":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.connect(("127.0.0.1", port))
    if scenario == "slow":
        handshake(s, cookie)
        total = read_slowly(s, int(sys.argv[4]), float(sys.argv[5]))
        print("bad_peer slow: read %d bytes" % total, flush=True)
        s.close()
        sys.exit(0)
    if scenario == "silent":
        pass
    elif scenario == "garbage":
        send2(s, b"\xff" * 40)
    elif scenario == "wrong_cookie":
        handshake(s, cookie, good_digest=False)
    else:
        handshake(s, cookie, flags=FLAGS | (FRAGMENTS if scenario.startswith("frag") else 0))
        if scenario.startswith("frag"):
            body = None
            try:
                for packet in fragment_packets(scenario):
                    s.sendall(struct.pack(">I", len(packet)) + packet)
            except OSError:
                pass  # the node closed before the last packet: what it must do (wait_closed sees it)
        elif scenario == "expect_p":
            sys.exit(expect_pass_through(s))
        elif scenario == "not_p":
            body = b"x\x83\x6a"
        elif scenario == "bad_control":
            body = b"p\x83\x6a"  # [] is a term, but not a control tuple
        elif scenario == "truncated":
            body = b"p\x83\x68\x03\x61\x01"
        elif scenario == "deep":
            body = b"p\x83" + b"\x68\x01" * 5000 + b"\x6a"
        elif scenario == "huge":
            s.sendall(struct.pack(">I", 0x7FFFFFFF) + b"p")
            body = None
        elif scenario == "mute":
            body = None
        else:
            sys.exit(2)
        if body is not None:
            s.sendall(struct.pack(">I", len(body)) + body)
    start = time.monotonic()
    closed = wait_closed(s)
    print("bad_peer %s: %s after %.2f s" % (scenario, "closed" if closed else "still open",
                                           time.monotonic() - start), flush=True)
    sys.exit(0 if closed else 1)


if __name__ == "__main__":
    main()
