# Sourced by tests/integration/run_*.sh: `cloister-supervisor run` under test.
#
# Sources tap.sh, points HOME, XDG_CONFIG_HOME and XDG_STATE_HOME into $TMP (nothing touches the
# real home), and gives:
#   run_needs_root N           print the plan of N skips and exit when not root
#   run_needs_tools N TOOL…    the same when a TOOL is not installed
#   run_skip_all N REASON      print the plan of N skips for REASON and exit
#   write_config < YAML        the test's own config ($CFG/config.yaml)
#   sv [RUN OPTIONS] -- AGENT  run the supervisor (bounded: $SV_TIMEOUT s), --config-dir $CFG,
#                              stdin /dev/null, in $TMP (the sandbox's /tmp is private: the
#                              working directory is what the agent sees of it); stdout in $OUT,
#                              stderr in $ERR, status in $rc
#   sv_as WHO [RUN OPTIONS]…   the same from $U, as root (--config-dir $CFG) or as nobody
#                              (WHO=nobody: $U/cloister-supervisor, --config-dir $U/cfg, HOME
#                              $U/home, XDG_STATE_HOME $U/state: a directory the test gives
#                              nobody)
#   NOBODY                     the unprivileged user's uid and gid (65534)
#   sv_agent_setup             for the tests that attack as root and as nobody, each case in a
#                              directory $W of its own: $TMP crossable and
#                              $TMP/cloister-supervisor, a copy of the supervisor nobody can run
#   sv_agent_who WHO           give $W to WHO (root or nobody: chown -R), crossable, and set $AS,
#                              the words that run a command as WHO
#   sv_agent DIR [RUN OPTIONS] -- AGENT…
#                              that supervisor run as $AS from DIR (bounded: $SV_AGENT_TIMEOUT
#                              s), HOME $SV_HOME ($W/home unless set), XDG_STATE_HOME $W/state,
#                              --config-dir $W/cfg (one in RUN OPTIONS comes later and counts),
#                              the approval listener on a free port and no other, --ask none;
#                              stdout in $OUT, stderr in $ERR, status in $rc
#   as_who DIR COMMAND…        the person on the host after the run: COMMAND as $AS from DIR
#                              with that HOME (bounded: 20 s), its output discarded
#   cli_as WHO ARGS…           the CLI as root ($SUPERVISOR) or as nobody (from $U:
#                              $U/cloister-supervisor, HOME $U, XDG_RUNTIME_DIR $U/rt); its
#                              output in $out, status in $st
#   pending_as WHO TEXT        poll `cli_as WHO pending` (10 s) for an ask whose line has TEXT;
#                              its id in $id ("" when none came), the last answer in $out
#   audit_count REGEX          lines of the audit log matching REGEX (0 if there is none)
#   audit_reset                start a new audit log
#   cgroup2_root               the cgroup2 mount point, from /proc/self/mountinfo
#   on_exit 'COMMAND'          run COMMAND at exit, before $TMP is removed (cleanup of
#                              processes, mounts); last registered runs first
# shellcheck shell=sh

# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=tests/lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
: "${HELPERS:?run through make check (HELPERS is not set)}"

HOME=$TMP/home
XDG_CONFIG_HOME=$TMP/home/.config
XDG_STATE_HOME=$TMP/state
export HOME XDG_CONFIG_HOME XDG_STATE_HOME
unset CLOISTER_EXECUTOR_SECRET CLOISTER_API_TOKEN
mkdir -p "$HOME"
CFG=$TMP/cfg
mkdir -p "$CFG"
AUDIT=$XDG_STATE_HOME/cloister/audit.log
OUT=$TMP/out
ERR=$TMP/err
SV_TIMEOUT=${SV_TIMEOUT:-20}
SV_AGENT_TIMEOUT=${SV_AGENT_TIMEOUT:-30}
unset SV_HOME
rc=0

