# SPDX-License-Identifier: Apache-2.0
# Debian's headless Chromium driven over the DevTools protocol on a pipe
# (--remote-debugging-pipe: commands in on fd 3, answers and events out on fd 4, each a JSON
# text ended by a NUL byte), so the UI tests need no websocket or npm package. One browser per
# test class, a fresh user data dir, no network beyond what the page itself asks for.
#
#   with Chromium() as b:
#       page = b.new_page()
#       page.goto("http://127.0.0.1:4040/")
#       page.wait_for("document.title === 'RootTrace'")
import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM = os.environ.get("ROOTTRACE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio",
         "--remote-debugging-pipe", "--window-size=1400,900"]
KEY_CODES = {"Enter": 13, "Escape": 27, "ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39,
             "ArrowDown": 40, "/": 191}


class CdpError(RuntimeError):
    pass


class Chromium:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="rt-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds():  # the browser reads fd 3 and writes fd 4
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen([CHROMIUM] + FLAGS + ["--user-data-dir=" + self.profile,
                                                           "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     preexec_fn=fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._id = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._answers = {}
        self.events = []  # (sessionId, method, params), every event, in order
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._answers[msg["id"]] = msg
                    else:
                        self.events.append((msg.get("sessionId"), msg["method"],
                                            msg.get("params", {})))
                    self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def send(self, method, params=None, session=None, timeout=60):
        with self._lock:
            self._id += 1
            mid = self._id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        with self._cond:
            while mid not in self._answers:
                if getattr(self, "_closed", False) or time.time() > deadline:
                    raise CdpError("%s: no answer (browser log: %s)" % (method, self.browser_log()))
                self._cond.wait(0.5)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise CdpError("%s: %s" % (method, answer["error"]))
        return answer.get("result", {})

    def browser_log(self):
        try:
            with open(os.path.join(self.profile, "chromium.log")) as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def new_page(self, width=1400, height=900):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        return Page(self, session["sessionId"], width, height)

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser, session, width, height):
        self.b = browser
        self.session = session
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method, params=None, timeout=60):
        return self.b.send(method, params, self.session, timeout)

    def events(self, method):
        return [p for s, m, p in list(self.b.events) if s == self.session and m == method]

    def requested_urls(self):
        return [p["request"]["url"] for p in self.events("Network.requestWillBeSent")]

    def console_errors(self):
        out = [p["entry"]["text"] for p in self.events("Log.entryAdded")
               if p["entry"]["level"] == "error"]
        out += [json.dumps(p["exceptionDetails"])[:500] for p in
                self.events("Runtime.exceptionThrown")]
        return out

    def goto(self, url):
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                           "returnByValue": True})
        if "exceptionDetails" in r:
            raise CdpError("%s: %s" % (expr[:200], json.dumps(r["exceptionDetails"])[:800]))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=30, what=None):
        """Polls expr until it is truthy; returns its value (a condition, not a time)."""
        deadline = time.time() + timeout
        while True:
            try:
                v = self.eval(expr)
            except CdpError:
                v = None
            if v:
                return v
            if time.time() > deadline:
                raise AssertionError("timed out waiting for %s; errors: %s"
                                     % (what or expr, self.console_errors()))
            time.sleep(0.05)

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left", "clickCount": 1})

    def center(self, selector):
        r = self.eval("(() => { const e = document.querySelector(%s); if (!e) return null;"
                      " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
                      % json.dumps(selector))
        if not r:
            raise AssertionError("no element %s on the page" % selector)
        return r

    def click_selector(self, selector):
        self.click(*self.center(selector))

    def type(self, selector, text):
        self.click_selector(selector)
        self.send("Input.insertText", {"text": text})

    def key(self, key):
        code = KEY_CODES.get(key, 0)
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                                 "windowsVirtualKeyCode": code})

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path
