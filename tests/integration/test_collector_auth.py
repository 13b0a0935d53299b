# SPDX-License-Identifier: Apache-2.0
# Collector tokens and roles: the environment comes from the token, never the request;
# user roles gate writes; revoked and unknown tokens get 401; every route's auth is checked.
import subprocess
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector, collector_binary


def wall_profile(value=10):
    return pprof_py.build([(["main", "work"], value)], sample_types=[("wall", "nanoseconds")],
                          time_nanos=time.time_ns())


class TokenScoping(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector(environment="A")
        cls.addClassCleanup(cls.c.close)
        cls.col_a = cls.c.create_token("collector", "A", name="agent-a")
        cls.col_b = cls.c.create_token("collector", "B", name="agent-b")
        cls.viewer_a = cls.c.create_token("user", "A", "viewer", name="viewer-a")
        cls.engineer_a = cls.c.create_token("user", "A", "engineer", name="engineer-a")
        cls.engineer_b = cls.c.create_token("user", "B", "engineer", name="engineer-b")

    def config_of(self, token):
        status, doc = self.c.get_json("/api/apm/config", token)
        self.assertEqual(status, 200, doc)
        return doc

    def test_collector_token_reads_its_own_environment(self):
        self.assertEqual(self.config_of(self.col_a)["environment"], "A")
        self.assertEqual(self.config_of(self.col_b)["environment"], "B")

    def test_collector_token_cannot_read_another_environment(self):
        status, doc = self.c.get_json("/api/apm/config", self.col_a, params={"environment": "B"})
        self.assertEqual(status, 403, doc)
        self.assertIn("error", doc)

    def test_collector_token_cannot_change_config(self):
        before = self.config_of(self.col_b)
        for env in ("A", "B"):
            status, _ = self.c.put_json("/api/apm/config", self.col_a,
                                        {"environment": env, "enabled": True})
            self.assertEqual(status, 403)
        self.assertEqual(self.config_of(self.col_b), before)

    def test_engineer_cannot_change_another_environment(self):
        before = self.config_of(self.col_b)
        status, doc = self.c.put_json("/api/apm/config", self.engineer_a,
                                      {"environment": "B", "enabled": True})
        self.assertEqual(status, 403, doc)
        self.assertEqual(self.config_of(self.col_b), before)
        self.assertEqual(self.c.control_rows("SELECT count(*) FROM audit WHERE environment='B'"
                                             " AND token_name='engineer-a'"), [(0,)])

    def test_collector_token_cannot_write_another_environments_profiles(self):
        status, doc = self.c.upload(self.col_a, wall_profile(), "svc-scope", "wall",
                                    params={"environment": "B"})
        self.assertEqual(status, 403, doc)
        self.assertEqual(self.c.stored_rows(service="svc-scope"), [])
        status, doc = self.c.upload(self.col_a, wall_profile(7), "svc-scope", "wall")
        self.assertEqual(status, 200, doc)
        rows = self.c.stored_rows(service="svc-scope")
        self.assertEqual({r[0] for r in rows}, {"A"})

    def test_viewer_cannot_put_config(self):
        status, doc = self.c.put_json("/api/apm/config", self.viewer_a, {"enabled": True})
        self.assertEqual(status, 403, doc)

    def test_engineer_can_put_config(self):
        status, doc = self.c.put_json("/api/apm/config", self.engineer_b,
                                      {"service": "checkout", "enabled": True})
        self.assertEqual(status, 200, doc)
        self.assertTrue(self.config_of(self.col_b)["services"]["checkout"]["enabled"])

    def test_user_token_cannot_upload(self):
        status, _ = self.c.upload(self.c.admin_token, wall_profile(), "svc-user", "wall")
        self.assertEqual(status, 403)
        self.assertEqual(self.c.stored_rows(service="svc-user"), [])

    def test_scheme_must_match_token_kind(self):
        status, _ = self.c.get_json("/api/apm/config", self.col_a, scheme="Bearer")
        self.assertEqual(status, 403)

    def test_missing_and_unknown_tokens_get_401(self):
        self.assertEqual(self.c.get_json("/api/apm/config")[0], 401)
        self.assertEqual(self.c.get_json("/api/apm/config", "rtc_" + "0" * 64)[0], 401)
        self.assertEqual(self.c.get_json("/api/apm/config", "garbage", scheme="Basic")[0], 401)

    def test_revoked_tokens_fail(self):
        tok = self.c.create_token("collector", "A", name="to-revoke")
        user = self.c.create_token("user", "A", "engineer", name="user-to-revoke")
        self.assertEqual(self.c.get_json("/api/apm/config", tok)[0], 200)
        self.c.revoke_token(self.c.token_id("to-revoke"))
        self.c.revoke_token(self.c.token_id("user-to-revoke"))
        self.assertEqual(self.c.get_json("/api/apm/config", tok)[0], 401)
        self.assertEqual(self.c.upload(tok, wall_profile(), "svc-revoked", "wall")[0], 401)
        self.assertEqual(self.c.put_json("/api/apm/config", user, {"enabled": True})[0], 401)
        self.assertEqual(self.c.stored_rows(service="svc-revoked"), [])
        states = {t["name"]: t["state"] for t in self.c.list_tokens()}
        self.assertEqual(states["to-revoke"], "revoked")

    def test_tokens_are_stored_hashed(self):
        with self.c.db() as db:
            hashes = [bytes(h) for (h,) in db.execute("SELECT hash FROM tokens")]
            columns = [r[1] for r in db.execute("PRAGMA table_info(tokens)")]
        self.assertTrue(all(len(h) == 32 for h in hashes))
        self.assertNotIn(self.col_a.encode(), b"".join(hashes))
        self.assertNotIn("secret", columns)

    def test_bootstrap_token_file_is_private(self):
        import os
        import stat
        path = os.path.join(self.c.data, "bootstrap-token")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path) as f:
            self.assertEqual(f.read().strip(), self.c.admin_token)


