# SPDX-License-Identifier: Apache-2.0
# Throwaway PostgreSQL and ClickHouse servers for fleet-mode tests: started once per test
# process on free loopback ports with their data under $ROOTTRACE_BUILD/fleet-servers/, as the
# servers' own unprivileged users when running as root (PostgreSQL refuses root), and stopped at
# exit, on failure and on SIGTERM too. Each fresh_databases() call gives one new database on
# each server, so tests never see each other's rows.
#
#   pg_url, ch_url = fleet_servers.fresh_databases()
import atexit
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from collector_fixture import build_dir

PG_BIN = "/usr/lib/postgresql/15/bin"
CH_SERVER = "/usr/sbin/clickhouse-server"

_servers = None
_counter = itertools.count(1)


def available():
    """None when both servers can run here, else why not (tests skip with it)."""
    if not os.path.exists(os.path.join(PG_BIN, "pg_ctl")):
        return "PostgreSQL 15 is not installed (scripts/install-deps.sh)"
    if not os.path.exists(CH_SERVER):
        return "clickhouse-server is not installed (scripts/install-deps.sh)"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user(user):
    """argv prefix running a command as user when we are root (servers refuse or dislike root)."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", user, "--"]


def _chown(path, user):
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        for root, dirs, files in os.walk(path):
            os.chown(root, pw.pw_uid, pw.pw_gid)
            for f in files:
                os.chown(os.path.join(root, f), pw.pw_uid, pw.pw_gid)


def _wait(check, what, log, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError("%s did not start: %s" % (what, _tail(log)))


def _tail(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-2000:]
    except OSError:
        return "(no log)"


class _Postgres:
    def __init__(self, root):
        self.dir = os.path.join(root, "postgres")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = _free_port()
        os.makedirs(self.dir)
        _chown(self.dir, "postgres")
        self.user = _as_user("postgres")
        subprocess.run(self.user + [os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U",
                                    "postgres", "-A", "trust", "--no-sync"],
                       check=True, capture_output=True, timeout=120)
        opts = "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off" % (self.port, self.dir)
        subprocess.run(self.user + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l",
                                    self.log, "-o", opts, "-w", "start"],
                       check=True, capture_output=True, timeout=120)

    def psql(self, sql, db="postgres"):
        return subprocess.run(self.user + [os.path.join(PG_BIN, "psql"), "-h", "127.0.0.1",
                                           "-p", str(self.port), "-U", "postgres", "-d", db,
                                           "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
                              check=True, capture_output=True, text=True, timeout=60).stdout

    def url(self, db):
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, db)

    def stop(self):
        subprocess.run(self.user + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m",
                                    "immediate", "-w", "stop"], capture_output=True, timeout=60)

    def start_again(self):
        opts = "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off" % (self.port, self.dir)
        subprocess.run(self.user + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l",
                                    self.log, "-o", opts, "-w", "start"],
                       check=True, capture_output=True, timeout=120)


_CH_CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/error.log</errorlog>
    <console>0</console></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/data/tmp/</tmp_path>
  <user_files_path>{dir}/data/user_files/</user_files_path>
  <format_schema_path>{dir}/data/format_schemas/</format_schema_path>
  <mark_cache_size>5368709120</mark_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
  </users>
  <profiles><default></default></profiles>
  <quotas><default></default></quotas>
</yandex>
"""


class _ClickHouse:
    def __init__(self, root):
        self.dir = os.path.join(root, "clickhouse")
        self.port = _free_port()
        os.makedirs(os.path.join(self.dir, "data"))
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(_CH_CONFIG.format(dir=self.dir, http=self.port, tcp=_free_port()))
        _chown(self.dir, "clickhouse")
        self.proc = None
        self.start_again()

    def start_again(self):
        self.proc = subprocess.Popen(
            _as_user("clickhouse") + [CH_SERVER, "--config-file=%s/config.xml" % self.dir],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr.log"), "a"),
            start_new_session=True)
        _wait(self._ping, "clickhouse-server", os.path.join(self.dir, "error.log"))

    def _ping(self):
        if self.proc.poll() is not None:
            raise RuntimeError("clickhouse-server exited: %s" %
                               _tail(os.path.join(self.dir, "error.log")))
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.port,
                                          timeout=1).read() == b"Ok.\n"
        except OSError:
            return False

    def query(self, sql):
        req = urllib.request.Request("http://127.0.0.1:%d/" % self.port, data=sql.encode())
        return urllib.request.urlopen(req, timeout=60).read().decode()

    def url(self, db):
        return "clickhouse+http://127.0.0.1:%d/%s" % (self.port, db)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # throwaway data: no shutdown needed
            self.proc.wait()
        self.proc = None


def _reachable_by(path, user):
    """Whether user may enter path (every parent must let it through)."""
    prefix = _as_user(user)
    return not prefix or subprocess.run(prefix + ["test", "-x", path]).returncode == 0


class _Servers:
    def __init__(self):
        self.root = os.path.join(build_dir(), "fleet-servers", str(os.getpid()))
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        os.chmod(self.root, 0o755)
        if not all(_reachable_by(self.root, u) for u in ("postgres", "clickhouse")):
            # A build dir under a private home: the servers' users cannot reach it.
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = tempfile.mkdtemp(prefix="rt-fleet-servers-")
            os.chmod(self.root, 0o755)
        self.pg = self.ch = None
        try:
            self.pg = _Postgres(self.root)
            self.ch = _ClickHouse(self.root)
        except Exception:
            self.stop()
            raise

    def stop(self):
        for s in (self.ch, self.pg):
            if s is not None:
                try:
                    s.stop()
                except Exception as e:  # noqa: BLE001 -- keep stopping the other one
                    print("fleet_servers: stop: %s" % e, file=sys.stderr)
        shutil.rmtree(self.root, ignore_errors=True)


def _stop_at_exit():
    global _servers
    if _servers is not None:
        _servers.stop()
        _servers = None


def _on_signal(signum, frame):
    _stop_at_exit()
    sys.exit(128 + signum)


def servers():
    """The process's servers, started on first use."""
    global _servers
    if _servers is None:
        atexit.register(_stop_at_exit)
        signal.signal(signal.SIGTERM, _on_signal)
        _servers = _Servers()
    return _servers


def fresh_databases():
    """(postgresql URL, clickhouse+http URL) of a new empty database on each server."""
    s = servers()
    name = "rt_%d" % next(_counter)
    s.pg.psql("CREATE DATABASE %s" % name)
    return s.pg.url(name), s.ch.url(name)
