# SPDX-License-Identifier: Apache-2.0
# A real roottrace-collector for tests: started on 127.0.0.1 (port 0, the bound port read from
# its log) with a temporary data dir, initialised, with helpers to mint tokens, make HTTP
# calls with urllib, upload pprof, and read the stored rows directly. Stops and cleans up.
# backend "sqlite" (default) keeps both stores in the data dir; "fleet" puts the control plane
# in a fresh PostgreSQL database and the profiles in a fresh ClickHouse database of the
# throwaway servers of fleet_servers.py. ROOTTRACE_TEST_BACKEND=fleet changes the default, so
# that a whole suite runs against the fleet backends.
#
#   with Collector() as c:
#       tok = c.create_token("collector")
#       status, body = c.get_json("/api/apm/config", tok)
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import unittest
import urllib.request

# Fleet mode (schema v7): the series dictionary as a join's right side, {ch} the database.
FLEET_SERIES = ("SELECT series_id, any(environment) AS environment, any(service) AS service,"
                " any(profile_type) AS profile_type, any(deployment) AS deployment,"
                " any(node) AS node FROM {ch}.series GROUP BY series_id")


def build_dir():
    """Absolute: tests pass it to programs that run in other directories (go build)."""
    return os.path.abspath(os.environ.get("ROOTTRACE_BUILD") or os.path.join(
        os.environ.get("ROOTTRACE_SRC", os.getcwd()), "build"))


def collector_binary():
    return os.path.join(build_dir(), "roottrace-collector")