ROLES = ["none", "viewer", "engineer", "admin"]


class RouteTable(unittest.TestCase):
    """Every route in the table, called with each kind of caller, answers as its auth says."""

    @classmethod
    def setUpClass(cls):
        cls.c = Collector(environment="A")
        cls.addClassCleanup(cls.c.close)
        cls.tokens = {
            "collector": cls.c.create_token("collector", "A"),
            "viewer": cls.c.create_token("user", "A", "viewer"),
            "engineer": cls.c.create_token("user", "A", "engineer"),
            "admin": cls.c.admin_token,
        }
        out = subprocess.run([collector_binary(), "routes"], capture_output=True, text=True,
                             check=True).stdout
        cls.routes = [line.split("\t") for line in out.splitlines()]

    def call(self, method, path, token):
        body = b"{}" if method in ("PUT", "POST") else None
        status, _, _ = self.c.request(method, path, token, body=body,
                                      content_type="application/json" if body else None)
        return status

    def test_table_lists_the_issue_routes(self):
        have = {(m, p) for m, p, _, _ in self.routes}
        for want in [("GET", "/api/apm/config"), ("PUT", "/api/apm/config"),
                     ("GET", "/api/apm/audit"), ("POST", "/api/apm/profiles"),
                     ("POST", "/api/apm/deployments"), ("GET", "/healthz"),
                     ("GET", "/metrics"), ("GET", "/api/apm/profiles/flamegraph"),
                     ("GET", "/api/apm/services")]:
            self.assertIn(want, have)

    def test_every_route_enforces_its_auth(self):
        for method, path, kinds, role in self.routes:
            if path.endswith("*"):  # a prefix route ("/ui/*"): call a file it serves
                path = path[:-1] + "app.js"
            with self.subTest(route=path, method=method):
                if kinds == "none":
                    self.assertEqual(self.call(method, path, None), 200)
                    continue
                self.assertEqual(self.call(method, path, None), 401)
                self.assertEqual(self.call(method, path, "rtu_" + "1" * 64), 401)
                allowed_kinds = kinds.split(",")
                if "collector" in allowed_kinds:
                    self.assertNotIn(self.call(method, path, self.tokens["collector"]),
                                     (401, 403))
                else:
                    self.assertEqual(self.call(method, path, self.tokens["collector"]), 403)
                for user_role in ("viewer", "engineer", "admin"):
                    status = self.call(method, path, self.tokens[user_role])
                    if "user" in allowed_kinds and ROLES.index(user_role) >= ROLES.index(role):
                        self.assertNotIn(status, (401, 403), user_role)
                    else:
                        self.assertEqual(status, 403, user_role)

    def test_unknown_route_and_wrong_method(self):
        self.assertEqual(self.call("GET", "/api/apm/nope", self.tokens["admin"]), 404)
        self.assertEqual(self.call("DELETE", "/api/apm/config", self.tokens["admin"]), 405)


if __name__ == "__main__":
    harness.main()
