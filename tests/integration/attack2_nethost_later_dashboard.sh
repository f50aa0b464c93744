#!/bin/sh
# Attack on `run --net host` (root only: it needs eBPF): the agent shares the host's loopback,
# and the run refuses it the ports of Cloister's own listeners. Another run of the same user
# started later (its dashboard, the approval API, its proxy) must be refused too, not only the
# ones listening when the run started (a snapshot of /proc/net/tcp): the run's post_bind
# programs at the cgroup2 root add each port a cloister-supervisor binds, before it listens.
# Every supervisor of a user accepts the same dashboard cookie (one secret in the runtime
# directory, "one tab for every run"), and a browser sends a cookie of 127.0.0.1 to every
# port of 127.0.0.1: a --net host agent that serves its dev server on loopback and is visited
# by the person's browser receives the session cookie, and with it answers the asks of any
# supervisor it can reach — every one started after it.
# Held: a supervisor listening before the run started is refused, also when the agent
# connects to 0.0.0.0, ::ffff:127.0.0.1 or 127.0.0.2; and one started later.
# Still open (not tested here): the dashboard's cookie is not bound to a host name of its own
# (cloister-RANDOM.localhost) that no dev server shares.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN python3
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
R=$TMP/r
mkdir -p "$R"
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# A run that waits (bounded) until the test is done, its approval server on port $1.
waiting_run() {
	(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --name "$2" \
		--listen-approval "127.0.0.1:$1" --listen-tokens off --listen-request off --ask none \
		-- /bin/sh -c "i=0; while [ ! -e '$R/done' ] && [ \$i -lt 500 ]; do sleep 0.1; i=\$((i+1)); done") \
		</dev/null >"$TMP/out-$2" 2>"$TMP/err-$2" &
}
listening() { # PORT: 0 once something listens on 127.0.0.1:PORT (bounded)
	i=0
	while [ $i -lt 200 ]; do
		python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1)' \
			"$1" 2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# ---- before: a supervisor already listening when the --net host run starts ----
P_BEFORE=$(free_port)
waiting_run "$P_BEFORE" "a2b$$"
pid_before=$!
on_exit "touch '$R/done'; kill $pid_before 2>/dev/null"
listening "$P_BEFORE" || true

# ---- the --net host run: waits for the later run's port, then calls both ----
cat >"$TMP/agent.sh" <<EOF
: >'$R/started'
i=0
while [ ! -s '$R/port-after' ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done
echo "before: \$('$HELPERS/tcpget' 127.0.0.1 $P_BEFORE /)"
echo "any: \$('$HELPERS/tcpget' 0.0.0.0 $P_BEFORE /)"
echo "mapped: \$('$HELPERS/tcpget' ::ffff:127.0.0.1 $P_BEFORE /)"
echo "net: \$('$HELPERS/tcpget' 127.0.0.2 $P_BEFORE /)"
echo "after: \$('$HELPERS/tcpget' 127.0.0.1 \$(cat '$R/port-after') /api/pending)"
EOF
(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --net host \
	--name "a2n$$" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	--ask none -- /bin/sh "$TMP/agent.sh") </dev/null >"$OUT" 2>"$ERR" &
svpid=$!
on_exit "kill $svpid 2>/dev/null"

# ---- after: another run of the same user, started once the --net host agent runs ----
i=0
while [ ! -e "$R/started" ] && [ $i -lt 400 ] && kill -0 $svpid 2>/dev/null; do
	sleep 0.05
	i=$((i + 1))
done
P_AFTER=$(free_port)
waiting_run "$P_AFTER" "a2a$$"
pid_after=$!
on_exit "kill $pid_after 2>/dev/null"
listening "$P_AFTER" || true
echo "$P_AFTER" >"$R/port-after"

wait "$svpid"
rc=$?
touch "$R/done"
wait "$pid_before" "$pid_after" 2>/dev/null
echo "# $(tr '\n' ' ' <"$OUT")"

tap_like "$(grep '^before:' "$OUT")" '^before: tcpget: ' \
	"the dashboard of a run started before the --net host run is refused to its agent" "$(diag)"
for how in any mapped net; do
	tap_like "$(grep "^$how:" "$OUT")" "^$how: tcpget: " \
		"... and so it is through 0.0.0.0, ::ffff:127.0.0.1 and 127.0.0.2 ($how)" "$(diag)"
done
tap_like "$(grep '^after:' "$OUT")" '^after: tcpget: ' \
	"the dashboard of a run started later is refused too" "$(diag)"
tap_is "$rc" 0 "the --net host run ends normally" "$(diag)"
tap_done
