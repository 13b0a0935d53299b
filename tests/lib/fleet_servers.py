# SPDX-License-Identifier: Apache-2.0
# Throwaway PostgreSQL and ClickHouse servers for fleet-mode tests: started once per test
# process on free loopback ports with their data under $ROOTTRACE_BUILD/fleet-servers/, as the
# servers' own unprivileged users when running as root (PostgreSQL refuses root), and stopped at
# exit, on failure and on SIGTERM too: a server that fails to start (or is interrupted while
# starting) stops itself before the error goes on, and the others already started are stopped
# with it, so a failed start leaves no server behind. Each fresh_databases() call gives one new
# database on each server, so tests never see each other's rows.
#
# ROOTTRACE_FLEET_CLUSTER=SxR (set before the first use, e.g. "2x1" or "1x2") makes the
# ClickHouse side a cluster instead: a ZooKeeper (Debian's zookeeper package) and S shards of R
# replicas, each a clickhouse-server with the generated remote_servers cluster "roottrace", its
# <macros> and distributed DDL; fresh_databases() then migrates each new database onto the
# cluster (migrate --cluster) and ch is the first shard's first replica (nodes: all of them).
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
ZK_JAR = "/usr/share/java/zookeeper.jar"
CLUSTER = "roottrace"

_servers = None
_counter = itertools.count(1)


def available():
    """None when both servers can run here, else why not (tests skip with it)."""
    if not os.path.exists(os.path.join(PG_BIN, "pg_ctl")):
        return "PostgreSQL 15 is not installed (scripts/install-deps.sh)"
    if not os.path.exists(CH_SERVER):
        return "clickhouse-server is not installed (scripts/install-deps.sh)"
    if cluster_shape() and not os.path.exists(ZK_JAR):
        return "zookeeper is not installed (scripts/install-deps.sh)"
    return None


def cluster_shape():
    """(shards, replicas) of ROOTTRACE_FLEET_CLUSTER, None for one server."""
    shape = os.environ.get("ROOTTRACE_FLEET_CLUSTER", "")
    if not shape:
        return None
    shards, replicas = shape.split("x")
    return int(shards), int(replicas)


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


def _stop_if_raises(server, fn, *args, **kwargs):
    """fn(*args, **kwargs), stopping server first if it raises (SIGTERM's SystemExit too): a
    server whose start failed half way is not yet known to _Servers, so nothing else would
    stop it."""
    try:
        return fn(*args, **kwargs)
    except BaseException:
        server.stop()
        raise


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
        self.start_again()

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
        # pg_ctl may give up waiting (or be interrupted) with the postmaster still running.
        _stop_if_raises(self, subprocess.run,
                        self.user + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l",
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
  <mark_cache_size>{mark_cache}</mark_cache_size>
  <uncompressed_cache_size>0</uncompressed_cache_size>{cluster}
  <max_concurrent_queries>100</max_concurrent_queries>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <admin><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>admin</profile><quota>default</quota></admin>
  </users>
  <profiles><default></default><admin><readonly>0</readonly></admin></profiles>
  <quotas><default></default></quotas>
</yandex>
"""


# A cluster node's part of its config: {replicas} per shard, ZooKeeper, its own macros.
_CH_CLUSTER = """
  <interserver_http_port>{interserver}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <remote_servers><""" + CLUSTER + """>{shards}</""" + CLUSTER + """></remote_servers>
  <zookeeper><node><host>127.0.0.1</host><port>{zk}</port></node></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>{shard}</shard><replica>{replica}</replica></macros>"""


class _ClickHouse:
    def __init__(self, root, name="clickhouse", tcp=None, cluster=""):
        """cluster: the _CH_CLUSTER text (with this node's ports), "" for one server."""
        self.dir = os.path.join(root, name)
        self.port = _free_port()
        self.tcp = tcp or _free_port()
        os.makedirs(os.path.join(self.dir, "data"))
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            # A cluster's nodes share the machine: a small mark cache each.
            f.write(_CH_CONFIG.format(dir=self.dir, http=self.port, tcp=self.tcp,
                                      mark_cache=(64 << 20) if cluster else 5368709120,
                                      cluster=cluster))
        _chown(self.dir, "clickhouse")
        self.proc = None
        self.start_again()

    def start_again(self):
        self.proc = subprocess.Popen(
            _as_user("clickhouse") + [CH_SERVER, "--config-file=%s/config.xml" % self.dir],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr.log"), "a"),
            start_new_session=True)
        _stop_if_raises(self, _wait, self._ping, "clickhouse-server",
                        os.path.join(self.dir, "error.log"))

    def _ping(self):
        if self.proc.poll() is not None:
            raise RuntimeError("clickhouse-server exited: %s" %
                               _tail(os.path.join(self.dir, "error.log")))
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.port,
                                          timeout=1).read() == b"Ok.\n"
        except OSError:
            return False

    def has_ddl_queue(self):
        if self.proc.poll() is not None:
            raise RuntimeError("clickhouse-server exited: %s" %
                               _tail(os.path.join(self.dir, "error.log")))
        try:
            return int(self.query("SELECT count() FROM system.zookeeper"
                                  " WHERE path = '/clickhouse/task_queue'")) > 0
        except (OSError, ValueError):
            return False

    def query(self, sql):
        # On a cluster, IN and JOIN subqueries of Distributed tables run on the initiator.
        url = "http://127.0.0.1:%d/%s" % (self.port, "?distributed_product_mode=global"
                                           if cluster_shape() else "")
        req = urllib.request.Request(url, data=sql.encode())
        return urllib.request.urlopen(req, timeout=60).read().decode()

    def reload_config(self):
        """Reloads config.xml's users and profiles now (the server otherwise looks at the file
        every 2 s, and only when its mtime's second changed), as the admin user: its profile sets
        readonly 0, since every profile starts from the default one's settings."""
        req = urllib.request.Request("http://127.0.0.1:%d/?user=admin" % self.port,
                                     data=b"SYSTEM RELOAD CONFIG")
        urllib.request.urlopen(req, timeout=60).read()

    def url(self, db):
        return "clickhouse+http://127.0.0.1:%d/%s" % (self.port, db)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # throwaway data: no shutdown needed
            self.proc.wait()
        self.proc = None


class _ZooKeeper:
    """A standalone ZooKeeper on a free loopback port, its data in its own directory."""

    def __init__(self, root):
        self.dir = os.path.join(root, "zookeeper")
        self.port = _free_port()
        os.makedirs(os.path.join(self.dir, "data"))
        with open(os.path.join(self.dir, "zoo.cfg"), "w") as f:
            f.write("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s/data\n"
                    "clientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,srvr\n" % (self.dir, self.port))
        self.proc = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:+UseSerialGC", "-cp", "/etc/zookeeper/conf:" + ZK_JAR,
             "-Dzookeeper.log.dir=" + self.dir, "-Dzookeeper.root.logger=WARN,CONSOLE",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain",
             os.path.join(self.dir, "zoo.cfg")],
            stdout=open(os.path.join(self.dir, "out.log"), "a"), stderr=subprocess.STDOUT,
            start_new_session=True)
        _stop_if_raises(self, _wait, self._ok, "zookeeper", os.path.join(self.dir, "out.log"))

    def _ok(self):
        if self.proc.poll() is not None:
            raise RuntimeError("zookeeper exited: %s" % _tail(os.path.join(self.dir, "out.log")))
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(16) == b"imok"
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None


