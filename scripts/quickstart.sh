#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command (`make quickstart`): deps, build, a local collector on SQLite,
# tokens, profiling on, the agent, a one-minute demo workload, then its top functions and cost.
#   scripts/quickstart.sh          run (again: reuses the store and tokens, restarts processes)
#   scripts/quickstart.sh stop     stop the collector (and an agent left behind)
# Environment: BUILD (build dir), QUICKSTART_DATA (./quickstart-data),
#   QUICKSTART_LISTEN (127.0.0.1:4040), QUICKSTART_SECONDS (60).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
DATA=${QUICKSTART_DATA:-$PWD/quickstart-data}
LISTEN=${QUICKSTART_LISTEN:-127.0.0.1:4040}
SECONDS_DEMO=${QUICKSTART_SECONDS:-60}
URL="http://$LISTEN"
ENVIRONMENT=quickstart
SERVICE=quickstart-demo
STORE="$DATA/store"
AGENT="$BUILD/roottrace-agent"
COLLECTOR="$BUILD/roottrace-collector"
DEMO="$BUILD/demo/demo-workload"

step() { printf '\n==> %s\n' "$*" >&2; }
die() { echo "quickstart: $*" >&2; exit 1; }

# Stops the process in $DATA/NAME.pid if it is still the binary we started (never another
# process that reused the pid). SIGTERM, then up to 20 s for a clean exit.
stop_pidfile() {
	local name="$1" pid exe
	[ -f "$DATA/$name.pid" ] || return 0
	pid=$(cat "$DATA/$name.pid")
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
	if [ -n "$exe" ] && [[ "$(basename "${exe% (deleted)}")" == roottrace-$name ]]; then
		echo "stopping the $name (pid $pid)" >&2
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$DATA/$name.pid"
}

if [ "${1:-}" = "stop" ]; then
	stop_pidfile agent
	stop_pidfile collector
	echo "stopped. The data stays in $DATA (rm -rf it to start over)." >&2
	exit 0
