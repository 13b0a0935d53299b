# SPDX-License-Identifier: Apache-2.0
# PHP frames from the node agent, on the real interpreter (Debian's php8.2-cli and php8.2-fpm,
# started without flags or extensions): a hot function under a known caller, processes started
# before and after the agent and one in its own mount namespace, a method named Class::method,
# PHP called back from C (array_map) in call order, and php-fpm serving FastCGI requests from a
# loopback driver (the request's functions named in the worker's samples).
import os
import signal
import socket
import struct
import subprocess
import threading
import time

import harness
from runtime_case import RuntimeCase, function_files, of_pid, parent_of, share

PHP = "/usr/bin/php8.2"
FPM = "/usr/sbin/php-fpm8.2"

HOT = """<?php
function hot_fn($n) { $s = 0; for ($i = 0; $i < $n; $i++) { $s += $i % 13; } return $s; }
function caller_fn() { while (true) { hot_fn(200000); } }
caller_fn();
"""

METHOD = """<?php
class Spinner {
    public function spin($n) { $s = 0; for ($i = 0; $i < $n; $i++) { $s += $i % 7; } return $s; }
}
function drive() { $w = new Spinner(); while (true) { $w->spin(100000); } }
drive();
"""

CALLBACK = """<?php
function cb_hot($x) { $s = 0; for ($i = 0; $i < 20000; $i++) { $s += $i % 7; } return $s + $x; }
function mapper() { while (true) { array_map('cb_hot', [1, 2, 3, 4]); } }
mapper();
"""

REQUEST = """<?php
function request_hot($n) { $s = 0; for ($i = 0; $i < $n; $i++) { $s += $i % 11; } return $s; }
function handle_request() { return request_hot(300000); }
echo handle_request();
"""

FPM_CONF = """[global]
pid = {d}/fpm.pid
error_log = {d}/fpm.log
daemonize = no
[www]
listen = 127.0.0.1:{port}
pm = static
pm.max_children = 1
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fcgi_record(kind, body, request_id=1):
    return struct.pack(">BBHHBx", 1, kind, request_id, len(body), 0) + body


def fcgi_params(params):
    out = b""
    for k, v in params.items():
        k, v = k.encode(), v.encode()
        out += bytes([len(k)]) + bytes([len(v)]) + k + v  # names and values < 128 bytes
    return out


def fcgi_get(port, script):
    """One FastCGI request (the responder role), as a web server would send it; the
    response's stdout."""
    params = {"SCRIPT_FILENAME": script, "SCRIPT_NAME": "/" + os.path.basename(script),
              "REQUEST_METHOD": "GET", "SERVER_PROTOCOL": "HTTP/1.1",
              "GATEWAY_INTERFACE": "CGI/1.1", "REMOTE_ADDR": "127.0.0.1"}
    msg = (fcgi_record(1, struct.pack(">HB5x", 1, 0)) + fcgi_record(4, fcgi_params(params)) +
           fcgi_record(4, b"") + fcgi_record(5, b""))
    out = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(msg)
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        while len(buf) >= 8:
            _, kind, _, length, pad = struct.unpack(">BBHHBx", buf[:8])
            if kind == 6:
                out += buf[8:8 + length]
            buf = buf[8 + length + pad:]
    return out


