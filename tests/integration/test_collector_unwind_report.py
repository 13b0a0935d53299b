# SPDX-License-Identifier: Apache-2.0
# The unwinder's figures of an agent's self-report (the unwind_* upload parameters) through the
# real collector: stored, shown per agent in /api/apm/services, null with a reason when not
# sent (also for a database made before they were kept), and a bad value refused with a 400.
import os
import sqlite3
import unittest

import harness
import pprof_py
from collector_fixture import Collector

# As the agent sends them (agent/ship/selfreport.c); build time in milliseconds.
FIGURES = {"unwind_tables": "900", "unwind_fp": "60", "unwind_mixed": "30",
           "unwind_not_loaded": "10", "unwind_clean": "950", "unwind_fp_end": "20",
           "unwind_early": "25", "unwind_early_no_mapping": "10", "unwind_early_cannot": "8",
           "unwind_early_bad_cfa": "4", "unwind_early_read": "3", "unwind_truncated": "5",
           "unwind_rows": "123456", "unwind_row_bytes": "1975296",
           "unwind_tables_built": "7", "unwind_build_ms": "42.5"}

PROFILE = pprof_py.build([(["main", "work"], [5])], sample_types=[("wall", "nanoseconds")])

# The agents table as collectors before the unwinder's figures made it.
OLD_AGENTS = ("CREATE TABLE agents(environment TEXT NOT NULL, agent_id TEXT NOT NULL,"
              " service TEXT NOT NULL, node TEXT NOT NULL, version TEXT NOT NULL,"
              " reported_at INTEGER NOT NULL, window_s REAL, cpu_s REAL, bpf_s REAL,"
              " lost_samples INTEGER, unknown_frames INTEGER, processes INTEGER,"
              " PRIMARY KEY(environment, agent_id, service))")


def agent_of(collector, viewer, service, agent_id):
    status, doc = collector.get_json("/api/apm/services", viewer)
    assert status == 200, (status, doc)
    for s in doc["services"]:
        for a in s["agents"] if s["name"] == service else []:
            if a["agent_id"] == agent_id:
                return a
    raise AssertionError("no agent %s for %s in %s" % (agent_id, service, doc))


class UnwindFiguresThroughServices(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector(environment="prod")
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector", "prod")
        cls.viewer = cls.c.create_token("user", "prod", "viewer")

    def upload(self, service, params):
        return self.c.upload(self.tok, PROFILE, service, "wall", params=params)

    def test_sent_figures_are_shown_per_agent(self):
        status, doc = self.upload("checkout", dict(FIGURES, agent_id="agent-u", cpu_s="0.5"))
        self.assertEqual(status, 200, doc)
        agent = agent_of(self.c, self.viewer, "checkout", "agent-u")
        for name, value in FIGURES.items():
            want = float(value) if name == "unwind_build_ms" else int(value)
            self.assertEqual(agent[name], want, name)
            self.assertIs(type(agent[name]), type(want), name)
        self.assertIsNone(agent["unwind_reason"])

    def test_figures_not_sent_are_null_with_a_reason_never_zero(self):
        status, doc = self.upload("cart", {"agent_id": "agent-old", "cpu_s": "0.5"})
        self.assertEqual(status, 200, doc)
        agent = agent_of(self.c, self.viewer, "cart", "agent-old")
        for name in FIGURES:
            self.assertIsNone(agent[name], name)
        self.assertIn("no unwinder figures", agent["unwind_reason"])

    def test_a_figure_left_out_is_null_and_the_others_are_kept(self):
        partial = {k: v for k, v in FIGURES.items() if k != "unwind_rows"}
        status, doc = self.upload("search", dict(partial, agent_id="agent-p"))
        self.assertEqual(status, 200, doc)
        agent = agent_of(self.c, self.viewer, "search", "agent-p")
        self.assertIsNone(agent["unwind_rows"])
        self.assertEqual(agent["unwind_row_bytes"], 1975296)
        self.assertIn("left out", agent["unwind_reason"])

    def test_bad_values_are_400_naming_the_parameter_and_nothing_is_stored(self):
        for name, bad in (("unwind_tables", "-1"), ("unwind_rows", "many"),
                          ("unwind_truncated", "1.5"), ("unwind_build_ms", "-0.5"),
                          ("unwind_build_ms", "nan"), ("unwind_fp", "")):
            service = "bad-" + name.replace("_", "-")
            status, doc = self.upload(service, dict(FIGURES, agent_id="agent-b", **{name: bad}))
            self.assertEqual(status, 400, (name, bad, doc))
            self.assertIn(name, doc["detail"], (name, doc))
            self.assertEqual(self.c.stored_rows(service), [], name)


class DatabaseFromBeforeTheFigures(unittest.TestCase):
    def test_old_database_opens_and_its_reports_show_null(self):
        c = Collector(environment="prod", start=False)
        try:
            path = os.path.join(c.data, "roottrace.db")
            with sqlite3.connect(path) as db:
                db.execute("DROP TABLE agents")
                db.execute(OLD_AGENTS)
                db.execute("INSERT INTO agents VALUES('prod', 'agent-1', 'api', 'n', '0.1.0',"
                           " strftime('%s','now'), 60, 0.5, 0.1, 0, 0, 3)")
            db.close()
            c.start()
            viewer = c.create_token("user", "prod", "viewer")
            agent = agent_of(c, viewer, "api", "agent-1")
            self.assertEqual(agent["cpu_s"], 0.5)
            self.assertIsNone(agent["unwind_tables"])
            self.assertIsNotNone(agent["unwind_reason"])
            tok = c.create_token("collector", "prod")
            status, doc = c.upload(tok, PROFILE, "api", "wall",
                                   params=dict(FIGURES, agent_id="agent-1"))
            self.assertEqual(status, 200, doc)
            self.assertEqual(agent_of(c, viewer, "api", "agent-1")["unwind_tables"], 900)
        finally:
            c.close()


if __name__ == "__main__":
    harness.main()
