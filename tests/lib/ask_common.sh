# Sourced after run_common.sh by the tests in which a person answers the agent's asks from the
# CLI while the run goes on (decisions, the write ask), as root and as an ordinary user.
#
# Whose run it is (root by default):
#   BIN                        the supervisor the runs and the client use ($SUPERVISOR)
#   AS                         the command prefix that runs as the scenario's user ("" for root)
#   USER_ENV                   `env …` words for the scenario's user's HOME, XDG_* ("" for none)
#   user_tree WHO              for root or nobody: W=$TMP/WHO with H=$W/home, WT=$W/wt,
#                              $W/cfg (config: $W/cfg/config.yaml) and $W/rt (runtime dir);
#                              AUD (its audit log), AS and USER_ENV set; BIN a copy of the
#                              supervisor that nobody may run. Make what the test needs in there,
#                              then:
#   user_tree_own              hand the tree over to its user (nobody: chown -R, W 0711), rt 0700
# The run and the client:
#   SV                         the pid of the run in the background, set by the test
#   alive PID                  PID still runs
#   finish                     wait for $SV to end; its status in $rc
#   stop_pid PID               stop a run: TERM, then KILL after 5 s; reaped
#   stop_sv                    stop_pid $SV
#   cli ARGS…                  the client as the scenario's user; stdout and stderr in $out,
#                              status in $st
#   wait_pending TEXT…         poll `pending` (15 s, or until $SV ended) for a line with every
#                              TEXT; its id in $id, "" when none came
# An agent driven one step at a time:
#   STEP_AGENT                 the agent script, `sh -c "$STEP_AGENT" sh DIR`: runs DIR/cmdN
#                              (one line of sh) for N = 1, 2, … as they appear, each one's
#                              output and a last line "status S" in DIR/outN
#   STEPS                      the DIR that step and done_within use ($TMP)
#   step N COMMAND             the agent runs COMMAND as its step N
#   done_within N SECONDS      step N finished within SECONDS (status); its output in $res
#   start_run NAME DIR [ARGS…] a run (root) of $PROJECT with config dir $CFG, asks on the web,
#                              named NAME, whose stepped agent works in DIR (DIR.out, DIR.err),
#                              ARGS added to `run`'s options; its pid in $pid once its API file
#                              is in $XDG_RUNTIME_DIR (or it ended, or 10 s passed)
# shellcheck shell=sh
# shellcheck disable=SC2034 # the variables set here are read by the tests

NOBODY=65534
BIN=$SUPERVISOR
AS=
USER_ENV=
SV=
STEPS=$TMP

user_tree() {
	W=$TMP/$1
	H=$W/home
	WT=$W/wt
	mkdir -p "$W/cfg" "$H" "$WT" "$W/rt"
	AUD=$W/state/cloister/audit.log
	USER_ENV="env HOME=$H XDG_CONFIG_HOME=$H/.config XDG_STATE_HOME=$W/state XDG_RUNTIME_DIR=$W/rt"
	if [ "$1" = nobody ]; then
		AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	else
		AS=
	fi
	# Nobody runs a copy: the build directory may be out of its reach.
	if [ ! -x "$TMP/cloister-supervisor" ]; then
		chmod 711 "$TMP"
		cp "$SUPERVISOR" "$TMP/cloister-supervisor"
		chmod 755 "$TMP/cloister-supervisor"
	fi
	BIN=$TMP/cloister-supervisor
}

user_tree_own() {
	if [ -n "$AS" ]; then
		chown -R "$NOBODY:$NOBODY" "$W"
		chmod 711 "$W"
	fi
	chmod 700 "$W/rt"
}

alive() { kill -0 "$1" 2>/dev/null; }

finish() {
	wait "$SV"
	rc=$?
}

stop_pid() {
	[ -n "$1" ] && alive "$1" || return 0
	kill -TERM "$1" 2>/dev/null
	i=0
	while alive "$1" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	alive "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

stop_sv() { stop_pid "$SV"; }

cli() {
	# shellcheck disable=SC2086 # $AS and $USER_ENV are words on purpose
	out=$(timeout 20 $AS $USER_ENV "$BIN" "$@" 2>&1)
	st=$?
}

wait_pending() {
	id=
	i=0
	while [ -z "$id" ] && [ $i -lt 300 ] && { [ -z "$SV" ] || alive "$SV"; }; do
		cli pending
		wait_pending_lines=$out
		for wait_pending_text in "$@"; do
			wait_pending_lines=$(printf '%s\n' "$wait_pending_lines" | grep -F -- "$wait_pending_text")
		done
		id=$(printf '%s\n' "$wait_pending_lines" | awk 'NF { print $1; exit }')
		[ -n "$id" ] || sleep 0.05
		i=$((i + 1))
	done
}

# shellcheck disable=SC2016 # the agent's shell expands these
STEP_AGENT='n=1; while :; do while [ ! -e "$1/cmd$n" ]; do sleep 0.05; done
	sh "$1/cmd$n" >"$1/out$n" 2>&1; echo "status $?" >>"$1/out$n"; n=$((n + 1)); done'

step() { printf '%s\n' "$2" >"$STEPS/cmd$1.tmp" && mv "$STEPS/cmd$1.tmp" "$STEPS/cmd$1"; }

done_within() {
	i=0
	while ! grep -q '^status' "$STEPS/out$1" 2>/dev/null && [ $i -lt $(($2 * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	res=$(cat "$STEPS/out$1" 2>/dev/null)
	grep -q '^status' "$STEPS/out$1" 2>/dev/null
}

start_run() {
	start_run_name=$1
	start_run_dir=$2
	shift 2
	mkdir -p "$start_run_dir"
	(cd "$start_run_dir" && exec "$SUPERVISOR" run --config-dir "$CFG" --project "$PROJECT" \
		--ask web --ask-timeout 60s --name "$start_run_name" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off "$@" -- sh -c "$STEP_AGENT" sh \
		"$start_run_dir") </dev/null >"$start_run_dir.out" 2>"$start_run_dir.err" &
	pid=$!
	i=0
	while [ ! -s "$XDG_RUNTIME_DIR/cloister/api/$pid.json" ] && alive "$pid" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
