#!/bin/sh
# `cloister-supervisor run` starting and ending: SIGTERM/SIGINT are passed on to the agent (143,
# 130), an agent that ignores SIGTERM is killed after the grace period; a supervisor killed with
# SIGKILL takes its agent with it (also while an exec waits for an answer), and the next run
# removes the stale cgroup; --require-backstop; a run by a non-root user (no cgroup, the ptrace
# exec backstop: execs are still decided). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 25
tap_plan 28

CG=$(cgroup2_root)
# The CLI client (pause) finds supervisors by their API files: ours only, never another
# checkout's, nor a stale file whose port a supervisor of another test took over since (its
# token is refused: HTTP 401).
XDG_RUNTIME_DIR=$TMP/xdg-run
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
write_config <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/true"
    - path: "/usr/bin/id"
    - path: "$HELPERS/marker"
  deny:
    - path: "/usr/bin/whoami"
  defaults: false
EOF

# Names end in our pid: a run of this test elsewhere on the machine has cgroups of its own.
# bg NAME AGENT…: start the supervisor in the background (no wrapper: $bg_pid is the
# supervisor); killed at exit if still there.
bg() {
	name=$1
	shift
	"$SUPERVISOR" run --config-dir "$CFG" --name "$name$$" --ask none -- "$@" \
		</dev/null >"$OUT" 2>"$ERR" &
	bg_pid=$!
	on_exit "kill -KILL $bg_pid 2>/dev/null"
}
# wait_for SECONDS COMMAND…: poll COMMAND every 0.1 s; status 0 once it succeeds.
wait_for() {
	n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}
# wait_exit PID SECONDS: wait for our background PID, at most SECONDS; $rc its status (255 if it
# did not end in time: then it is killed).
wait_exit() {
	if wait_for "$2" sh -c "! kill -0 $1 2>/dev/null || grep -q '^State:.*Z' /proc/$1/status 2>/dev/null"; then
		wait "$1"
		rc=$?
	else
		kill -KILL "$1"
		wait "$1"
		rc=255
	fi
}
cgroup_of() {
	for d in "$CG/cloister/$1$$"-*; do
		[ -d "$d" ] && echo "$d" && return
	done
}
has_cgroup() { [ -n "$(cgroup_of "$1")" ]; }
cgroup_empty() { [ -z "$(cat "$1/cgroup.procs" 2>/dev/null)" ]; }
elapsed_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
# The agent runs (its sleep is in the sandbox's cgroup): the supervisor's set-up is over and
# its signals are forwarded from then on. The cgroup alone exists earlier.
agent_sleeps() {
	leaf=$(cgroup_of "$1")
	[ -n "$leaf" ] || return 1
	while read -r p; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && return 0
	done <"$leaf/cgroup.procs"
	return 1
}

# ---- signals are passed on ----
bg termtest sleep 30
wait_for 5 agent_sleeps termtest
kill -TERM "$bg_pid"
start=$(date +%s%N)
wait_exit "$bg_pid" 5
tap_is "$rc" 143 "SIGTERM to the supervisor reaches the agent: sleep dies, run exits 143" "$(diag)"
tap_ok "$([ "$(elapsed_ms "$start")" -lt 2000 ] && echo 0 || echo 1)" "at once ($(elapsed_ms "$start") ms)"
tap_is "$(cgroup_of termtest)" "" "the sandbox's cgroup is removed"

bg inttest sleep 30
wait_for 5 agent_sleeps inttest
kill -INT "$bg_pid"
wait_exit "$bg_pid" 5
tap_is "$rc" 130 "SIGINT to the supervisor reaches the agent: run exits 130" "$(diag)"

bg huptest sleep 30
wait_for 5 agent_sleeps huptest
kill -HUP "$bg_pid"
wait_exit "$bg_pid" 5
tap_is "$rc" 129 "SIGHUP to the supervisor reaches the agent: run exits 129" "$(diag)"

bg stubborn sh -c 'trap "" TERM; sleep 30'
wait_for 5 has_cgroup stubborn
# Its trap is set once it runs sleep.
wait_for 5 agent_sleeps stubborn
kill -TERM "$bg_pid"
start=$(date +%s%N)
wait_exit "$bg_pid" 10
took=$(elapsed_ms "$start")
tap_is "$rc" 137 "an agent that ignores SIGTERM is killed after the grace period (137)" "$(diag)"
tap_ok "$([ "$took" -ge 4000 ] && [ "$took" -lt 8000 ] && echo 0 || echo 1)" "after about 5 s ($took ms)"
tap_is "$(cgroup_of stubborn)" "" "nothing of it is left: its cgroup is removed"

