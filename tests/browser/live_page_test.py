#!/usr/bin/env python3
"""The outage replay's live page, in headless Chromium.

Starts outage_replay (--fix none, a 20 s run), loads its page twice while it runs with
`chromium --headless --dump-dom` and reads the DOM the page's script built: the first load must
show the ring whole, the second the mailboxes grown past a backlog and the ring short of a
member. Then saves a screenshot and checks the run ended with every socket closed.

usage: live_page_test.py OUTAGE_REPLAY SCREENSHOT.png
Exit status 0: every check held; 77: no chromium (scripts/bootstrap installs it); 1: a check
failed (the reason is printed).
"""
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("live_page_test: " + msg, file=sys.stderr)
    sys.exit(1)


class Dom(html.parser.HTMLParser):
    """Text by element id, and the rows of #timeline as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.by_id, self.rows, self.ring_classes = {}, [], []
        self._stack, self._in_timeline, self._row, self._cell = [], False, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._stack.append(a.get("id"))
        if a.get("id") == "timeline":
            self._in_timeline = True
        if self._in_timeline and tag == "tr":
            self._row = []
        if self._in_timeline and tag == "td":
            self._cell = ""
        if tag == "span" and a.get("class") in ("member", "dropped"):
            self.ring_classes.append(a["class"])

    def handle_endtag(self, tag):
        ident = self._stack.pop() if self._stack else None
        if ident == "timeline":
            self._in_timeline = False
        if self._in_timeline and tag == "td" and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        if self._in_timeline and tag == "tr" and self._row:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        for ident in self._stack:
            if ident:
                self.by_id[ident] = self.by_id.get(ident, "") + data
        if self._cell is not None:
            self._cell += data


def number(text):
    digits = re.sub(r"[^0-9]", "", text or "")
    return int(digits) if digits else -1


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# One profile for the run's Chromium starts, removed at the end: a profile left behind is a few
# MiB of /tmp per run.
PROFILE = tempfile.mkdtemp(prefix="beamlet-chromium-")


def chromium(binary, url, *extra):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--user-data-dir=" + PROFILE, "--virtual-time-budget=3000",
           *extra, url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    if r.returncode != 0:
        fail("chromium failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout


def load(binary, url):
    d = Dom()
    d.feed(chromium(binary, url, "--dump-dom"))
    return d


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    replay, screenshot = sys.argv[1], sys.argv[2]
    binary = chromium_binary()
    if binary is None:
        print("live_page_test: chromium is not installed (scripts/bootstrap installs it)")
        sys.exit(77)

    # A screenshot left by an earlier run must not pass for this one's.
    if os.path.exists(screenshot):
        os.remove(screenshot)
    # 20 s of timeline: the checks read rows 2 and 11, and the screenshot after them must still
    # find the page served (each chromium run takes a few seconds of real time).
    proc = subprocess.Popen([replay, "--fix", "none", "--seconds", "20", "--linger", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        m = re.match(r"live view: (http://127\.0\.0\.1:\d+/)", first)
        if not m:
            fail("no live view address in %r" % first)
        url = m.group(1)
        lines = []
        def wait_for_row(t):
            while True:
                line = proc.stdout.readline()
                if not line:
                    fail("the replay ended early:\n" + "".join(lines))
                lines.append(line)
                if re.match(r"\s*%d\s" % t, line):
                    return
        # Before the fault: the whole ring, no backlog, read from the page's row for second 2.
        # (Not from the cards, which show the newest row: a Chromium that took four seconds to
        # start beside the replay drew the page after the ring had emptied.)
        wait_for_row(2)
        early = load(binary, url)
        row2 = [r for r in early.rows if len(r) >= 3 and r[0].strip() == "2"]
        if not row2 or row2[0][1].strip() != "6/6":
            fail("the page's row for second 2 does not show the whole ring: %r" % row2)
        ring_now = early.by_id.get("ring-now", "")
        if not re.match(r"\s*\d+ of 6", ring_now):
            fail("the page shows the ring now as %r" % ring_now)
        early_peak = number(row2[0][2])
        # Well into the cascade.
        wait_for_row(11)
        late = load(binary, url)
        late_peak = number(late.by_id.get("mailbox-peak"))
        if not (late_peak >= 5000 and late_peak > early_peak):
            fail("the mailbox did not grow on the page: peak %d, then %d" % (early_peak, late_peak))
        ring_min = late.by_id.get("ring-min", "")
        m = re.match(r"\s*(\d+) of (\d+)", ring_min)
        if not m or int(m.group(1)) >= int(m.group(2)):
            fail("the page does not show the ring dropping a member: %r" % ring_min)
        # The timeline table, newest row first: its mailbox column rose after the fault.
        series = [number(r[2]) for r in reversed(late.rows) if len(r) >= 3]
        if len(series) < 8 or max(series[:2]) >= 1000 or max(series) < 5000:
            fail("the timeline table does not show a growing mailbox: %s" % series)
        if "dropped" not in late.ring_classes:
            fail("no instance is drawn as dropped from the ring: %s" % late.ring_classes)
        chromium(binary, url, "--screenshot=" + screenshot, "--window-size=1280,1250",
                 "--hide-scrollbars")
        if not os.path.exists(screenshot) or os.path.getsize(screenshot) < 20000:
            fail("no screenshot at " + screenshot)
        rest = proc.stdout.read()
        lines.append(rest)
        code = proc.wait(timeout=120)
        if code != 0 or "sockets open at the end: 0" not in rest:
            fail("the replay ended with %d:\n%s" % (code, "".join(lines)[-3000:]))
        print("page: ring %s -> smallest %s; peak mailbox %d -> %d; timeline %s; screenshot %s" %
              (ring_now.strip(), ring_min.strip(), early_peak, late_peak, series, screenshot))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(PROFILE, ignore_errors=True)
