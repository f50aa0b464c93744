#!/bin/sh
# `cloister-supervisor run`: asks. The terminal approver on the user's terminal (the agent's
# output goes through it; the agent is frozen while the prompt waits) and on a separate one
# (--ask-tty), driven through a pseudo-terminal by tests/helpers/ptyanswer; single-key answers
# a/d/A; execvp's PATH probing gives one ask;
# a process that dies while its ask waits cancels it; the ask timeout; ask_fallback with
# --ask none. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 39
tap_plan 39

PTY=$HELPERS/ptyanswer
TERMLOG=$TMP/terminal

write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/echo"
  defaults: false
EOF

# pty [--ctty] ANSWERS RUN-OPTIONS -- AGENT…: run the supervisor under ptyanswer. With --ctty the
# pty is its controlling terminal and stdio (shared with the agent); otherwise prompts go to the
# pty given with --ask-tty @TTY@. The terminal's text goes to $TERMLOG ($TERMLOG.txt without
# control sequences, $TERMLOG.main what stayed on the main screen), stdout to $OUT.
pty() {
	ctty=
	if [ "$1" = --ctty ]; then
		ctty=--ctty
		shift
	fi
	answers=$1
	shift
	# --foreground: the supervisor stays in the terminal's foreground process group. In $TMP:
	# the agent's private /tmp shows only its working directory.
	(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$PTY" $ctty "$answers" -- \
		timeout --foreground -k 5 $((SV_TIMEOUT - 5)) \
		"$SUPERVISOR" run --config-dir "$CFG" "$@") </dev/null >"$OUT" 2>"$TERMLOG"
	rc=$?
	# What a person read: the text without control sequences and \r.
	screen_text <"$TERMLOG" >"$TERMLOG.txt"
	main_screen_text <"$TERMLOG" >"$TERMLOG.main"
}
prompts() { grep -c 'approval needed' "$TERMLOG.txt"; }
tdiag() { printf 'status %s\nstdout: %s\nterminal: %s' "$rc" "$(head -c 1000 "$OUT")" "$(head -c 3000 "$TERMLOG.txt")"; }

# ---- the agent's own terminal (shared) ----
audit_reset
pty --ctty a --ask tty -- sh -c 'echo before; id -u; echo "status $?"'
tap_is "$rc" 0 "shared tty, answer a: run exits 0" "$(tdiag)"
tap_like "$(cat "$TERMLOG.main")" '^0$' "shared tty, answer a: the asked program ran, once" "$(tdiag)"
tap_like "$(cat "$TERMLOG.txt")" '^status 0$' "shared tty, answer a: the agent went on" "$(tdiag)"
tap_is "$(prompts)" 1 "shared tty, answer a: one prompt"
tap_is "$(audit_count '"verdict":"approved".*"decided_by":"tty","scope":"once"')" 1 \
	"the audit log has the approval by the terminal, scope once"

audit_reset
pty --ctty d --ask tty -- sh -c 'id -u; echo "status $?"'
tap_like "$(cat "$TERMLOG.txt")" '^status 126$' "shared tty, answer d: the exec fails (126 from sh)" "$(tdiag)"
tap_like "$(cat "$TERMLOG.txt")" 'id: Permission denied' "shared tty, answer d: EACCES in the agent"
tap_is "$(prompts)" 1 "shared tty, answer d: one prompt, though sh tries /usr/bin/id and /bin/id"
tap_is "$(audit_count '"verdict":"denied".*"decided_by":"tty"')" 1 "the audit log has the denial by the terminal"

audit_reset
pty --ctty A --ask tty -- sh -c 'id -u; echo "first $?"; id -u; echo "second $?"'
tap_like "$(cat "$TERMLOG.txt")" '^second 0$' "shared tty, answer A: both runs of the program run" "$(tdiag)"
tap_is "$(prompts)" 1 "shared tty, answer A (always): the same exec later does not ask again"
tap_is "$(audit_count '"verdict":"allow".*"rule":"session: allowed always by a person"')" 1 \
	"the second run is allowed by the session's answer"

# Frozen while the prompt waits: nobody answers ("-"), the ask times out after 2 s. A background
# job of the agent ticks every 0.1 s; while the prompt waits it must not tick. (The cgroup does
# not report "frozen 1": the asking task, blocked in the notification, freezes only once
# answered. cgroup.freeze says what was asked of it.)
cg=$(cgroup2_root)
frozen() { grep -qx 1 "$cg"/cloister/frozentest-*/cgroup.freeze 2>/dev/null; }
ticks_settled() {
	a=$(wc -l <"$TMP/ticks")
	sleep 0.25
	[ "$a" = "$(wc -l <"$TMP/ticks")" ]
}
audit_reset
: >"$TERMLOG"
: >"$TMP/ticks"
(
	i=0
	while [ $i -lt 100 ] && ! grep -q 'approval needed' "$TERMLOG" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	# Frozen once asked to be, and once the job has stopped ticking (it ticks every 0.1 s).
	[ -z "$cg" ] || wait_until 5 frozen
	wait_until 5 ticks_settled
	cat "$cg"/cloister/frozentest-*/cgroup.freeze >"$TMP/freeze" 2>&1
	wc -l <"$TMP/ticks" >"$TMP/ticks.a"
	sleep 1 # not a wait: the window in which a frozen job must not tick
	wc -l <"$TMP/ticks" >"$TMP/ticks.b"
) &
watcher=$!
# shellcheck disable=SC2016 # the agent's shell expands these
pty --ctty - --ask tty --ask-timeout 2s --name frozentest -- \
	sh -c '(while :; do echo tick >>'"$TMP/ticks"'; sleep 0.1; done) & i=0; while [ ! -s '"$TMP/ticks"' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; id -u; echo "resumed $?"; sleep 0.3; kill $!'
wait $watcher
if [ -z "$cg" ]; then
	tap_skip "frozen" "no cgroup2 mount"
else
	tap_is "$(cat "$TMP/freeze")" 1 "shared tty: the agent's cgroup is frozen while the prompt waits"
fi
tap_ok "$([ "$(cat "$TMP/ticks.a")" -gt 0 ] && [ "$(cat "$TMP/ticks.a")" -eq "$(cat "$TMP/ticks.b")" ] && echo 0 || echo 1)" \
	"shared tty: the agent's background job does not run while the prompt waits" \
	"ticks 0.3 s into the prompt: $(cat "$TMP/ticks.a"), 1 s later: $(cat "$TMP/ticks.b")"
tap_like "$(cat "$TERMLOG.txt")" '^resumed 126$' \
	"shared tty: after the ask timed out the agent resumed (and the exec failed)" "$(tdiag)"
tap_is "$(audit_count '"verdict":"timed_out"')" 1 "the audit log has the timeout"

# The asking process killed (from outside: the agent is frozen) while the prompt waits: the ask
# is cancelled, the prompt goes, the agent resumes.
asker_shown() { tr -d '\r' <"$TERMLOG" | grep -q '^ *pid: [0-9][0-9]* uid'; }
audit_reset
: >"$TERMLOG"
(
	i=0
	while [ $i -lt 100 ] && ! grep -q 'approval needed' "$TERMLOG" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	wait_until 5 asker_shown
	asker=$(tr -d '\r' <"$TERMLOG" | sed -n 's/^ *pid: \([0-9][0-9]*\) uid.*/\1/p' | head -n 1)
	[ -n "$asker" ] && kill -KILL "$asker"
) &
watcher=$!
start=$(date +%s)
pty --ctty - --ask tty -- sh -c 'id -u; echo "resumed $?"'
took=$(($(date +%s) - start))
wait $watcher
tap_like "$(cat "$TERMLOG.txt")" '^resumed 137$' \
	"shared tty: the asking process killed while the prompt waits: the agent resumes" "$(tdiag)"
tap_is "$(audit_count '"verdict":"cancelled"'):$([ "$took" -le 5 ] && echo prompt)" "1:prompt" \
	"its ask is cancelled (audit log), nothing hangs (${took}s)"

# ---- a separate terminal (--ask-tty) ----
audit_reset
pty a --ask-tty @TTY@ -- sh -c 'id -u; echo "status $?"'
tap_is "$rc:$(cat "$OUT")" "0:0
status 0" "--ask-tty, answer a: the program runs, its output on the agent's stdout" "$(tdiag)"
tap_is "$(prompts)" 1 "--ask-tty: the prompt appears on that terminal"

pty d --ask-tty @TTY@ -- sh -c 'id -u; echo "status $?"'
tap_is "$(cat "$OUT")" "status 126" "--ask-tty, answer d: the exec fails" "$(tdiag)"

# ---- execvp's PATH probing: one ask, not one per PATH entry ----
mkdir -p "$TMP/p1" "$TMP/p2" "$TMP/p3"
printf 'not executable\n' >"$TMP/p2/id"
audit_reset
PATH=$TMP/p1:$TMP/p2:$TMP/p3:/usr/local/bin:/usr/bin:/bin pty a --ask-tty @TTY@ -- \
	sh -c 'id -u; echo "status $?"'
tap_is "$rc:$(cat "$OUT")" "0:0
status 0" "PATH probing: the program found on the sixth PATH entry runs" "$(tdiag)"
tap_is "$(prompts)" 1 "PATH probing: one prompt"
tap_is "$(audit_count '"verdict":"ask"')" 1 "PATH probing: one ask in the audit log"

audit_reset
PATH=$TMP/p1:$TMP/p2:$TMP/p3:/usr/local/bin:/usr/bin:/bin pty d --ask-tty @TTY@ -- \
	sh -c 'id -u; echo "status $?"'
tap_is "$(cat "$OUT"):$(prompts):$(audit_count '"verdict":"ask"')" "status 126:1:1" \
	"PATH probing, answer d: one prompt and one ask, though /usr/bin/id and /bin/id both exist" "$(tdiag)"

# ---- a process that dies while its ask waits ----
# The agent acts once its child's ask is up: $TMP/asked, made when the prompt shows.
asked() {
	rm -f "$TMP/asked"
	: >"$TERMLOG"
	(wait_until 20 grep -q 'approval needed' "$TERMLOG" && touch "$TMP/asked") &
	asked_pid=$!
}
asked_done() { kill "$asked_pid" 2>/dev/null; wait "$asked_pid" 2>/dev/null; }
WAIT_ASKED="i=0; while [ ! -e $TMP/asked ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done"
audit_reset
asked
start=$(date +%s)
# shellcheck disable=SC2016 # the agent's shell expands these
pty - --ask-tty @TTY@ -- sh -c '/usr/bin/id & p=$!; '"$WAIT_ASKED"'; kill -9 $p; wait $p; echo "killed $?"'
took=$(($(date +%s) - start))
asked_done
tap_is "$rc:$(cat "$OUT")" "0:killed 137" "an asking process killed while its ask waits: the agent goes on" "$(tdiag)"
tap_is "$(audit_count '"verdict":"cancelled"')" 1 "its ask is cancelled (audit log)"
tap_ok "$([ "$took" -le 5 ] && echo 0 || echo 1)" "nothing hangs (took ${took}s)"

# The agent exits while a background child's ask waits: run ends with the agent's status.
audit_reset
asked
start=$(date +%s)
pty - --ask-tty @TTY@ -- sh -c '/usr/bin/id & '"$WAIT_ASKED"'; exit 4'
took=$(($(date +%s) - start))
asked_done
tap_is "$rc:$(audit_count '"verdict":"cancelled"')" "4:1" \
	"the agent exits while its child's ask waits: run exits 4 at once (${took}s), the ask is cancelled" "$(tdiag)"

# ---- the ask timeout ----
audit_reset
start=$(date +%s)
pty - --ask-tty @TTY@ --ask-timeout 1s -- sh -c '/usr/bin/id; echo "status $?"'
took=$(($(date +%s) - start))
tap_is "$rc:$(cat "$OUT")" "0:status 126" "--ask-timeout 1s: an unanswered exec fails" "$(tdiag)"
tap_is "$(audit_count '"verdict":"timed_out"')" 1 "the audit log has timed_out"
tap_ok "$([ "$took" -ge 1 ] && [ "$took" -le 5 ] && echo 0 || echo 1)" "it took about a second (${took}s)"

# ---- ask_fallback when nobody can answer (--ask none) ----
for fallback in deny allowlist full; do
	write_config <<EOF
exec:
  security: allowlist
  ask: always
  ask_fallback: $fallback
  allow:
    - path: "/usr/bin/true"
  defaults: false
EOF
	audit_reset
	sv --ask none -- /usr/bin/true
	listed=$rc
	sv --ask none -- /usr/bin/id -u
	unlisted=$rc
	case $fallback in
	deny) want="126 126" ;;
	allowlist) want="0 126" ;;
	full) want="0 0" ;;
	esac
	tap_is "$listed $unlisted" "$want" \
		"ask_fallback $fallback: an allow-listed and an unlisted exec (ask: always) give $want" "$(diag)"