# SIGTERM while a prompt waits on the agent's own terminal (the agent is frozen meanwhile).
audit_reset
"$HELPERS/ptyanswer" --ctty - -- "$SUPERVISOR" run --config-dir "$CFG" --name termask$$ --ask tty \
	-- sh -c '/usr/bin/env true; echo "went on $?"' </dev/null >"$OUT" 2>"$ERR" &
pty_pid=$!
on_exit "kill -KILL $pty_pid 2>/dev/null"
wait_for 5 grep -q 'approval needed' "$ERR"
kill -TERM "$(pgrep -P "$pty_pid" | head -n 1)"
start=$(date +%s%N)
wait_exit "$pty_pid" 10
took=$(elapsed_ms "$start")
tap_ok "$([ "$rc" -eq 143 ] && [ "$took" -lt 2000 ] && echo 0 || echo 1)" \
	"SIGTERM while a prompt freezes the agent: it still ends at once with 143 ($took ms)" \
	"status $rc; terminal: $(tr -d '\r' <"$ERR" | tail -n 5)"
tap_is "$(audit_count '"verdict":"cancelled"')" 1 "the waiting ask is cancelled (audit log)"

# An agent that stops itself on SIGTERM, on a terminal: the supervisor must not stop with it
# (a stopped supervisor could end nothing); the agent is continued and ends.
"$HELPERS/ptyanswer" --ctty - -- "$SUPERVISOR" run --config-dir "$CFG" --name selfstop$$ --ask none \
	-- sh -c 'trap "kill -STOP \$\$; exit 7" TERM; echo ready; while :; do sleep 0.1; done' \
	</dev/null >"$OUT" 2>"$ERR" &
pty_pid=$!
on_exit "kill -KILL $pty_pid 2>/dev/null"
wait_for 5 grep -q ready "$OUT"
kill -TERM "$(pgrep -P "$pty_pid" | head -n 1)"
wait_exit "$pty_pid" 10
tap_is "$rc" 7 "an agent that stops itself on SIGTERM is continued, and run ends with its status" \
	"status $rc; terminal: $(tr -d '\r' <"$OUT" | tail -n 3)"

# Paused from the dashboard (or the CLI) when SIGTERM comes: thawed to end gracefully.
bg pausetest sleep 30
wait_for 5 has_cgroup pausetest
"$SUPERVISOR" pause "pausetest$$" >"$TMP/pause.out" 2>&1
pause_rc=$?
kill -TERM "$bg_pid"
start=$(date +%s%N)
wait_exit "$bg_pid" 10
took=$(elapsed_ms "$start")
tap_ok "$([ "$pause_rc" -eq 0 ] && [ "$rc" -eq 143 ] && [ "$took" -lt 2000 ] && echo 0 || echo 1)" \
	"SIGTERM to a paused sandbox ends it at once with 143, not after the grace period ($took ms)" \
	"pause: $pause_rc $(cat "$TMP/pause.out"); $(diag)"
tap_is "$(cgroup_of pausetest)" "" "... and its cgroup is removed"

# ---- the supervisor killed with SIGKILL ----
if [ -z "$CG" ]; then
	for i in 1 2 3 4 5 6; do tap_skip "SIGKILL $i" "no cgroup2 mount in /proc/self/mountinfo"; done