class PhpFrames(RuntimeCase):
    BINARY = PHP
    PREFIX = "rt-php-"
    SCRIPTS = {"hot.php": HOT, "method.php": METHOD, "callback.php": CALLBACK,
               "request.php": REQUEST}

    def test_hot_function_and_its_caller_with_record_pid(self):
        samples, prof, err = self.record_alone("hot.php", 6)
        named = share(samples, lambda s: "hot_fn" in s.stack)
        under = share(samples, lambda s: parent_of(s, "hot_fn") == "caller_fn")
        self.assertGreaterEqual(named, 0.95, err)
        self.assertGreaterEqual(under, 0.90, err)
        # the file goes into Function.filename; the interpreter loop's own frame is replaced,
        # and the script's top level reads <main> under the native frames that ran it
        files = function_files(prof, samples, "hot_fn")
        self.assertEqual(files, {os.path.join(self.tmp, "hot.php")})
        self.assertLess(share(samples, lambda s: "execute_ex" in s.stack), 0.05)
        self.assertGreaterEqual(share(samples, lambda s: parent_of(s, "caller_fn") == "<main>"),
                                0.90)
        self.assertIn("php: 1 processes attached", err)

    def test_started_before_and_after_the_agent(self):
        before = self.start(PHP, os.path.join(self.tmp, "hot.php"))
        time.sleep(0.5)
        rec, out = self.record(7)
        after = self.start(PHP, os.path.join(self.tmp, "hot.php"))
        time.sleep(6)
        prof, err = self.finish(rec, out)
        for p in (before, after):
            self.stop(p)
        for p in (before, after):
            samples = of_pid(prof, p.pid)
            self.assertGreater(len(samples), 0, "pid %d has no samples\n%s" % (p.pid, err))
            # before its tables are loaded a process is walked by the kernel's frame-pointer
            # walk (short native stacks); once loaded, every whole stack names the PHP frames
            whole = [s for s in samples if "_start" in s.stack]
            self.assertGreater(share(samples, lambda s: s in whole), 0.5,
                               "pid %d\n%s" % (p.pid, err))
            self.assertGreaterEqual(
                share(whole, lambda s: parent_of(s, "hot_fn") == "caller_fn"), 0.90,
                "pid %d\n%s" % (p.pid, err))

    def test_a_process_in_its_own_mount_namespace(self):
        # an interpreter only its namespace has: a private tmpfs holding a copy of it
        ns_dir = os.path.join(self.tmp, "ns")
        os.mkdir(ns_dir)
        script = ("mount -t tmpfs none {d} && cp {php} {d}/php8.2 && cp {src} {d}/nshot.php "
                  "&& exec {d}/php8.2 {d}/nshot.php").format(
                      d=ns_dir, php=PHP, src=os.path.join(self.tmp, "hot.php"))
        rec, out = self.record(7)
        in_ns = self.start("unshare", "-m", "--propagation", "private", "sh", "-c", script)
        time.sleep(6)
        self.assertIsNone(in_ns.poll(), "the namespaced interpreter did not start")
        self.assertFalse(os.path.exists(os.path.join(ns_dir, "php8.2")))
        prof, err = self.finish(rec, out)
        self.stop(in_ns)
        samples = of_pid(prof, in_ns.pid)
        whole = [s for s in samples if "_start" in s.stack]
        self.assertGreater(len(whole), 0, err)
        self.assertGreaterEqual(share(whole, lambda s: parent_of(s, "hot_fn") == "caller_fn"),
                                0.90, err)
        files = {prof.function_files[i] for s in whole for f, i in zip(s.stack, s.function_ids)
                 if f == "hot_fn"}
        self.assertEqual(files, {os.path.join(ns_dir, "nshot.php")})

    def test_a_method_is_named_class_colon_colon_method(self):
        samples, prof, err = self.record_alone("method.php", 5)
        self.assertGreaterEqual(
            share(samples, lambda s: parent_of(s, "Spinner::spin") == "drive"), 0.90, err)

    def test_php_called_back_from_c_reads_php_then_native_then_php(self):
        # array_map (C) calls cb_hot: execute_ex is entered again (ZEND_CALL_TOP), so the
        # stack reads cb_hot, the C frames that called it, then mapper, in call order
        p = self.start(PHP, os.path.join(self.tmp, "callback.php"))
        time.sleep(0.5)
        rec, out = self.record(5, ["--pid", str(p.pid)])
        prof, err = self.finish(rec, out)
        self.stop(p)
        samples = [s for s in of_pid(prof, p.pid) if "cb_hot" in s.stack]
        self.assertGreater(len(samples), 0, err)

        def ordered(s):
            st = s.stack
            if "zend_call_function" not in st or "mapper" not in st:
                return False
            hot, c, caller = st.index("cb_hot"), st.index("zend_call_function"), \
                st.index("mapper")
            # no PHP frame between cb_hot and the C call, which is below mapper's frame
            return hot < c < caller and "[php]" not in s.modules[hot + 1:c + 1]

        self.assertGreaterEqual(share(samples, ordered), 0.90, err)

    def test_php_fpm_requests_from_a_fastcgi_driver_are_named(self):
        if not os.access(FPM, os.X_OK):
            self.skipTest("%s not installed" % FPM)
        port = free_port()
        conf = os.path.join(self.tmp, "fpm.conf")
        with open(conf, "w") as f:
            f.write(FPM_CONF.format(d=self.tmp, port=port))
        master = self.start(FPM, "--nodaemonize", "--allow-to-run-as-root", "--fpm-config", conf)
        script = os.path.join(self.tmp, "request.php")
        deadline = time.monotonic() + 15
        while True:  # until the worker answers
            try:
                body = fcgi_get(port, script)
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline, "php-fpm did not answer")
                time.sleep(0.2)
        self.assertIn(str(sum(i % 11 for i in range(300000))).encode(), body)
        workers = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True,
                                 text=True).stdout.split()
        self.assertEqual(len(workers), 1, workers)
        worker = int(workers[0])

        stop = threading.Event()
        served = [0]

        def drive():
            while not stop.is_set():
                fcgi_get(port, script)
                served[0] += 1

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        try:
            rec, out = self.record(6, ["--pid", str(worker)])
            prof, err = self.finish(rec, out)
        finally:
            stop.set()
            driver.join(30)
            # SIGTERM: the master stops its workers (a SIGKILL left them running, orphaned)
            master.terminate()
            master.wait(30)
            try:
                os.kill(worker, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.assertGreater(served[0], 10)
        samples = of_pid(prof, worker)
        self.assertGreater(len(samples), 0, err)
        # between requests the worker waits in accept(): those samples run no PHP
        busy = [s for s in samples if "request_hot" in s.stack or "handle_request" in s.stack
                or "execute_ex" in s.stack]
        self.assertGreater(len(busy), 0, err)
        under = share(busy, lambda s: parent_of(s, "request_hot") == "handle_request")
        self.assertGreaterEqual(under, 0.90, err)
        files = {prof.function_files[i] for s in busy for f, i in zip(s.stack, s.function_ids)
                 if f == "request_hot"}
        self.assertEqual(files, {script})


if __name__ == "__main__":
    harness.main()