done
tap_is "$(audit_count '"decided_by":"fallback"')" 2 "the fallback's decisions are in the audit log"

# ---- the terminal and the dashboard's API both answer; the CLI does first ----
# The prompt on the agent's own terminal is withdrawn and the frozen agent goes on.
write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  allow:
    - path: "/usr/bin/dash"
  defaults: false
EOF
XDG_RUNTIME_DIR=$TMP/xdg-run
export XDG_RUNTIME_DIR
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
(
	i=0
	while [ $i -lt 100 ]; do
		id=$("$SUPERVISOR" pending --json 2>/dev/null |
			sed -n 's/.*"id":[[:space:]]*"\([0-9a-f]\{12\}\)".*/\1/p' | head -n 1)
		if [ -n "$id" ]; then
			"$SUPERVISOR" approve "$id" >"$TMP/cli.out" 2>&1
			exit
		fi
		sleep 0.1
		i=$((i + 1))
	done
) &
cli_pid=$!
audit_reset
pty --ctty - --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	-- sh -c 'id -u; echo "status $?"'
wait "$cli_pid"
tap_like "$(cat "$TERMLOG.txt")" '^status 0$' \
	"terminal and CLI: the CLI's approval lets the frozen agent go on" "$(tdiag)
cli: $(cat "$TMP/cli.out" 2>&1)"
tap_like "$(cat "$TERMLOG.txt")" 'approved by cli' "... and the terminal says who answered" "$(tdiag)"
tap_is "$(audit_count '"verdict":"approved".*"decided_by":"cli"')" 1 "the audit log has the CLI's approval"

tap_done