def _pg_value(text):
    """psql -A text -> the Python value sqlite3 would give for the same column."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def default_backend():
    return os.environ.get("ROOTTRACE_TEST_BACKEND", "sqlite")


def stack_function_ids(blob):
    """The function ids of a stacks dictionary row (`stacks.ids`: varints, root first)."""
    ids, cur, shift = [], 0, 0
    for byte in blob:
        cur |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            ids.append(cur)
            cur, shift = 0, 0
    return ids


class Collector:
    def __init__(self, environment="production", serve_args=(), start=True, backend=None,
                 stores=None, data=None):
        """stores: (postgresql URL, clickhouse URL) to share with another Collector; the
        stores are then not initialised again. data: the data directory to use (not yet
        existing; e.g. on a small file system), instead of one in the temporary directory."""
        self.backend = backend or default_backend()
        self.binary = collector_binary()
        self.tmp = tempfile.mkdtemp(prefix="rt-collector-")
        self.data = data or os.path.join(self.tmp, "data")
        self.log_path = os.path.join(self.tmp, "collector.log")
        self.environment = environment
        self.serve_args = list(serve_args)
        self.proc = None
        self.port = None
        self.tokens = {}  # secret -> (kind, environment, role)
        self.pg_url = self.ch_url = None
        if self.backend == "fleet":
            import fleet_servers
            why = fleet_servers.available()
            if why:  # make check installs them: a missing server fails, never skips
                raise RuntimeError(why)
            self.pg_url, self.ch_url = stores or fleet_servers.fresh_databases()
        if stores:
            self.admin_token = None
            os.makedirs(self.data, mode=0o700)  # serve is given --data (fleet: not used)
        else:
            out = self.cli("init", "--data", self.data, "--environment", environment,
                           *self.server_args())
            self.admin_token = out.strip()
            self.tokens[self.admin_token] = ("user", environment, "admin")
        if start:
            self.start()

    # ------------------------------------------------------------------ process ----
    def cli(self, *args, check=True):
        r = subprocess.run([self.binary] + list(args), capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError("%s %s: exit %d: %s" % (self.binary, " ".join(args), r.returncode,
                                                       r.stderr.strip()))
        return r.stdout

    def start(self, extra_args=()):
        assert self.proc is None, "already running"
        self._log = open(self.log_path, "a")
        offset = self._log.tell()
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--data", self.data, "--listen", "127.0.0.1:0"]
            + self.server_args()
            + self.serve_args + list(extra_args),
            stdout=self._log, stderr=self._log)
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(self.log_path) as f:
                f.seek(offset)
                m = re.search(r"listening on [0-9.]+:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        log = self.log()
        self.stop()
        raise RuntimeError("collector did not start: %s" % log[-2000:])

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """SIGTERM (graceful) by default; returns the exit code."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                rc = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
            self.proc = None
            self._log.close()
        return rc

    def server_args(self):
        """The fleet stores' options for every subcommand (none for SQLite)."""
        if self.backend != "fleet":
            return []
        import fleet_servers
        # On a cluster, where the tier builder reaches each shard (the servers' HTTP ports
        # differ on loopback: system.clusters' hosts at one port would not do).
        servers = (["--clickhouse-servers", fleet_servers.http_servers()]
                   if fleet_servers.cluster_shape() else [])
        return ["--control-store", self.pg_url, "--profile-store", self.ch_url] + servers

    def store_args(self):
        """Options naming the control store for token subcommands."""
        if self.backend != "fleet":
            return ["--data", self.data]
        return ["--control-store", self.pg_url]

    def kill(self):
        """kill -9: no chance to flush or close anything."""
        return self.stop(sig=signal.SIGKILL)

    def restart(self, extra_args=()):
        self.stop()
        return self.start(extra_args)

    def vm_kib(self, field="VmHWM"):
        """A /proc/PID/status size of the running collector in KiB (VmHWM: peak RSS)."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError("%s missing from /proc/%d/status" % (field, self.proc.pid))

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def close(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------- tokens ----
    def create_token(self, kind="collector", environment=None, role=None, name=None):
        env = environment or self.environment
        args = ["token", "create"] + self.store_args() + ["--environment", env, "--kind", kind]
        if role:
            args += ["--role", role]
        if name:
            args += ["--name", name]
        secret = self.cli(*args).strip()
        self.tokens[secret] = (kind, env, role)
        return secret

    def list_tokens(self):
        lines = self.cli("token", "list", *self.store_args()).splitlines()[1:]
        out = []
        for line in lines:
            f = line.split()
            out.append({"id": int(f[0]), "name": f[1], "environment": f[2], "kind": f[3],
                        "role": f[4], "state": f[5]})
        return out

    def revoke_token(self, token_id):
        self.cli("token", "revoke", *self.store_args(), str(token_id))

    def token_id(self, name):
        return [t["id"] for t in self.list_tokens() if t["name"] == name][-1]

    # --------------------------------------------------------------------- HTTP ----
    def url(self, path, params=None):
        q = "?" + urllib.parse.urlencode(params) if params else ""
        return "http://127.0.0.1:%d%s%s" % (self.port, path, q)

    def request(self, method, path, token=None, body=None, params=None, headers=None,
                content_type=None, scheme=None, timeout=30):
        """Returns (status, headers dict, body bytes); never raises on an HTTP status."""
        hdrs = dict(headers or {})
        if token is not None:
            if scheme is None:
                scheme = "Collector" if token.startswith("rtc_") else "Bearer"
            hdrs["Authorization"] = "%s %s" % (scheme, token)
        if content_type:
            hdrs["Content-Type"] = content_type
        req = urllib.request.Request(self.url(path, params), data=body, method=method,
                                     headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def _json(self, status, body):
        try:
            return status, json.loads(body) if body else None
        except ValueError:
            return status, body

    def get_json(self, path, token=None, params=None, **kw):
        status, _, body = self.request("GET", path, token, params=params, **kw)
        return self._json(status, body)

    def put_json(self, path, token, doc, **kw):
        data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        kw.setdefault("content_type", "application/json")
        status, _, body = self.request("PUT", path, token, body=data, **kw)
        return self._json(status, body)

    def post_json(self, path, token, doc, **kw):
        data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        kw.setdefault("content_type", "application/json")
        status, _, body = self.request("POST", path, token, body=data, **kw)
        return self._json(status, body)

    def upload(self, token, data, service, profile_type, deployment=None, params=None,
               headers=None, content_type="application/octet-stream"):
        """POST /api/apm/profiles; returns (status, parsed JSON body)."""
        p = {"service": service, "profile_type": profile_type}
        if deployment is not None:
            p["deployment"] = deployment
        p.update(params or {})
        status, _, body = self.request("POST", "/api/apm/profiles", token, body=data, params=p,
                                       headers=headers, content_type=content_type)
        return self._json(status, body)

    def metrics(self):
        status, _, body = self.request("GET", "/metrics")
        assert status == 200, status
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    # ----------------------------------------------------------- stored data ----
    def db(self):
        """A read-only connection to the collector's SQLite file (WAL readers are safe)."""
        if self.backend == "fleet":
            raise unittest.SkipTest("reads the SQLite file directly (no SQLite in fleet mode)")
        path = os.path.join(self.data, "roottrace.db")
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)

    def stored_rows(self, service=None, profile_type=None, environment=None):
        """[(environment, service, deployment, profile_type, bucket, frames tuple, value)]."""
        if self.backend == "fleet":
            return self._clickhouse_rows(service, profile_type, environment)
        sql = ("SELECT s.environment, s.service, s.deployment, s.profile_type, r.bucket,"
               " st.ids, r.value FROM rollups r JOIN series s ON s.id = r.series_id"
               " JOIN stacks st ON st.id = r.stack_id WHERE 1=1")
        args = []
        for col, val in (("s.service", service), ("s.profile_type", profile_type),
                         ("s.environment", environment)):
            if val is not None:
                sql += " AND %s = ?" % col
                args.append(val)
        # one read transaction: both SELECTs see one snapshot, so retention deleting a
        # stack's names between them cannot leave a row naming a function already gone
        db = self.db()
        try:
            db.isolation_level = None
            db.execute("BEGIN")
            rows = db.execute(sql, args).fetchall()
            names = dict(db.execute("SELECT id, name FROM functions"))
            db.execute("COMMIT")
        finally:
            db.close()
        return [(e, s, d, t, b, tuple(names[i] for i in stack_function_ids(f)), v)
                for e, s, d, t, b, f, v in rows]

    def stored_total(self, service=None, profile_type=None, environment=None):
        return sum(r[-1] for r in self.stored_rows(service, profile_type, environment))

    def _clickhouse_rows(self, service, profile_type, environment):
        import fleet_servers
        db = self.ch_url.rsplit("/", 1)[1]
        where = "".join(" AND %s = '%s'" % (col, val) for col, val in (
            ("service", service), ("profile_type", profile_type),
            ("environment", environment)) if val is not None)
        out = fleet_servers.servers().ch.query(
            "SELECT environment, service, deployment, profile_type, bucket, frames, sum(value)"
            " AS value FROM (SELECT * FROM %s.rollups ANY LEFT JOIN (SELECT stack_hash,"
            " any(frames) AS frames FROM %s.stacks GROUP BY stack_hash) USING stack_hash)"
            " ANY INNER JOIN (%s) USING series_id WHERE stack_hash != toFixedString('', 16)%s"
            " GROUP BY environment, service, deployment, profile_type, bucket, frames"
            " FORMAT JSONEachRow" % (db, db, FLEET_SERIES.format(ch=db), where))
        rows = [json.loads(line) for line in out.splitlines() if line]
        return [(r["environment"], r["service"], r["deployment"], r["profile_type"],
                 int(r["bucket"]), tuple(r["frames"].split("\n")), int(r["value"]))
                for r in rows]

    # Tables of the SQLite schema -> how fleet mode counts the same rows (series named by id
    # since schema v7: joined with the series dictionary, FLEET_SERIES).
    _FLEET_COUNTS = {
        "rollups": "SELECT count() FROM (SELECT 1 FROM {ch}.rollups ANY INNER JOIN (%s) USING"
                   " series_id WHERE stack_hash != toFixedString('', 16) GROUP BY environment,"
                   " service, profile_type, deployment, bucket, stack_hash)" % FLEET_SERIES,
        "stacks": "SELECT uniqExact(stack_hash) FROM {ch}.stacks",
        "buckets": "SELECT count() FROM (SELECT 1 FROM {ch}.uploads ANY INNER JOIN (%s) USING"
                   " series_id GROUP BY environment, service, profile_type, deployment, bucket)"
                   % FLEET_SERIES,
        "series": "SELECT count() FROM (SELECT 1 FROM {ch}.uploads ANY INNER JOIN (%s) USING"
                  " series_id GROUP BY environment, service, profile_type, deployment)"
                  % FLEET_SERIES,
    }

    def control_sql(self, sql):
        """Runs sql on the control-plane store around the API (an older version's rows, a
        manual edit): the SQLite file, or the PostgreSQL database in fleet mode."""
        if self.backend == "fleet":
            import fleet_servers
            fleet_servers.servers().pg.psql(sql, db=self.pg_url.rsplit("/", 1)[1])
            return
        db = sqlite3.connect(os.path.join(self.data, "roottrace.db"), timeout=10)
        db.execute(sql)
        db.commit()
        db.close()

    def control_rows(self, sql):
        """The rows of a SELECT on the control-plane store (SQLite file or PostgreSQL), as
        tuples of int, float or str (NULL: None)."""
        if self.backend != "fleet":
            with self.db() as db:
                return db.execute(sql).fetchall()
        import fleet_servers
        out = fleet_servers.servers().pg.psql(sql, db=self.pg_url.rsplit("/", 1)[1])
        return [tuple(_pg_value(v) for v in line.split("|")) for line in out.splitlines()]

    def bucket_uploads(self, service=None):
        """Uploads merged into each (series, bucket), as [(n,)]: heap averages divide by it."""
        if self.backend != "fleet":
            with self.db() as db:
                return db.execute("SELECT b.uploads FROM buckets b JOIN series s ON"
                                  " s.id = b.series_id WHERE ?1 IS NULL OR s.service = ?1",
                                  (service,)).fetchall()
        where = " WHERE service = '%s'" % service if service else ""
        out = self.clickhouse("SELECT toInt64(sumMerge(uploads)) FROM {db}.uploads ANY INNER"
                              " JOIN (%s) USING series_id%s GROUP BY environment, service,"
                              " profile_type, deployment, bucket"
                              % (FLEET_SERIES.format(ch="{db}"), where))
        return [(int(v),) for v in out.split()]

    def clickhouse(self, sql):
        """Fleet mode: the answer of sql on the profile store, {db} its database; {parts} is
        system.parts of every shard and {local} the suffix of a shard's own tables on a
        cluster (collector/store/clickhouse/ch_ddl.h), system.parts and "" on one server."""
        import fleet_servers
        cluster = fleet_servers.CLUSTER if fleet_servers.cluster_shape() else None
        return fleet_servers.servers().ch.query(sql.format(
            db=self.ch_url.rsplit("/", 1)[1], local="_local" if cluster else "",
            parts="cluster('%s', system, parts)" % cluster if cluster else "system.parts"))

    def count(self, table):
        if self.backend == "fleet":
            import fleet_servers
            s = fleet_servers.servers()
            if table in self._FLEET_COUNTS:
                db = self.ch_url.rsplit("/", 1)[1]
                return int(s.ch.query(self._FLEET_COUNTS[table].format(ch=db)))
            return int(s.pg.psql("SELECT count(*) FROM %s" % table,
                                 db=self.pg_url.rsplit("/", 1)[1]))
        with self.db() as db:
            return db.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