def _cluster_shards_text(tcp):
    """remote_servers' shards of the cluster: tcp[s][r] is shard s's replica r's TCP port."""
    return "".join(
        "<shard><internal_replication>true</internal_replication>%s</shard>" % "".join(
            "<replica><host>127.0.0.1</host><port>%d</port></replica>" % p for p in ports)
        for ports in tcp)


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
        self.pg = self.ch = self.zk = None
        self.nodes = []

    def start(self):
        """Starts the servers, each one known to stop() as soon as it runs (a half-started one
        stops itself), so that stop() after a failure here stops all that did start."""
        self.pg = _Postgres(self.root)
        if cluster_shape():
            self._start_cluster(*cluster_shape())
        else:
            self.nodes.append(_ClickHouse(self.root))
        self.ch = self.nodes[0]

    def _start_cluster(self, shards, replicas):
        """A ZooKeeper and shards x replicas ClickHouse nodes, node i of shard i // replicas."""
        self.zk = _ZooKeeper(self.root)
        tcp = [[_free_port() for _ in range(replicas)] for _ in range(shards)]
        text = _cluster_shards_text(tcp)
        for s in range(shards):
            for r in range(replicas):
                part = _CH_CLUSTER.format(interserver=_free_port(), shards=text, zk=self.zk.port,
                                          shard=s + 1, replica="r%d" % (r + 1))
                node = _ClickHouse(self.root, "clickhouse-%d-%d" % (s + 1, r + 1),
                                   tcp=tcp[s][r], cluster=part)
                self.nodes.append(node)
                # 18.16 can crash when two servers' DDL workers create the queue's path in
                # ZooKeeper at once: the next one starts once this one has it.
                _wait(node.has_ddl_queue, "clickhouse-server's ZooKeeper session",
                      os.path.join(node.dir, "error.log"))

    def stop(self):
        for s in self.nodes[::-1] + [self.zk, self.pg]:
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
    """The process's servers, started on first use. They are _servers while they start, so
    that SIGTERM then stops those already running; a failed start stops them all (the next
    call starts afresh)."""
    global _servers
    if _servers is None:
        atexit.unregister(_stop_at_exit)  # once, however many starts fail
        atexit.register(_stop_at_exit)
        signal.signal(signal.SIGTERM, _on_signal)
        _servers = _Servers()
        try:
            _servers.start()
        except BaseException:
            _stop_at_exit()
            raise
    return _servers


def http_servers():
    """Every ClickHouse server's HTTP host:port, comma-separated (--clickhouse-servers)."""
    return ",".join("127.0.0.1:%d" % n.port for n in servers().nodes)


def fresh_databases():
    """(postgresql URL, clickhouse+http URL) of a new empty database on each server."""
    s = servers()
    name = "rt_%d" % next(_counter)
    s.pg.psql("CREATE DATABASE %s" % name)
    if cluster_shape():
        # The cluster's schema: later migrates (the collector's init) keep its mode.
        r = subprocess.run([os.path.join(build_dir(), "roottrace-collector"), "migrate",
                            "--control-store", s.pg.url(name), "--profile-store", s.ch.url(name),
                            "--cluster", CLUSTER], capture_output=True, text=True, timeout=300)
        if r.returncode:
            raise RuntimeError("migrate --cluster: %s" % r.stderr.strip())
    return s.pg.url(name), s.ch.url(name)