else
	rm -f "$TMP/after"
	bg killtest sh -c "sleep 2; $HELPERS/marker $TMP/after"
	wait_for 5 has_cgroup killtest
	leaf=$(cgroup_of killtest)
	wait_for 5 sh -c "grep -q . '$leaf/cgroup.procs'"
	procs_before=$(wc -l <"$leaf/cgroup.procs")
	pids_before=$(cat "$leaf/cgroup.procs")
	kill -KILL "$bg_pid"
	wait_exit "$bg_pid" 5
	tap_is "$rc" 137 "the supervisor is killed with SIGKILL"
	wait_for 5 cgroup_empty "$leaf"
	tap_ok $? "the agent goes with it: its cgroup is empty (had $procs_before processes)" \
		"$(cat "$leaf/cgroup.procs" 2>&1)"
	# Once every process it had is gone, nothing of it can run the marker any more.
	# shellcheck disable=SC2086 # one pid per word
	all_gone() { for p in $pids_before; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
	wait_for 5 all_gone
	tap_ok "$([ ! -e "$TMP/after" ] && all_gone && echo 0 || echo 1)" "the agent never ran its next program"
	# Another engineer's run on this machine may clean it up first: only say what we saw.
	if [ -d "$leaf" ]; then
		echo "# the killed supervisor left its cgroup behind: $leaf"
	else
		echo "# the killed supervisor's cgroup is already gone (another run cleaned it)"
	fi

	# Killed while an exec waits for a person: the waiting process must not hang either.
	rm -f "$TMP/after"
	"$HELPERS/ptyanswer" - -- "$SUPERVISOR" run --config-dir "$CFG" \
		--name asktest$$ --ask-tty @TTY@ -- sh -c "/usr/bin/env true; $HELPERS/marker $TMP/after" \
		</dev/null >"$OUT" 2>"$ERR" &
	pty_pid=$!
	on_exit "kill -KILL $pty_pid 2>/dev/null"
	wait_for 5 grep -q 'approval needed' "$ERR"
	sv_pid=$(pgrep -P "$pty_pid" | head -n 1)
	asktest=$(cgroup_of asktest)
	# ptyanswer's child is the supervisor.
	[ -n "$sv_pid" ] && kill -KILL "$sv_pid"
	wait_exit "$pty_pid" 5
	tap_is "$rc" 137 "a supervisor killed while an ask waits: run's status is 137" "$(cat "$ERR")"
	gone=1
	[ -n "$asktest" ] && wait_for 5 cgroup_empty "$asktest" && [ ! -e "$TMP/after" ] && gone=0
	tap_ok "$gone" \
		"the process waiting in its exec is gone, the agent never went on, nothing hangs" \
		"cgroup $asktest: $(cat "$asktest/cgroup.procs" 2>&1); after: $(ls "$TMP/after" 2>&1)"

	# The next run removes both stale leaves.
	sv --name nexttest$$ --ask none -- /usr/bin/true
	tap_ok "$([ "$rc" -eq 0 ] && [ ! -e "$leaf" ] && [ ! -e "$asktest" ] && echo 0 || echo 1)" \
		"the next run removes the stale cgroups" "$(diag)
left: $(ls -d "$leaf" "$asktest" 2>&1)"
fi

# ---- --require-backstop ----
sv --require-backstop --ask none -- /usr/bin/true
if grep -q 'no exec backstop' "$ERR"; then
	tap_is "$rc" 125 "--require-backstop refuses to start without the backstop" "$(diag)"
else
	tap_is "$rc" 0 "--require-backstop starts where the backstop loads" "$(diag)"
fi

# ---- a run by a non-root user ----
if ! command -v setpriv >/dev/null 2>&1; then
	for i in 1 2 3 4 5 6 7 8; do tap_skip "non-root $i" "setpriv is not installed"; done
	tap_done
	exit
fi
NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$CFG/config.yaml" "$U/cfg/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"
as_nobody() {
	(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		env -u XDG_RUNTIME_DIR HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
		"$U/cloister-supervisor" run --config-dir "$U/cfg" "$@") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
}
as_nobody --ask none -- sh -c 'id -u; id -g; /usr/bin/whoami; echo "status $?"'
tap_is "$rc:$(cat "$OUT")" "0:$NOBODY
$NOBODY
status 126" "non-root: the agent runs with the caller's uid and gid, a denied exec fails" "$(diag)"
tap_like "$(cat "$ERR")" 'exec /usr/bin/whoami denied: exec\.deny\[0\]' \
	"non-root: the denial names the rule" "$(diag)"
tap_is "$(grep -c '"uid":65534.*"verdict":"allow"' "$U/state/cloister/audit.log" 2>&1)" 3 \
	"non-root: its audit log (in its own XDG_STATE_HOME) has the allowed execs with its uid"
as_nobody -v --ask none -- /usr/bin/true
echo "# non-root: $(grep -m1 'backstop:' "$ERR")"
tap_like "$(cat "$ERR")" 'backstop: ptrace' \
	"non-root: run -v says the exec backstop is the ptrace one (eBPF needs root)" "$(diag)"
echo "# non-root: $(grep -m1 'cgroup' "$ERR")"
tap_like "$(cat "$ERR")" 'cgroup \(none\)|cgroup /' "non-root: run -v says which cgroup (none without a delegated subtree)"
as_nobody --require-backstop --ask none -- /usr/bin/true
tap_like "$rc $(cat "$ERR")" '^125 .*no exec backstop' "non-root: --require-backstop refuses to start (125)" "$(diag)"
as_nobody --ask none -- sh -c 'sh -c "/usr/bin/whoami"; echo "status $?"'
tap_is "$(cat "$OUT")" "status 126" "non-root: a grandchild's denied exec fails too" "$(diag)"
tap_like "$(ls -ln "$U/state/cloister/audit.log" 2>&1)" "^-rw------- 1 $NOBODY $NOBODY " "non-root: the audit log is the user's, mode 0600"

tap_done
