# SPDX-License-Identifier: Apache-2.0
# Collector configuration: off by default, clamped on write and again on read, service
# overrides inherit, and every change writes exactly one audit event with before and after.
import unittest

import harness
from collector_fixture import Collector


class Config(unittest.TestCase):
    def setUp(self):
        self.c = Collector(environment="prod")
        self.addCleanup(self.c.close)
        self.col = self.c.create_token("collector", "prod")
        self.eng = self.c.create_token("user", "prod", "engineer", name="eng")

    def served(self, service=None):
        status, doc = self.c.get_json("/api/apm/config", self.col,
                                      params={"service": service} if service else None)
        self.assertEqual(status, 200, doc)
        return doc

    def put(self, doc, token=None):
        return self.c.put_json("/api/apm/config", token or self.eng, doc)

    def stored(self, service=""):
        assert "'" not in service
        rows = self.c.control_rows("SELECT CAST(enabled AS INTEGER), sample_rate_hz,"
                                   " upload_interval_s, poll_interval_s FROM settings"
                                   " WHERE service = '%s'" % service)
        return rows[0] if rows else None

    def test_new_environment_is_off(self):
        doc = self.served()
        self.assertEqual(doc["environment"], "prod")
        self.assertIs(doc["enabled"], False)
        for key in ("sample_rate_hz", "upload_interval_s", "poll_interval_s", "services"):
            self.assertIn(key, doc)

    def test_sample_rate_clamped_high(self):
        status, doc = self.put({"enabled": True, "sample_rate_hz": 10000})
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["sample_rate_hz"], 200)
        self.assertEqual(self.stored()[1], 200)
        self.assertEqual(self.served()["sample_rate_hz"], 200)

    def test_sample_rate_clamped_low(self):
        self.put({"sample_rate_hz": 1})
        self.assertEqual(self.stored()[1], 10)
        self.assertEqual(self.served()["sample_rate_hz"], 10)

    def test_upload_interval_clamped(self):
        self.put({"upload_interval_s": 1})
        self.assertEqual(self.stored()[2], 10)
        self.assertEqual(self.served()["upload_interval_s"], 10)
        self.put({"upload_interval_s": 10**9})
        self.assertEqual(self.served()["upload_interval_s"], 3600)

    def test_poll_interval_at_most_a_minute(self):
        self.put({"poll_interval_s": 600})
        self.assertEqual(self.served()["poll_interval_s"], 60)

    def test_clamped_again_on_read(self):
        self.put({"enabled": True})
        # a row written around the API (older version, manual edit) is clamped when served
        self.c.control_sql("UPDATE settings SET sample_rate_hz = 5000, upload_interval_s = 2")
        doc = self.served()
        self.assertEqual(doc["sample_rate_hz"], 200)
        self.assertEqual(doc["upload_interval_s"], 10)

    def test_service_override_inherits_the_rest(self):
        self.put({"enabled": False, "sample_rate_hz": 50})
        status, doc = self.put({"service": "api", "enabled": True, "upload_interval_s": 30})
        self.assertEqual(status, 200, doc)
        doc = self.served("api")
        self.assertEqual((doc["enabled"], doc["sample_rate_hz"], doc["upload_interval_s"]),
                         (True, 50, 30))
        self.assertEqual(doc["services"]["api"],
                         {"enabled": True, "sample_rate_hz": 50, "upload_interval_s": 30,
                          "offcpu_enabled": False,
                          "not_applied": doc["services"]["api"]["not_applied"]})
        # its own upload interval is one the node agent cannot apply; the rate is inherited
        self.assertEqual(list(doc["not_applied"]), ["upload_interval_s"])
        self.assertIs(self.served()["enabled"], False)
        self.assertIs(self.served("other")["enabled"], False)

    def test_offcpu_off_by_default_and_inherited_per_service(self):
        doc = self.served()
        self.assertIs(doc["offcpu_enabled"], False)
        self.assertEqual(doc["offcpu_applied_by"], {"node_agent": True, "sdk": False})
        self.put({"enabled": True, "offcpu_enabled": True})
        status, doc = self.put({"service": "batch", "offcpu_enabled": False})
        self.assertEqual(status, 200, doc)
        doc = self.served()
        self.assertIs(doc["offcpu_enabled"], True)
        self.assertIs(doc["services"]["batch"]["offcpu_enabled"], False)
        self.assertIs(self.served("batch")["offcpu_enabled"], False)
        self.assertIs(self.served("other")["offcpu_enabled"], True)
        # null inherits again
        self.put({"service": "batch", "offcpu_enabled": None})
        self.assertIs(self.served("batch")["offcpu_enabled"], True)

    def test_offcpu_must_be_a_boolean_and_is_audited(self):
        status, doc = self.put({"offcpu_enabled": 1})
        self.assertEqual(status, 400, doc)
        self.assertIn("offcpu_enabled", doc["detail"] if "detail" in doc else str(doc))
        self.put({"offcpu_enabled": True})
        status, doc = self.c.get_json("/api/apm/audit", self.eng)
        self.assertEqual(status, 200, doc)
        self.assertIs(doc["events"][0]["after"]["offcpu_enabled"], True)
        self.assertIsNone(doc["events"][0]["before"])

    def test_turning_off_is_served_at_once(self):
        self.put({"enabled": True})
        self.assertIs(self.served()["enabled"], True)
        self.put({"enabled": False})
        self.assertIs(self.served()["enabled"], False)

    def test_each_put_writes_one_audit_event(self):
        self.put({"sample_rate_hz": 10000})
        self.put({"sample_rate_hz": 50, "enabled": True})
        self.put({"service": "api", "enabled": True})
        status, doc = self.c.get_json("/api/apm/audit", self.eng)
        self.assertEqual(status, 200, doc)
        events = doc["events"]
        self.assertEqual(len(events), 3)
        newest, middle, oldest = events
        self.assertEqual(oldest["before"], None)
        self.assertEqual(oldest["after"]["sample_rate_hz"], 200)  # the clamped value
        self.assertEqual(middle["before"]["sample_rate_hz"], 200)
        self.assertEqual(middle["after"]["sample_rate_hz"], 50)
        self.assertEqual(middle["after"]["enabled"], True)
        self.assertEqual(newest["service"], "api")
        for e in events:
            self.assertEqual(e["who"]["token_name"], "eng")
            self.assertEqual(e["environment"], "prod")
            self.assertGreater(e["time"], 0)

    def test_rejected_put_writes_no_audit_event(self):
        self.assertEqual(self.put({"sample_rate_hz": "fast"})[0], 400)
        self.assertEqual(self.put({"colour": "blue"})[0], 400)
        self.assertEqual(self.put({})[0], 400)
        self.assertEqual(self.c.count("audit"), 0)
        self.assertIsNone(self.stored())

    def test_bad_json_is_400(self):
        for body in (b"{not json", b"[1, 2]", b""):
            status, doc = self.c.put_json("/api/apm/config", self.eng, body)
            self.assertEqual(status, 400, body)
            self.assertIn("error", doc)
            self.assertIn("detail", doc)

    def test_wrong_content_type_is_415(self):
        status, doc = self.c.put_json("/api/apm/config", self.eng, {"enabled": True},
                                      content_type="text/plain")
        self.assertEqual(status, 415, doc)
        self.assertIsNone(self.stored())

    def test_audit_needs_engineer(self):
        viewer = self.c.create_token("user", "prod", "viewer")
        self.assertEqual(self.c.get_json("/api/apm/audit", viewer)[0], 403)
        self.assertEqual(self.c.get_json("/api/apm/audit", self.c.admin_token)[0], 200)

    def test_settings_survive_restart(self):
        self.put({"enabled": True, "sample_rate_hz": 42})
        self.c.restart()
        doc = self.served()
        self.assertEqual((doc["enabled"], doc["sample_rate_hz"]), (True, 42))


if __name__ == "__main__":
    harness.main()