elif [ $# -gt 0 ]; then
	sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi

[ "$(id -u)" -eq 0 ] || die "run as root (sudo make quickstart): the agent loads a BPF program"

step "1/7 Installing the build dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh

step "2/7 Building"
make --no-print-directory BUILD="$BUILD" -j"$(nproc)" "$AGENT" "$COLLECTOR" "$DEMO"

mkdir -p "$DATA"
chmod 0700 "$DATA"

step "3/7 Starting the collector on $URL (SQLite store in $STORE)"
stop_pidfile agent
stop_pidfile collector
if curl -s -o /dev/null --max-time 2 "$URL/healthz"; then
	die "something else already answers on $LISTEN; stop it or set QUICKSTART_LISTEN"
fi
if [ ! -s "$STORE/bootstrap-token" ]; then
	"$COLLECTOR" init --data "$STORE" --environment "$ENVIRONMENT" >/dev/null
fi
setsid "$COLLECTOR" serve --data "$STORE" --listen "$LISTEN" \
	>>"$DATA/collector.log" 2>&1 </dev/null &
echo $! >"$DATA/collector.pid"
for _ in $(seq 1 100); do
	curl -sf -o /dev/null --max-time 1 "$URL/healthz" && break
	kill -0 "$(cat "$DATA/collector.pid")" 2>/dev/null ||
		die "the collector exited; see $DATA/collector.log"
	sleep 0.2
done
curl -sf -o /dev/null "$URL/healthz" || die "the collector does not answer; see $DATA/collector.log"

step "4/7 Tokens (kept in $DATA, mode 0600)"
umask 077
token() { # FILE ARGS...: create a token once, reuse it on later runs
	local file="$DATA/$1"
	shift
	if [ ! -s "$file" ]; then
		"$COLLECTOR" token create --data "$STORE" --environment "$ENVIRONMENT" "$@" |
			tail -n 1 | tr -d '[:space:]' >"$file"
	fi
	[ -s "$file" ] || die "could not create $file"
}
token agent.token --kind collector
token engineer.token --kind user --role engineer
token viewer.token --kind user --role viewer
ENGINEER=$(cat "$DATA/engineer.token")
VIEWER=$(cat "$DATA/viewer.token")
echo "collector token (agent): $DATA/agent.token; engineer: $DATA/engineer.token;" \
	"viewer: $DATA/viewer.token" >&2

step "5/7 Turning profiling on: PUT /api/apm/config (99 Hz, upload every 10 s)"
curl -sf -X PUT -H "Authorization: Bearer $ENGINEER" -H 'Content-Type: application/json' \
	-d "{\"environment\":\"$ENVIRONMENT\",\"service\":null,\"enabled\":true,\"sample_rate_hz\":99,\"upload_interval_s\":10}" \
	"$URL/api/apm/config" >/dev/null || die "PUT /api/apm/config failed; see $DATA/collector.log"

step "6/7 Starting the agent and a ${SECONDS_DEMO}-second demo workload as service $SERVICE"
setsid "$AGENT" run --collector "$URL" --token-file "$DATA/agent.token" \
	--node-name "$(hostname)" --spool-dir "$DATA/spool" \
	>>"$DATA/agent.log" 2>&1 </dev/null &
AGENT_PID=$!
echo "$AGENT_PID" >"$DATA/agent.pid"
# Sampling has started when the agent holds perf event file descriptors.
sampling=0
for _ in $(seq 1 300); do
	kill -0 "$AGENT_PID" 2>/dev/null || die "the agent exited; see $DATA/agent.log"
	if ls -l "/proc/$AGENT_PID/fd" 2>/dev/null | grep -q 'perf_event'; then
		sampling=1
		break
	fi
	sleep 0.2
done
[ "$sampling" = 1 ] || die "the agent did not start sampling within 60 s; see $DATA/agent.log"

# The demo runs in a cgroup named like a systemd unit, so the agent names its service
# "quickstart-demo" (a real transient unit where systemd runs the machine).
DEMO_START=$(date +%s)
if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null; then
	systemctl stop "$SERVICE.service" 2>/dev/null || true
	systemctl reset-failed "$SERVICE.service" 2>/dev/null || true
	systemd-run --quiet --collect --wait --unit="$SERVICE" \
		"$(realpath "$DEMO")" --duration "$SECONDS_DEMO" --threads 2 --duty 40 >/dev/null
else
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		CGROUPS=(/sys/fs/cgroup/system.slice/$SERVICE.service)
	else
		CGROUPS=(/sys/fs/cgroup/cpu/system.slice/$SERVICE.service
			/sys/fs/cgroup/cpuacct/system.slice/$SERVICE.service)
	fi
	NEW_PARENTS=()
	for g in "${CGROUPS[@]}"; do
		[ -d "$(dirname "$g")" ] || NEW_PARENTS+=("$(dirname "$g")")
	done
	mkdir -p "${CGROUPS[@]}"
	# shellcheck disable=SC2016
	sh -c 'for g in "$@"; do echo $$ >"$g/cgroup.procs"; done; exec "$0" --duration '"$SECONDS_DEMO"' --threads 2 --duty 40' \
		"$DEMO" "${CGROUPS[@]}" &
	DEMO_PID=$!
	for ((t = 0; t < SECONDS_DEMO; t += 10)); do
		echo "  demo running: ${t}s / ${SECONDS_DEMO}s" >&2
		sleep 10
	done
	wait "$DEMO_PID" || true
	rmdir "${CGROUPS[@]}" "${NEW_PARENTS[@]}" 2>/dev/null || true
fi
DEMO_END=$(date +%s)
# SIGTERM makes the agent ship its last window before it exits.
stop_pidfile agent

step "7/7 Top functions of $SERVICE by self time, with their cost"
Q="service=$SERVICE&profile_type=cpu&start=$DEMO_START&end=$DEMO_END"
top="" cost=""
for _ in $(seq 1 30); do
	top=$(curl -sf -H "Authorization: Bearer $VIEWER" "$URL/api/apm/profiles/top?$Q&limit=10" || true)
	cost=$(curl -sf -H "Authorization: Bearer $VIEWER" "$URL/api/apm/profiles/cost?$Q&limit=50" || true)
	case "$top" in *'"functions": [{'* | *'"functions":[{'*) break ;; esac
	sleep 1
