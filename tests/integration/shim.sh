#!/bin/sh
# cloister-shim against a real shim listener (tests/helpers/shim_testserver): allowed, denied
# and asked calls, streaming, exit codes, cancel on SIGINT, an unreachable supervisor, TCP
# with its token, and the mirror strategy inside a container made with unshare.
# A cancelled host command gets SIGTERM first, then SIGKILL after the grace (--kill-grace-ms).
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
: "${SHIM:?run through make (SHIM is not set)}"

PLAN=40
run_needs_root $PLAN
tap_plan $PLAN

SERVER=$HELPERS/shim_testserver
BIN=$TMP/bin
WT=$TMP/wt
SOCK=$TMP/shim.sock
LOG=$TMP/server.log
mkdir -p "$BIN" "$WT/sub" "$TMP/lockbin"
chmod 755 "$TMP" "$WT" "$WT/sub" "$TMP/lockbin"
for t in seq sh false hostname id rm mytool curl nosuchtool grep; do
	ln -s "$SHIM" "$BIN/$t"
done
# A locked original, as install-shim.sh leaves it; the plain name is the shim.
printf '#!/bin/sh\necho "locked original ran: $*"\n' >"$TMP/lockbin/mytool.original"
chmod 755 "$TMP/lockbin/mytool.original"
ln -s "$SHIM" "$TMP/lockbin/mytool"

