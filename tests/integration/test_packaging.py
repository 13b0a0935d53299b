# SPDX-License-Identifier: Apache-2.0
# Packaging checks: the Kubernetes manifests and systemd units carry what the agent and the
# collector need (and no more); `make deb` and `make install` produce working, complete trees.
import configparser
import functools
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
import yaml

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
BUILD = os.environ.get("ROOTTRACE_BUILD", os.path.join(SRC, "build"))
K8S = os.path.join(SRC, "packaging", "k8s")
UNITS = os.path.join(SRC, "packaging", "systemd")
VERSION = open(os.path.join(SRC, "VERSION")).read().strip()

AGENT_CAPS = ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_RESOURCE", "CAP_SYS_PTRACE",
              "CAP_DAC_READ_SEARCH"]
HOST_PATHS = ["/sys/kernel/btf", "/sys/fs/cgroup", "/proc"]


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (kubectl's strict decoding does too)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key %r" % key,
                                                    key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_manifests():
    """Every document of every packaging/k8s/*.yaml, as (file, document)."""
    docs = []
    for name in sorted(os.listdir(K8S)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(K8S, name)) as f:
                docs.extend((name, d) for d in yaml.load_all(f, Loader=StrictLoader)
                            if d is not None)
    return docs


def load_fleet_manifests():
    """packaging/k8s/fleet/*.yaml: applied instead of collector.yaml, never with it."""
    fleet = os.path.join(K8S, "fleet")
    docs = []
    for name in sorted(os.listdir(fleet)):
        with open(os.path.join(fleet, name)) as f:
            docs.extend((name, d) for d in yaml.load_all(f, Loader=StrictLoader) if d)
    return docs


def find(docs, kind, name=None):
    hits = [d for _, d in docs if d.get("kind") == kind and
            (name is None or d["metadata"]["name"] == name)]
    if not hits:
        raise AssertionError("no %s%s in packaging/k8s" % (kind, " " + name if name else ""))
    return hits[0]


def parse_quantity(q):
    """Kubernetes quantity -> float (cores for CPU, bytes for memory)."""
    q = str(q)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix in sorted(units, key=len, reverse=True):
        if q.endswith(suffix):
            return float(q[:-len(suffix)]) * units[suffix]
    return float(q)


class KubernetesManifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_manifests()
        cls.ds = find(cls.docs, "DaemonSet", "roottrace-agent")
        cls.pod = cls.ds["spec"]["template"]["spec"]
        cls.agent = cls.pod["containers"][0]

    def test_every_manifest_parses_with_kind_and_name(self):
        self.assertGreaterEqual(len(self.docs), 10)
        for name, d in self.docs:
            self.assertIn("apiVersion", d, name)
            self.assertIn("kind", d, name)
            self.assertTrue(d.get("metadata", {}).get("name"), "%s: %s without a name"
                            % (name, d.get("kind")))

    def test_namespaced_objects_share_one_namespace(self):
        ns = find(self.docs, "Namespace")["metadata"]["name"]
        cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
        for name, d in self.docs:
            if d["kind"] not in cluster_scoped:
                self.assertEqual(d["metadata"].get("namespace"), ns,
                                 "%s: %s %s" % (name, d["kind"], d["metadata"]["name"]))

    def test_agent_sees_the_host_processes(self):
        self.assertIs(self.pod.get("hostPID"), True)

    def test_agent_mounts_btf_cgroup_and_proc_from_the_host(self):
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mounts = {m["name"]: m for m in self.agent["volumeMounts"]}
        host = {v["hostPath"]["path"]: name for name, v in volumes.items() if "hostPath" in v}
        for path in HOST_PATHS:
            self.assertIn(path, host, "no hostPath volume for %s" % path)
            mount = mounts.get(host[path])
            self.assertIsNotNone(mount, "hostPath %s is not mounted" % path)
            self.assertIs(mount.get("readOnly"), True, "%s must be mounted read-only" % path)

    def test_agent_has_the_bpf_capabilities_or_is_privileged(self):
        sc = self.agent["securityContext"]
        if sc.get("privileged"):
            return
        caps = sc["capabilities"]
        self.assertEqual(caps.get("drop"), ["ALL"])
        added = {"CAP_" + c for c in caps["add"]}
        for cap in AGENT_CAPS:
            self.assertIn(cap, added)
        self.assertNotIn("CAP_SYS_ADMIN", added)
        self.assertIs(sc.get("allowPrivilegeEscalation"), False)

    def test_agent_is_probed_and_scraped_on_its_status_listener(self):
        listen = [a for a in self.agent["args"] if a.startswith("--listen=")]
        self.assertEqual(len(listen), 1, self.agent["args"])
        port = int(listen[0].rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in self.agent["ports"]}
        live, ready = self.agent["livenessProbe"], self.agent["readinessProbe"]
        self.assertEqual(live["httpGet"]["path"], "/healthz")
        self.assertEqual(ready["httpGet"]["path"], "/healthz?probe=ready")
        for probe in (live, ready):
            self.assertEqual(ports[probe["httpGet"]["port"]], port)
        notes = self.ds["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(notes["prometheus.io/scrape"], "true")
        self.assertEqual(int(notes["prometheus.io/port"]), port)
        self.assertEqual(notes["prometheus.io/path"], "/metrics")

    def test_agent_tolerates_every_taint(self):
        everything = [t for t in self.pod.get("tolerations", [])
                      if t.get("operator") == "Exists" and "key" not in t and "effect" not in t]
        self.assertTrue(everything, "no toleration matching every taint (operator: Exists)")

    def test_agent_resources_fit_the_benchmark_targets(self):
        res = self.agent["resources"]
        for kind in ("requests", "limits"):
            for what in ("cpu", "memory"):
                self.assertIn(what, res.get(kind, {}), "resources.%s.%s" % (kind, what))
        # targets: <= 0.5% of a core and <= 40 MB RSS; requests cover them, limits exceed them
        self.assertGreaterEqual(parse_quantity(res["requests"]["cpu"]), 0.005)
        self.assertGreaterEqual(parse_quantity(res["requests"]["memory"]), 40e6)
        for what in ("cpu", "memory"):
            self.assertGreater(parse_quantity(res["limits"][what]),
                               parse_quantity(res["requests"][what]))

    def test_agent_service_account_may_read_the_kubelet_pods(self):
        sa = self.pod["serviceAccountName"]
        find(self.docs, "ServiceAccount", sa)
        bindings = [d for _, d in self.docs if d["kind"] == "ClusterRoleBinding" and any(
            s["kind"] == "ServiceAccount" and s["name"] == sa for s in d["subjects"])]
        self.assertTrue(bindings, "no ClusterRoleBinding for ServiceAccount %s" % sa)
        role = find(self.docs, "ClusterRole", bindings[0]["roleRef"]["name"])
        granted = {(r, v) for rule in role["rules"] for r in rule["resources"]
                   for v in rule["verbs"]}
        self.assertIn(("nodes/proxy", "get"), granted)
        for resource, verb in granted:
            self.assertIn(verb, ("get", "list", "watch"), "RBAC grants a write: %s" % verb)

    def test_agent_collector_url_and_token_come_from_a_secret(self):
        secret = find(self.docs, "Secret", "roottrace-agent")
        keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
        env = {e["name"]: e for e in self.agent.get("env", [])}
        url_ref = env["ROOTTRACE_COLLECTOR_URL"]["valueFrom"]["secretKeyRef"]
        self.assertEqual(url_ref["name"], "roottrace-agent")
        self.assertIn(url_ref["key"], keys)
        args = " ".join(self.agent["args"])
        self.assertIn("--collector=$(ROOTTRACE_COLLECTOR_URL)", args)
        token_file = re.search(r"--token-file=(\S+)", args).group(1)
        vols = {v["name"]: v for v in self.pod["volumes"]}
        mount = [m for m in self.agent["volumeMounts"]
                 if token_file.startswith(m["mountPath"] + "/")]
        self.assertTrue(mount, "--token-file %s is on no volume" % token_file)
        sec = vols[mount[0]["name"]]["secret"]
        self.assertEqual(sec["secretName"], "roottrace-agent")
        self.assertIn("token", keys)

    def test_collector_deployment_service_pvc_and_bootstrap_secret(self):
        dep = find(self.docs, "Deployment", "roottrace-collector")
        svc = find(self.docs, "Service", "roottrace-collector")
        pod = dep["spec"]["template"]["spec"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(labels.get(k), v, "Service selector does not match the pods")
        ports = {p["name"] for p in pod["containers"][0]["ports"]}
        self.assertIn(svc["spec"]["ports"][0]["targetPort"], ports)
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
                  if "persistentVolumeClaim" in v]
        self.assertEqual(len(claims), 1)
        find(self.docs, "PersistentVolumeClaim", claims[0])
        # The init container publishes the generated admin token in the bootstrap Secret,
        # with a Role that reaches that one Secret only.
        boot = find(self.docs, "Secret", "roottrace-collector-bootstrap")
        self.assertIn("token", boot.get("stringData", {}) or boot.get("data", {}))
        init = " ".join(" ".join(c.get("args", [])) for c in pod["initContainers"])
        self.assertIn("roottrace-collector init", init)
        self.assertIn("/secrets/roottrace-collector-bootstrap", init)
        binding = [d for _, d in self.docs if d["kind"] == "RoleBinding" and any(
            s["name"] == pod["serviceAccountName"] for s in d["subjects"])]
        self.assertTrue(binding, "no RoleBinding for the collector's ServiceAccount")
        role = find(self.docs, "Role", binding[0]["roleRef"]["name"])
        for rule in role["rules"]:
            self.assertEqual(rule.get("resourceNames"), ["roottrace-collector-bootstrap"])
            self.assertLessEqual(set(rule["verbs"]), {"get", "patch"})
        self.assertIs(pod.get("automountServiceAccountToken"), False)
        self.assertIs(pod["securityContext"].get("runAsNonRoot"), True)
        self.assertEqual(dep["spec"]["replicas"], 1)  # one SQLite writer

    def test_fleet_collector_replicas_budget_and_stores_from_a_secret(self):
        docs = load_fleet_manifests()
        dep = find(docs, "Deployment", "roottrace-collector-fleet")
        pod = dep["spec"]["template"]
        self.assertGreater(dep["spec"]["replicas"], 1)
        pdb = find(docs, "PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         dep["spec"]["selector"]["matchLabels"])
        self.assertGreaterEqual(pdb["spec"]["minAvailable"], 1)
        svc = find(docs, "Service", "roottrace-collector")  # agents need no change
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(pod["metadata"]["labels"].get(k), v)
        args = pod["spec"]["containers"][0]["args"]
        self.assertIn("--config=/etc/roottrace/fleet.conf", args)
        self.assertFalse([a for a in args if "password" in a.lower() or "://" in a],
                         "endpoints and passwords belong in the Secret, not in args")
        secret_volumes = [v["secret"]["secretName"] for v in pod["spec"]["volumes"]
                          if "secret" in v]
        self.assertEqual(len(secret_volumes), 1, pod["spec"]["volumes"])
        secret = find(docs, "Secret", secret_volumes[0])
        conf = secret["stringData"]["fleet.conf"]
        for key in ("control_store", "profile_store", "control_store_password_file",
                    "clickhouse_password_file"):
            self.assertIn(key + " =", conf)
        for _, d in docs:
            self.assertEqual(d["metadata"]["namespace"], "roottrace")

    def test_fleet_collector_memory_limit_holds_its_documented_worst_case(self):
        """docs/reference.md "Limits: collector": 16 + 70 MiB + --max-inflight +
        min(--threads x (--max-upload-memory + 16 MiB), max(--max-decode-memory,
        --max-upload-memory + 16 MiB)), with the flags the manifest passes (fleet mode: a
        thread per connection by default, at most 1,000) under the container's memory limit."""
        dep = find(load_fleet_manifests(), "Deployment", "roottrace-collector-fleet")
        container = dep["spec"]["template"]["spec"]["containers"][0]
        flags = dict(a[2:].split("=", 1) for a in container["args"] if a.startswith("--"))
        mib = 1 << 20
        inflight = int(flags.get("max-inflight", 64 * mib))
        each = int(flags.get("max-upload-memory", 64 * mib)) + 16 * mib
        decode = int(flags.get("max-decode-memory", 256 * mib))
        threads = int(flags.get("threads", 0)) or 1000  # 0: one per connection
        worst = 86 * mib + inflight + min(threads * each, max(decode, each))
        limit = container["resources"]["limits"]["memory"]
        self.assertTrue(limit.endswith("Gi") or limit.endswith("Mi"), limit)
        limit_bytes = int(limit[:-2]) * (1 << 30 if limit.endswith("Gi") else mib)
        self.assertLessEqual(worst, limit_bytes, "worst case %d MiB" % (worst // mib))


def parse_unit(path):
    """systemd unit -> {section: {key: [values...]}}; comments kept apart as one string."""
    sections, comments, section = {}, [], None
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        if line[0] in "#;":
            comments.append(line)
            continue
        if line.startswith("["):
            section = sections.setdefault(line.strip("[]"), {})
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        key, sep, value = line.partition("=")
        if not sep or section is None:
            raise ValueError("%s: not a key=value line: %r" % (path, line))
        section.setdefault(key.strip(), []).append(value.strip())
    return sections, "\n".join(comments)


class SystemdUnits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.agent, cls.agent_comments = parse_unit(os.path.join(UNITS, "roottrace-agent.service"))
        cls.collector, _ = parse_unit(os.path.join(UNITS, "roottrace-collector.service"))

    def last(self, unit, key):
        return unit["Service"][key][-1]

    def test_ini_parser_accepts_both_units(self):
        for path in ("roottrace-agent.service", "roottrace-collector.service"):
            cp = configparser.ConfigParser(strict=False, interpolation=None)
            cp.optionxform = str
            cp.read(os.path.join(UNITS, path))
            self.assertEqual(set(cp.sections()), {"Unit", "Service", "Install"})

    def test_agent_gets_exactly_its_capabilities_each_explained(self):
        svc = self.agent["Service"]
        for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
            caps = set(" ".join(svc[key]).split())
            for cap in AGENT_CAPS:
                self.assertIn(cap, caps, key)
            self.assertNotIn("CAP_SYS_ADMIN", caps)
            for cap in caps:
                self.assertRegex(self.agent_comments, r"#\s*%s\s+\S" % cap,
                                 "%s is granted without a comment saying why" % cap)
        self.assertNotEqual(self.last(self.agent, "User"), "root")
        self.assertEqual(self.last(self.agent, "NoNewPrivileges"), "yes")

    def test_agent_token_is_a_credential(self):
        cred = self.last(self.agent, "LoadCredential")
        name, _, path = cred.partition(":")
        self.assertTrue(path.startswith("/etc/roottrace/"))
        self.assertIn("--token-file %%d/%s" % name, self.last(self.agent, "ExecStart"))

    def test_both_units_are_sandboxed_and_restart(self):
        for unit in (self.agent, self.collector):
            self.assertEqual(self.last(unit, "ProtectSystem"), "strict")
            self.assertIn(self.last(unit, "ProtectHome"), ("yes", "read-only", "tmpfs"))
            self.assertEqual(self.last(unit, "NoNewPrivileges"), "yes")
            self.assertIn(self.last(unit, "Restart"), ("on-failure", "always"))
            self.assertTrue(unit["Install"]["WantedBy"])

    def test_collector_runs_unprivileged(self):
        self.assertNotIn(self.last(self.collector, "User"), ("", "root", "0"))
        self.assertEqual(self.last(self.collector, "CapabilityBoundingSet"), "")
        self.assertEqual(self.last(self.collector, "AmbientCapabilities"), "")

    def test_systemd_analyze_finds_no_error_in_the_units(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("systemd-analyze not installed")
        for name in ("roottrace-agent.service", "roottrace-collector.service"):
            res = subprocess.run(["systemd-analyze", "verify", "--man=no", "--generators=no",
                                  os.path.join(UNITS, name)],
                                 capture_output=True, text=True, timeout=60)
            # The binaries are not installed on the test machine: that one complaint is fine.
            problems = [l for l in (res.stdout + res.stderr).splitlines()
                        if l.strip() and not re.search(r"Command /usr/sbin/roottrace-\S+ is "
                                                       r"not executable", l)]
            self.assertEqual(problems, [], name)

    def test_systemd_exposure_scores_stay_low(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("systemd-analyze not installed")
        # systemd's own scale, 0 (locked down) to 10 (root, no sandbox); now 2.9 and 1.4
        for name, ceiling in (("roottrace-agent.service", 4.0),
                              ("roottrace-collector.service", 2.0)):
            res = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                                  os.path.join(UNITS, name)],
                                 capture_output=True, text=True, timeout=60)
            m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", res.stdout + res.stderr)
            self.assertIsNotNone(m, res.stdout + res.stderr)
            self.assertLessEqual(float(m.group(1)), ceiling, name)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


class DebianPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        res = run(["make", "--no-print-directory", "BUILD=" + BUILD, "deb"], cwd=SRC)
        cls.make_output = res.stdout + res.stderr
        cls.make_rc = res.returncode
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.debs = {p: os.path.join(BUILD, "deb", "%s_%s_%s.deb" % (p, VERSION, arch))
                    for p in ("roottrace-agent", "roottrace-collector")}
        cls.root = tempfile.mkdtemp(prefix="rt-deb-")
        if cls.make_rc == 0:
            for deb in cls.debs.values():
                subprocess.run(["dpkg-deb", "-x", deb, cls.root], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.make_rc, 0, "make deb failed:\n" + self.make_output[-3000:])

    def field(self, pkg, name):
        return run(["dpkg-deb", "-f", self.debs[pkg], name]).stdout.strip()

    def test_make_deb_builds_both_packages_with_the_version(self):
        for pkg in self.debs:
            self.assertEqual(self.field(pkg, "Package"), pkg)
            self.assertEqual(self.field(pkg, "Version"), VERSION)
        self.assertIn("libbpf", self.field("roottrace-agent", "Depends"))
        self.assertIn("libsqlite3", self.field("roottrace-collector", "Depends"))
        self.assertIn("libmicrohttpd", self.field("roottrace-collector", "Depends"))

    def test_packages_install_binaries_units_config_and_man_pages(self):
        expect = {
            "usr/sbin/roottrace-agent": 0o755,
            "usr/sbin/roottrace-collector": 0o755,
            "lib/systemd/system/roottrace-agent.service": 0o644,
            "lib/systemd/system/roottrace-collector.service": 0o644,
            "etc/roottrace/agent.env": 0o644,
            "etc/roottrace/agent.json": 0o644,
            "etc/roottrace/collector.env": 0o644,
            "usr/share/man/man8/roottrace-agent.8.gz": 0o644,
            "usr/share/man/man8/roottrace-collector.8.gz": 0o644,
            "usr/lib/sysusers.d/roottrace-agent.conf": 0o644,
            "usr/lib/sysusers.d/roottrace-collector.conf": 0o644,
        }
        for path, mode in expect.items():
            full = os.path.join(self.root, path)
            self.assertTrue(os.path.isfile(full), "%s not in the packages" % path)
            self.assertEqual(os.stat(full).st_mode & 0o777, mode, path)
        listing = run(["dpkg-deb", "-c", self.debs["roottrace-agent"]]).stdout
        for line in listing.splitlines():
            mode, owner = line.split()[:2]
            self.assertEqual(owner, "root/root", line)  # no build user leaks in
            if mode.startswith("d"):
                self.assertEqual(mode, "drwxr-xr-x", line)

    def test_packaged_binaries_answer_version(self):
        for name in ("roottrace-agent", "roottrace-collector"):
            res = run([os.path.join(self.root, "usr/sbin", name), "--version"])
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertIn(VERSION, res.stdout + res.stderr)

    def test_packaged_units_point_at_the_packaged_binaries(self):
        for name in ("roottrace-agent", "roottrace-collector"):
            unit, _ = parse_unit(os.path.join(self.root, "lib/systemd/system/%s.service" % name))
            self.assertTrue(unit["Service"]["ExecStart"][-1].startswith("/usr/sbin/" + name))

    def test_config_files_are_conffiles_and_scripts_are_valid_sh(self):
        for pkg, deb in self.debs.items():
            ctl = tempfile.mkdtemp(prefix="rt-ctl-")
            try:
                subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
                with open(os.path.join(ctl, "conffiles")) as f:
                    conffiles = f.read().split()
                self.assertTrue(conffiles, pkg)
                for c in conffiles:
                    self.assertTrue(c.startswith("/etc/roottrace/"), c)
                for script in ("postinst", "prerm", "postrm"):
                    path = os.path.join(ctl, script)
                    self.assertTrue(os.access(path, os.X_OK), "%s %s" % (pkg, script))
                    self.assertEqual(run(["sh", "-n", path]).returncode, 0, script)
                with open(os.path.join(ctl, "postinst")) as f:
                    self.assertIn("adduser --system", f.read())
            finally:
                shutil.rmtree(ctl, ignore_errors=True)


def my_bounding_caps():
    """Capability names (lower case, no CAP_) in this process's bounding set."""
    with open("/proc/self/status") as f:
        bnd = int(re.search(r"^CapBnd:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)
    names = {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_SYS_RESOURCE": 24, "CAP_SYS_PTRACE": 19,
             "CAP_DAC_READ_SEARCH": 2, "CAP_SYSLOG": 34}
    return {n for n, bit in names.items() if bnd >> bit & 1}


@functools.lru_cache(maxsize=None)
def syscall_group(name):
    """systemd's syscall group, nested groups expanded, as a set of names."""
    out = run(["systemd-analyze", "syscall-filter", "--no-pager", name]).stdout
    names = set()
    for line in out.splitlines()[1:]:
        item = line.strip()
        if item and not item.startswith("#"):
            names |= syscall_group(item) if item.startswith("@") else {item}
    return frozenset(names)


class LeastPrivilege(unittest.TestCase):
    """The agent unit's promise, tried for real: an unprivileged user with only the unit's
    capabilities can profile the machine, and only with the system calls its filter allows."""

    @classmethod
    def setUpClass(cls):
        cls.unit, _ = parse_unit(os.path.join(UNITS, "roottrace-agent.service"))
        cls.agent = os.path.join(BUILD, "roottrace-agent")
        cls.tmp = tempfile.mkdtemp(prefix="rt-lp-")
        os.chmod(cls.tmp, 0o777)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def unit_caps(self):
        return " ".join(self.unit["Service"]["AmbientCapabilities"]).split()

    def record_as_nobody(self, caps, out):
        spec = ",".join(["-all"] + ["+" + c[4:].lower() for c in caps])
        return run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    "--inh-caps=" + spec, "--ambient-caps=" + spec, "--bounding-set=" + spec,
                    "--no-new-privs", "--", self.agent, "record", "--duration", "2s",
                    "--output", out])

    def test_agent_records_as_nobody_with_only_the_units_capabilities(self):
        have = my_bounding_caps()
        caps = [c for c in self.unit_caps() if c in have]
        # CAP_SYS_RESOURCE only matters on kernels < 5.11; test sandboxes may not have it.
        self.assertLessEqual({"CAP_BPF", "CAP_PERFMON"}, set(caps))
        out = os.path.join(self.tmp, "nobody.pb.gz")
        # Something must be on CPU for "samples: N" to be non-zero: an idle machine has none.
        busy = subprocess.Popen(["sh", "-c", "end=$(($(date +%s)+6)); "
                                 "while [ $(date +%s) -lt $end ]; do :; done"])
        try:
            res = self.record_as_nobody(caps, out)
        finally:
            busy.kill()
            busy.wait()
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertGreater(os.path.getsize(out), 0)
        self.assertEqual(os.stat(out).st_uid, 65534)
        self.assertRegex(res.stdout + res.stderr, r"samples: [1-9]")
        # the unit's capabilities also attach the exec hook (a raw tracepoint)
        self.assertNotIn("exec hook did not attach", res.stdout + res.stderr)

    def test_agent_without_perfmon_refuses_to_start(self):
        caps = [c for c in self.unit_caps() if c in my_bounding_caps() and c != "CAP_PERFMON"]
        res = self.record_as_nobody(caps, os.path.join(self.tmp, "noperfmon.pb.gz"))
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("CAP_PERFMON", res.stdout + res.stderr)

    def test_agent_needs_no_system_call_outside_the_units_filter(self):
        if not shutil.which("strace") or not shutil.which("systemd-analyze"):
            self.skipTest("strace or systemd-analyze not installed")
        filters = self.unit["Service"]["SystemCallFilter"]
        allowed = set()
        for item in filters[0].split():
            allowed |= syscall_group(item) if item.startswith("@") else {item}
        for line in filters[1:]:
            self.assertTrue(line.startswith("~"), line)
            for item in line[1:].split():
                allowed -= syscall_group(item) if item.startswith("@") else {item}
        trace = os.path.join(self.tmp, "strace.txt")
        res = run(["strace", "-f", "-qq", "-o", trace, self.agent, "record", "--duration", "2s",
                   "--output", os.path.join(self.tmp, "traced.pb.gz")])
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(trace) as f:
            used = set(re.findall(r"^\d+\s+([a-z_0-9]+)\(", f.read(), re.M))
        self.assertIn("perf_event_open", used)
        self.assertIn("bpf", used)
        self.assertEqual(sorted(used - allowed - {"execve"}), [])


class MakeInstall(unittest.TestCase):
    def test_install_honours_destdir_and_prefix_and_keeps_edited_config(self):
        dest = tempfile.mkdtemp(prefix="rt-install-")
        try:
            cmd = ["make", "--no-print-directory", "BUILD=" + BUILD, "install",
                   "DESTDIR=" + dest, "PREFIX=/usr/local"]
            res = run(cmd, cwd=SRC)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            for path in ("usr/local/sbin/roottrace-agent", "usr/local/sbin/roottrace-collector",
                         "usr/local/share/man/man8/roottrace-agent.8",
                         "usr/local/lib/systemd/system/roottrace-collector.service",
                         "etc/roottrace/agent.env", "etc/roottrace/collector.env"):
                self.assertTrue(os.path.isfile(os.path.join(dest, path)), path)
            unit, _ = parse_unit(os.path.join(
                dest, "usr/local/lib/systemd/system/roottrace-agent.service"))
            self.assertTrue(unit["Service"]["ExecStart"][-1].startswith(
                "/usr/local/sbin/roottrace-agent run"))
            env = os.path.join(dest, "etc/roottrace/agent.env")
            with open(env, "a") as f:
                f.write("ROOTTRACE_COLLECTOR_URL=https://edited.example\n")
            res = run(cmd, cwd=SRC)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            with open(env) as f:
                self.assertIn("edited.example", f.read())
        finally:
            shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
