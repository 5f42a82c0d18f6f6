"""A minimal client of the Chrome DevTools Protocol over `--remote-debugging-pipe` (Python
stdlib only), for tests/html/test_html_report.py.

With --remote-debugging-pipe the browser reads protocol messages from its file descriptor 3
and writes its own to descriptor 4; each message is one JSON object followed by a NUL byte.
Commands carry an "id" and get a reply with the same id; events carry a "method" and, when they
come from a page the client attached to (Target.attachToTarget, flatten), its "sessionId".
"""
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_browser():
    """The chromium executable, or None."""
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless browser process; `page()` opens a tab and attaches to it."""

    # timeout: how long one reply may take, a guard against a hung browser, not a wait (each
    # read returns as soon as the message is there). 30 s was too short on the 2-core CI machine
    # while the sanitizer build compiled beside the tests: Target.createTarget took longer once.
    def __init__(self, exe, log_path, timeout=120.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cldiff_html_profile_")
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        # the browser's fds 3 and 4 are the two ends it uses
        os.set_inheritable(to_browser_r, True)
        os.set_inheritable(from_browser_w, True)

        def child_fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                "--user-data-dir=" + self.profile, "--remote-debugging-pipe", "about:blank"]
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                     preexec_fn=child_fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next = 0
        self.events = []  # every event received, in order: (sessionId, method, params)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("no message from the browser within %.0f s" % self.timeout)
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise CdpError("the browser closed its protocol pipe (exit %s)" % self.proc.poll())
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        self._next += 1
        mid = self._next
        m = {"id": mid, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        data = json.dumps(m).encode() + b"\0"
        while data:
            n = os.write(self._w, data)
            data = data[n:]
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._read_message(deadline)
            if r.get("id") == mid:
                if "error" in r:
                    raise CdpError("%s: %s" % (method, r["error"]))
                return r.get("result", {})
            if "method" in r:
                self.events.append((r.get("sessionId"), r["method"], r.get("params", {})))

    def wait_event(self, method, session, pred=lambda p: True):
        """Waits for an event of this page (one already received counts) and returns its params."""
        deadline = time.monotonic() + self.timeout
        seen = 0
        while True:
            for i in range(seen, len(self.events)):
                s, m, p = self.events[i]
                if s == session and m == method and pred(p):
                    return p
            seen = len(self.events)
            r = self._read_message(deadline)
            if "method" in r:
                self.events.append((r.get("sessionId"), r["method"], r.get("params", {})))

    def page(self):
        """A new tab, attached (flat session): returns its sessionId."""
        t = self.send("Target.createTarget", {"url": "about:blank"})
        a = self.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})
        return a["sessionId"]

    def close(self):
        try:
            self.send("Browser.close")
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