server_pid=""
start_server() { # ARGS…: wait until it listens
	rm -f "$TMP/ready"
	"$SERVER" --worktree "$WT" --shim-dir "$BIN" --ready "$TMP/ready" "$@" >"$LOG" 2>&1 &
	server_pid=$!
	i=0
	while [ ! -s "$TMP/ready" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		server_pid=""
	fi
}
on_exit 'stop_server'

# shimmed TOOL ARGS…: run through the shim from inside the worktree (bounded).
shimmed() {
	tool=$1
	shift
	(cd "$WT" && PATH="$BIN:$TMP/lockbin:/usr/sbin:/usr/bin:/sbin:/bin" CLOISTER_SOCKET=$SOCK \
		timeout -k 2 20 "$BIN/$tool" "$@") >"$OUT" 2>"$ERR"
	rc=$?
}

# ---- host strategy: policy answers, streaming, exit codes ----------------------------------
# The server ignores signals 10 and 32 (glibc's own) as a careless parent might leave them.
start_server --unix "$SOCK" --strategy host --kill-grace-ms 500 --ignore-signal 10 \
	--ignore-signal 32 --allow seq --allow sh --allow false --allow mytool --allow nosuchtool \
	--allow grep --deny rm --ask id --ask-deny hostname
tap_ok "$([ -S "$SOCK" ] && echo 0 || echo 1)" "the listener creates its socket"

shimmed seq 3
tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:1 2 3 " "an allowed call prints the command's output and exits 0"

shimmed false
tap_is "$rc" 1 "exit code 1 comes back"

SIGS_DEFAULT=$(printf 'SigBlk:\t0000000000000000 SigIgn:\t0000000000000000 ')
shimmed grep -E '^Sig(Blk|Ign)' /proc/self/status
tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:$SIGS_DEFAULT" \
	"host: the command gets no blocked and no ignored signal, 32 included"

shimmed sh -c 'kill -9 $$'
tap_is "$rc" 137 "a command killed by SIGKILL exits 137"

shimmed sh -c 'exit 42'
tap_is "$rc" 42 "any exit code comes back exactly"

# shellcheck disable=SC2016 # the inner shell expands it
shimmed sh -c 'i=0; while [ $i -lt 2000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done'
tap_is "$rc:$(wc -l <"$OUT"):$(wc -l <"$ERR")" "0:2000:2000" "interleaved stdout and stderr: every line on its own stream"
tap_is "$(sed -n '1p;1000p;2000p' "$OUT" | tr '\n' ,)$(sed -n '1p;2000p' "$ERR" | tr '\n' ,)" \
	"out 0,out 999,out 1999,err 0,err 1999," "each stream keeps its order"

shimmed seq 1000000
size=$(wc -c <"$OUT")
tap_ok "$([ "$size" -gt 200000 ] && [ "$size" -lt 200100 ] && echo 0 || echo 1)" \
	"6.9 MB of output is capped near 200 000 bytes" "got $size bytes"
tap_like "$(grep -a 'truncated' "$OUT")" '^\[\.\.\. [0-9]+ bytes truncated \.\.\.\]$' \
	"the cut says how many bytes were dropped"
tap_is "$(head -n 1 "$OUT"):$(tail -n 1 "$OUT")" "1:1000000" "the head and the tail of the output are kept"

shimmed rm -rf /
tap_is "$rc" 126 "a denied call exits 126"
tap_like "$(cat "$ERR")" "rm: denied by the supervisor: denied by the test policy" "and says why"

shimmed id -u
tap_is "$rc:$(cat "$OUT")" "0:0" "an asked call runs once a person approves"
tap_like "$(cat "$ERR")" "waiting for approval" "after a second of pending the shim says it waits"

shimmed hostname
tap_is "$rc" 126 "an asked call a person denies exits 126"

(cd / && CLOISTER_SOCKET=$SOCK timeout 10 "$BIN/seq" 1) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 126 "a cwd outside the worktree is refused"
tap_like "$(cat "$ERR")" "cwd / is outside the worktree" "naming the cwd and the worktree"

ln -s / "$WT/escape"
(cd "$WT/escape" && CLOISTER_SOCKET=$SOCK timeout 10 "$BIN/seq" 1) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 126 "a cwd that leaves the worktree through a symlink is refused" "$(cat "$ERR")"
rm "$WT/escape"

shimmed nosuchtool
tap_like "$rc:$(cat "$ERR")" "^127:cloister: nosuchtool: not found on the host's PATH" \
	"host: a tool that is only the shim is not found (127), the shim never runs itself"

(cd "$WT" && PATH="$BIN:$TMP/lockbin:/usr/bin:/bin" CLOISTER_SOCKET="$SOCK" "$TMP/lockbin/mytool" x) \
	>"$OUT" 2>"$ERR"
rc=$?
tap_like "$rc:$(cat "$ERR")" "^127:cloister: mytool: not found on the host's PATH" \
	"host: the caller's PATH does not pick the program the host runs"

# shellcheck disable=SC2016 # expanded by the host command's shell, not this one
(cd "$WT" && HOME=/agent-home TERM=xterm-agent PATH="$BIN:/usr/bin:/bin" CLOISTER_SOCKET="$SOCK" \
	timeout 10 "$BIN/sh" -c 'echo "$HOME $TERM"') >"$OUT" 2>"$ERR"
tap_is "$(cat "$OUT")" "$HOME xterm-agent" \
	"host: the caller's HOME does not reach the host command, its TERM does"

shimmed sh -c 'sleep 30 & echo $! >'"$TMP"'/bg; echo done'
bg=$(cat "$TMP/bg" 2>/dev/null)
bg_dead() { ! grep -qs '^State:[[:space:]]*[RSD]' /proc/"$bg"/status; }
[ -n "$bg" ] && wait_until 5 bg_dead
# Orphaned, it may stay a zombie until whoever adopted it reaps it: dead all the same.
tap_ok "$([ "$rc" = 0 ] && [ -n "$bg" ] && ! grep -qs '^State:[[:space:]]*[RSD]' /proc/"$bg"/status && echo 0 || echo 1)" \
	"a background job the command leaves behind is killed when it exits" "rc $rc, pid '$bg'"

# Cancel: SIGINT to the shim becomes a cancel frame; the host command gets SIGTERM first.
# cancelled ARGS…: run `sh ARGS…` through the shim until it prints "started", then SIGINT
# the shim; rc, took (ms from the SIGINT to the shim's exit) and victim (the command's pid).
cancelled() {
	rm -f "$TMP/victim"
	finished_before=$(grep -c '^finished ' "$LOG")
	: >"$OUT" # before the background job starts: no "started" from an earlier run
	(cd "$WT" && PATH="$BIN:/usr/bin:/bin" CLOISTER_SOCKET=$SOCK exec "$BIN/sh" "$@") \
		>"$OUT" 2>"$ERR" &
	shim_pid=$!
	i=0
	while ! grep -q started "$OUT" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	victim=$(cat "$TMP/victim" 2>/dev/null)
	t0=$(date +%s%3N)
	kill -INT "$shim_pid"
	wait "$shim_pid"
	rc=$?
	took=$(($(date +%s%3N) - t0))
	wait_until 5 finished_more
}
finished_more() { [ "$(grep -c '^finished ' "$LOG")" -gt "$finished_before" ]; }
last_finished() { grep '^finished ' "$LOG" | tail -n 1 | cut -d' ' -f3; }

cancelled -c 'echo $$ > '"$TMP"'/victim; echo started; exec sleep 30'
tap_is "$rc" 143 "SIGINT cancels: SIGTERM ends the command, the shim exits 143"
tap_ok "$([ -n "$victim" ] && ! kill -0 "$victim" 2>/dev/null && echo 0 || echo 1)" \
	"the command was killed" "victim pid '$victim'"
tap_is "$(last_finished)" 143 "the server reports the cancelled run"

rm -f "$TMP/termed"
cancelled -c 'trap "echo got TERM >'"$TMP"'/termed; exit 7" TERM
	echo $$ > '"$TMP"'/victim; echo started; while :; do sleep 0.1; done'
tap_is "$(cat "$TMP/termed" 2>/dev/null)" "got TERM" "a cancelled command gets SIGTERM first: its trap runs"
tap_is "$rc:$(last_finished)" "7:7" "and its own exit status comes back"
tap_ok "$([ "$took" -lt 500 ] && echo 0 || echo 1)" "without waiting for the grace" "took $took ms"

cancelled -c 'trap "" TERM; echo $$ > '"$TMP"'/victim; echo started; exec sleep 30'
tap_is "$rc:$(last_finished)" "137:137" "a command that ignores SIGTERM gets SIGKILL: 137"
tap_ok "$([ "$took" -ge 500 ] && [ "$took" -lt 5000 ] && echo 0 || echo 1)" \
	"after the grace (--kill-grace-ms 500)" "took $took ms"
tap_ok "$([ -n "$victim" ] && ! kill -0 "$victim" 2>/dev/null && echo 0 || echo 1)" \
	"the command is gone" "victim pid '$victim'"
stop_server

# Unreachable.
(cd "$WT" && CLOISTER_SOCKET=$TMP/nothing.sock "$BIN/seq" 1) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 127 "an unreachable supervisor exits 127"
tap_like "$(cat "$ERR")" "seq: cannot reach the Cloister supervisor at .*nothing.sock" "with a clear message"

# ---- TCP: the token ------------------------------------------------------------------------
start_server --tcp 127.0.0.1:0 --token right-token --strategy host --allow seq
port=$(cat "$TMP/ready")
(cd "$WT" && CLOISTER_SUPERVISOR=127.0.0.1:$port CLOISTER_TOKEN=wrong "$BIN/seq" 2) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 126 "TCP with a wrong token is refused"
(cd "$WT" && CLOISTER_SUPERVISOR=127.0.0.1:$port CLOISTER_TOKEN=right-token "$BIN/seq" 2) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:1 2 " "TCP with the right token runs the command"
stop_server

# ---- mirror: into a container's namespaces, as the caller --------------------------------
unshare --mount --uts --ipc --net --pid --fork --kill-child sh -c 'hostname cloister-box; exec sleep 60' 2>/dev/null &
box_outer=$!
# The container's process is unshare's child once it has set the host name and become
# `sleep`: until then there is no target (a first run on a loaded machine takes its time).
box_ready() { box=$(pgrep -P "$box_outer" -x sleep); }
wait_until 20 box_ready || echo "# the container's process did not start: $(ps -o pid,comm --ppid "$box_outer")"
# unshare --fork ignores SIGTERM while it waits: end the container's process itself.
on_exit "kill -KILL ${box:-$box_outer} 2>/dev/null"
start_server --unix "$SOCK" --target-pid "$box" --ignore-signal 10 --ignore-signal 32 \
	--allow hostname --allow id --allow mytool --allow grep
chmod 666 "$SOCK"
(cd "$WT/sub" && setpriv --reuid 65534 --regid 65534 --clear-groups \
	env PATH="$BIN:/usr/bin:/bin" CLOISTER_SOCKET="$SOCK" "$BIN/hostname") >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:cloister-box" "mirror runs the tool inside the target's namespaces"
(cd "$WT/sub" && setpriv --reuid 65534 --regid 65534 --clear-groups \
	env PATH="$BIN:/usr/bin:/bin" CLOISTER_SOCKET="$SOCK" "$BIN/id" -u) >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:65534" "mirror runs it as the calling uid (from SO_PEERCRED)"
(cd "$WT" && PATH="$BIN:$TMP/lockbin:/usr/bin:/bin" CLOISTER_SOCKET="$SOCK" "$TMP/lockbin/mytool" a b) \
	>"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:locked original ran: a b" "mirror prefers the locked <tool>.original"
shimmed grep -E '^Sig(Blk|Ign)' /proc/self/status
tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:$SIGS_DEFAULT" \
	"mirror: the command gets no blocked and no ignored signal, 32 included"
stop_server
kill -KILL "$box" 2>/dev/null
wait "$box_outer" 2>/dev/null

tap_done
