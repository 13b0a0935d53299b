# SPDX-License-Identifier: Apache-2.0
# The ClickHouse stacks dictionary under retention (schema v3, partitioned by day): rows and
# bytes on disk of `stacks` before and after a retention run, and what the once-a-day resend of
# a stack costs. Days pass for real: each day's uploads go through a collector whose clock
# libfaketime sets that many days back (as tests/integration/test_fleet_stacks.py does).
#   bench/bench-fleet-stacks.sh --build DIR [--days 3] [--common 400] [--per-day 100]
# Each day uploads --uploads profiles (one per five-minute bucket), each holding the --common
# stacks every day shares and that day's --per-day own ones; retention keeps 1 day. Byte
# counts are of active parts after OPTIMIZE ... FINAL of each partition (duplicates merged).
import argparse
import os
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

DAY = 86400


def frames(name, i):
    """A 16-frame stack of Go-like names (about 40 bytes a frame), distinct per (name, i)."""
    return ["main"] + ["github.com/acme/shop/%s/pkg%d.(*Handler%d).Step%d" % (name, i % 7, i, f)
                       for f in range(15)]


def profile(pprof_py, stacks, at):
    return pprof_py.build([(s, [1, 10000000]) for s in stacks],
                          sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
                          period_type=("cpu", "nanoseconds"), period=10000000,
                          time_nanos=at * 10**9)


def partitions(c):
    """{day: (rows, bytes on disk)} of the stacks table's active parts."""
    out = c.clickhouse("SELECT toUInt32(partition), sum(rows), sum(bytes_on_disk) FROM"
                       " system.parts WHERE database = '{db}' AND table = 'stacks' AND active"
                       " GROUP BY partition ORDER BY partition")
    return {int(d): (int(r), int(b)) for d, r, b in (line.split() for line in out.splitlines())}


def merged_partitions(c):
    for day in partitions(c):
        c.clickhouse("OPTIMIZE TABLE {db}.stacks PARTITION %d FINAL" % day)
    return partitions(c)


def show(title, parts, today):
    rows = sum(r for r, _ in parts.values())
    size = sum(b for _, b in parts.values())
    print("%s: %d partitions, %d rows, %d bytes" % (title, len(parts), rows, size))
    for day, (r, b) in sorted(parts.items()):
        print("  day today%+d: %d rows, %d bytes (%.1f bytes a row)" % (day - today, r, b,
                                                                        b / r if r else 0))
    return rows, size


def unpartitioned_bytes(c):
    """Bytes of the same distinct stacks in one unpartitioned table (schema v2's, which
    retention never pruned)."""
    c.clickhouse("CREATE TABLE {db}.stacks_v2(stack_hash FixedString(16), frames String)"
                 " ENGINE = ReplacingMergeTree ORDER BY stack_hash")
    c.clickhouse("INSERT INTO {db}.stacks_v2 SELECT stack_hash, any(frames) FROM {db}.stacks"
                 " GROUP BY stack_hash")
    c.clickhouse("OPTIMIZE TABLE {db}.stacks_v2 FINAL")
    size = int(c.clickhouse("SELECT sum(bytes_on_disk) FROM system.parts WHERE"
                            " database = '{db}' AND table = 'stacks_v2' AND active"))
    c.clickhouse("DROP TABLE {db}.stacks_v2")
    return size


def load(c, pprof_py, days_back, token, args, now):
    for d in range(args.days - 1, -1, -1):
        stacks = [frames("common", i) for i in range(args.common)]
        stacks += [frames("day%d" % d, i) for i in range(args.per_day)]
        with clock_days_back(d):
            c.start(["--retention-days", "30", "--link-retention-hours", "720"])
        for u in range(args.uploads):
            at = now - d * DAY - u * 300
            status, doc = c.upload(token, profile(pprof_py, stacks, at), "shop", "cpu")
            if status != 200:
                raise RuntimeError("upload: %d %s" % (status, doc))
        c.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--days", type=int, default=3)
    ap.add_argument("--common", type=int, default=400)
    ap.add_argument("--per-day", type=int, default=100)
    ap.add_argument("--uploads", type=int, default=12)
    args = ap.parse_args()
    os.environ["ROOTTRACE_BUILD"] = os.path.abspath(args.build)
    import pprof_py
    from collector_fixture import Collector
    from fake_clock import days_back
    from test_fleet_stacks import anchor, require_servers_and_faketime

    require_servers_and_faketime()
    now, _ = anchor()
    today = now // DAY
    c = Collector(backend="fleet", start=False)
    try:
        token = c.create_token("collector")
        load(c, pprof_py, days_back, token, args, now)
        print("stacks dictionary: %d days of %d uploads, each of %d shared + %d own stacks;"
              " clickhouse %s" % (args.days, args.uploads, args.common, args.per_day,
                                  c.clickhouse("SELECT version()").strip()))
        rows0, bytes0 = show("before retention", merged_partitions(c), today)
        distinct = int(c.clickhouse("SELECT uniqExact(stack_hash) FROM {db}.stacks"))
        print("the same %d distinct stacks in one unpartitioned table (schema v2, never"
              " pruned): %d bytes" % (distinct, unpartitioned_bytes(c)))
        c.start(["--retention-days", "1", "--link-retention-hours", "24"])
        deadline = time.time() + 60
        while min(partitions(c)) < today - 1 and time.time() < deadline:
            time.sleep(0.2)
        c.stop()
        rows1, bytes1 = show("after retention of 1 day", merged_partitions(c), today)
        resent = rows0 - distinct
        wire = float(c.clickhouse("SELECT avg(length(frames)) FROM {db}.stacks")) + 8 + 2 + 4
        print("rows resent on a later day: %d = %.0f bytes on disk (%.1f bytes a day per"
              " distinct stack; each collector sends it once a day: %.0f bytes of RowBinary)"
              % (resent, resent * bytes0 / rows0, bytes0 / rows0, wire))
        print("retention dropped %d rows, %d bytes (%.0f%%)" % (
            rows0 - rows1, bytes0 - bytes1, 100.0 * (bytes0 - bytes1) / bytes0))
    finally:
        c.close()


if __name__ == "__main__":
    main()