done
TOP_JSON="$top" COST_JSON="$cost" python3 - <<'EOF'
import json, os
try:
    top = json.loads(os.environ["TOP_JSON"])
    cost = json.loads(os.environ["COST_JSON"])
except ValueError:
    raise SystemExit("quickstart: no profile data arrived; see quickstart-data/agent.log")
funcs = top.get("functions") or []
if not funcs:
    raise SystemExit("quickstart: no profile data arrived; see quickstart-data/agent.log")
per_fn = {c["name"]: c for c in (cost.get("cost") or {}).get("functions") or []}
w = top["window"]
print("service %s, measurement %s (%s), window %d s of whole five-minute buckets, %d s of it "
      "elapsed" % (top["service"], top["measurement"], top["unit"], w["seconds"],
                   w.get("covered_seconds", w["seconds"])))
print("%-28s %8s %8s %12s" % ("function", "self %", "total %", "vCPU-h/month"))
for f in funcs:
    c = per_fn.get(f["name"], {})
    print("%-28s %7.1f%% %7.1f%% %12.2f" % (f["name"][:28], f["self_share"], f["total_share"],
                                            c.get("vcpu_hours_per_month", 0.0)))
svc = (cost.get("cost") or {}).get("service") or {}
print("service total: %.1f CPU-seconds = %.3f vCPUs on average over the window = %.1f "
      "vCPU-hours/month" % (svc.get("cpu_seconds", 0), svc.get("avg_vcpus", 0),
                            svc.get("vcpu_hours_per_month", 0)))
print("(vCPU-hours/month = CPU-seconds / elapsed window seconds x 730; the demo ran for part of "
      "the window, so this is its rate averaged over the elapsed window.)")
EOF

cat <<EOF

Open the web UI: $URL/
  sign in with the engineer token (settings too) from $DATA/engineer.token,
  or the viewer token (read-only) from $DATA/viewer.token; service $SERVICE, profile cpu.

Query further (the viewer token reads, the engineer token changes settings):
  V=\$(cat $DATA/viewer.token); E=\$(cat $DATA/engineer.token)
  curl -s -H "Authorization: Bearer \$V" "$URL/api/apm/services"
  curl -s -H "Authorization: Bearer \$V" "$URL/api/apm/profiles/top?service=$SERVICE&profile_type=cpu&time_range=1h"
  curl -s -H "Authorization: Bearer \$V" "$URL/api/apm/profiles/cost?service=$SERVICE&profile_type=cpu&time_range=1h"
  curl -s -H "Authorization: Bearer \$V" "$URL/api/apm/profiles/flamegraph?service=$SERVICE&profile_type=cpu&time_range=1h"
  curl -s -H "Authorization: Bearer \$V" "$URL/api/apm/profiles/export?service=$SERVICE&profile_type=cpu&time_range=1h" -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
  curl -s -X PUT -H "Authorization: Bearer \$E" -H 'Content-Type: application/json' \\
    -d '{"environment":"$ENVIRONMENT","service":null,"enabled":false}' "$URL/api/apm/config"

The collector is still running (pid $(cat "$DATA/collector.pid"), log $DATA/collector.log).
Stop it with: make quickstart-stop   (or scripts/quickstart.sh stop)
Profile again: make quickstart       (reuses the store and tokens in $DATA)
EOF