run_exit_hooks=""
on_exit() { run_exit_hooks="$1
$run_exit_hooks"; }
run_cleanup() {
	set +e
	eval "$run_exit_hooks"
	rm -rf "$TMP"
}
trap run_cleanup EXIT
trap 'exit 130' INT TERM

# run_skip_all N REASON: the plan of N skips, each with REASON, and exit.
run_skip_all() {
	tap_plan "$1"
	i=0
	while [ "$i" -lt "$1" ]; do
		tap_skip "$(basename "$0")" "$2"
		i=$((i + 1))
	done
	exit 0
}

run_needs_root() {
	[ "$(id -u)" -eq 0 ] || run_skip_all "$1" "needs root (namespaces, cgroup, eBPF backstop)"
}

run_needs_tools() {
	run_needs_tools_n=$1
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			run_skip_all "$run_needs_tools_n" "$tool is not installed (scripts/install-deps)"
	done
}

write_config() { cat >"$CFG/config.yaml"; }

sv() {
	(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" "$@") \
		</dev/null >"$OUT" 2>"$ERR"
	rc=$?
}

sv_as() {
	sv_as_who=$1
	shift
	if [ "$sv_as_who" = root ]; then
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" "$@") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=65534 --regid=65534 \
			--clear-groups env HOME="$U/home" XDG_STATE_HOME="$U/state" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" "$@") </dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
}

NOBODY=65534

sv_agent_setup() {
	chmod 711 "$TMP"
	cp "$SUPERVISOR" "$TMP/cloister-supervisor"
	chmod 755 "$TMP/cloister-supervisor"
}

sv_agent_who() {
	if [ "$1" = nobody ]; then
		chown -R "$NOBODY:$NOBODY" "$W"
		AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	else
		AS=""
	fi
	chmod 711 "$W"
}

sv_agent() {
	sv_agent_dir=$1
	shift
	# shellcheck disable=SC2086 # $AS is words on purpose
	(cd "$sv_agent_dir" && exec timeout -k 5 "$SV_AGENT_TIMEOUT" $AS env \
		HOME="${SV_HOME:-$W/home}" XDG_STATE_HOME="$W/state" "$TMP/cloister-supervisor" run \
		--config-dir "$W/cfg" --listen-approval 127.0.0.1:0 --listen-tokens off \
		--listen-request off --ask none "$@") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
}

as_who() {
	as_who_dir=$1
	shift
	# shellcheck disable=SC2086 # $AS is words on purpose
	(cd "$as_who_dir" && exec timeout 20 $AS env HOME="${SV_HOME:-$W/home}" "$@") \
		</dev/null >/dev/null 2>&1
}

cli_as() {
	if [ "$1" = root ]; then
		shift
		out=$(timeout 20 "$SUPERVISOR" "$@" 2>&1)
	else
		shift
		out=$(cd "$U" && timeout 20 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			env HOME="$U" XDG_RUNTIME_DIR="$U/rt" "$U/cloister-supervisor" "$@" 2>&1)
	fi
	# shellcheck disable=SC2034 # the tests read it
	st=$?
}

pending_as() {
	id=
	pending_as_i=0
	while [ -z "$id" ] && [ $pending_as_i -lt 200 ]; do
		cli_as "$1" pending
		id=$(printf '%s\n' "$out" | grep -F -- "$2" | awk '{ print $1 }' | head -n 1)
		[ -n "$id" ] || sleep 0.05
		pending_as_i=$((pending_as_i + 1))
	done
}

audit_count() {
	if [ -f "$AUDIT" ]; then
		grep -cE -- "$1" "$AUDIT"
	else
		echo 0
	fi
}

# audit_has N ERE: the audit log has at least N lines matching ERE. Automatic lines may wait in
# memory for --audit-delay (20 ms) while the run goes on: `wait_until 10 audit_has N ERE`.
audit_has() { [ "$(audit_count "$2")" -ge "$1" ]; }

audit_reset() { rm -f "$AUDIT"; }

cgroup2_root() {
	awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo
}

# diag: what the last sv printed, for a failing case.
diag() { printf 'status %s\nstdout: %s\nstderr: %s' "$rc" "$(head -c 2000 "$OUT")" "$(head -c 2000 "$ERR")"; }

# screen_text < TRANSCRIPT: a terminal transcript without its control sequences (CSI, OSC,
# charset and cursor save/restore), carriage returns, CAN and SI: the text a person read.
screen_text() {
	_esc=$(printf '\033')
	_bel=$(printf '\007')
	sed -e "s|${_esc}\\][^${_bel}]*${_bel}||g" -e "s|${_esc}\\[[0-9;?<>=]*[ -/]*[@-~]||g" \
		-e "s|${_esc}[()][0-9A-Za-z]||g" -e "s|${_esc}[78=>]||g" | tr -d '\r\030\017'
}

# main_screen_text < TRANSCRIPT: screen_text of what stayed on the main screen: without what
# was drawn on the alternate screen (ESC[?1049h … ESC[?1049l, where prompts go).
main_screen_text() {
	awk 'BEGIN { RS = "\001"; on = "\033[?1049h"; off = "\033[?1049l" }
	{
		s = $0; out = ""
		while ((i = index(s, on)) > 0) {
			out = out substr(s, 1, i - 1); s = substr(s, i + length(on))
			j = index(s, off)
			if (j == 0) { s = ""; break }
			s = substr(s, j + length(off))
		}
		printf "%s", out s
	}' | screen_text
}
