#!/bin/sh
# `cloister-supervisor executor` over real TCP (guardian-api.md "Host Executor"): the port line,
# the secret (environment or owner-only file, never argv, never inherited, never shown), every
# response shape, bounds (line length, output size, timeout), env merge, workdir, concurrency,
# and SIGTERM killing running commands. Prints TAP.
# JSON in single quotes holds $VARS meant for the command's shell:
# shellcheck disable=SC2016
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

tap_plan 40

SECRET=e7f2a1b9c4d8-integration-secret-$$
SEND=$HELPERS/tcpsend
EX_PID=
PORT=

# start_executor [ARGS...]: start it with $SECRET in its environment; sets EX_PID and PORT.
start_executor() {
	# The redirection below happens in the background child: remove the old port line first.
	rm -f "$TMP/ex.out"
	CLOISTER_EXECUTOR_SECRET=$SECRET INHERITED=from-host "$SUPERVISOR" executor "$@" \
		>"$TMP/ex.out" 2>"$TMP/ex.err" &
	EX_PID=$!
	on_exit "kill -KILL $EX_PID 2>/dev/null"
	wait_port
}

wait_port() {
	PORT=
	i=0
	while [ $i -lt 100 ]; do
		PORT=$(sed -n 's/^CLOISTER_EXECUTOR_PORT=\([0-9][0-9]*\)$/\1/p' "$TMP/ex.out" 2>/dev/null)
		[ -n "$PORT" ] && return 0
		kill -0 "$EX_PID" 2>/dev/null || return 1
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

stop_executor() {
	kill -TERM "$EX_PID" 2>/dev/null
	wait "$EX_PID"
	ex_rc=$?
}

# ask JSON-REQUEST-OBJECT: send it with the right secret; the response line in $resp.
ask() {
	resp=$(printf '{"secret":"%s","request":%s}\n' "$SECRET" "$1" | "$SEND" "$PORT")
}

# ---- starting -------------------------------------------------------------------------------
"$SUPERVISOR" executor >"$TMP/o" 2>"$TMP/e" </dev/null
rc=$?
tap_like "$rc $(cat "$TMP/e")" "^64 .*no secret: set CLOISTER_EXECUTOR_SECRET" \
	"without a secret it refuses to start: 64 and why"

"$SUPERVISOR" executor --secret "$SECRET" >"$TMP/o" 2>"$TMP/e" </dev/null
rc=$?
tap_like "$rc $(cat "$TMP/e")" "^64 .*never taken from the command line" \
	"a secret on the command line is refused"

printf '%s\n' "$SECRET" >"$TMP/secret"
chmod 0644 "$TMP/secret"
"$SUPERVISOR" executor --secret-file "$TMP/secret" >"$TMP/o" 2>"$TMP/e" </dev/null
rc=$?
tap_like "$rc $(cat "$TMP/e")" "^64 .*mode 0644 lets group or others read" \
	"a secret file readable by others is refused"

chmod 0600 "$TMP/secret"
CLOISTER_EXECUTOR_SECRET=x "$SUPERVISOR" executor --secret-file "$TMP/secret" \
	>"$TMP/o" 2>"$TMP/e" </dev/null
rc=$?
tap_like "$rc $(cat "$TMP/e")" "^64 .*not both" "a secret in both places is refused"

# From an owner-only file (trailing newline dropped).
rm -f "$TMP/ex.out"
"$SUPERVISOR" executor --secret-file "$TMP/secret" >"$TMP/ex.out" 2>"$TMP/ex.err" &
EX_PID=$!
on_exit "kill -KILL $EX_PID 2>/dev/null"
wait_port
ask '{"command":"true"}'
tap_is "$resp" '{"status":"completed","exit_code":0,"stdout":"","stderr":""}' \
	"a secret from a 0600 file works"
stop_executor
old_port=$PORT

start_executor --port "$old_port"
tap_is "$PORT" "$old_port" "--port N listens on port N"
tap_like "$(cat "$TMP/ex.out")" '^CLOISTER_EXECUTOR_PORT=[0-9]+$' \
	"stdout is exactly the port line"
tap_ok "$( [ "$PORT" -gt 0 ] && [ "$PORT" -lt 65536 ]; echo $?)" "the port is a port ($PORT)"
tap_like "$(ss -ltnH "sport = :$PORT" 2>/dev/null || echo "127.0.0.1:$PORT")" "127\.0\.0\.1:$PORT" \
	"it listens on 127.0.0.1"

# ---- the secret stays secret ----------------------------------------------------------------
if tr '\0' '\n' <"/proc/$EX_PID/cmdline" | grep -q "$SECRET"; then r=1; else r=0; fi
tap_ok $r "the secret is not in /proc/PID/cmdline"
if tr '\0' '\n' <"/proc/$EX_PID/environ" | grep -q "$SECRET"; then r=1; else r=0; fi
tap_ok $r "the secret is not in the executor's /proc/PID/environ"
ask '{"command":"env"}'
tap_like "$resp" 'INHERITED=from-host' "commands inherit the executor's environment"
if printf '%s' "$resp" | grep -q "$SECRET\|CLOISTER_EXECUTOR_SECRET"; then r=1; else r=0; fi
tap_ok $r "but not the secret" "$resp"
ask '{"command":"sh","args":["-c","tr \"\\\\0\" \"\\\\n\" </proc/$PPID/environ"]}'
tap_like "$resp" 'INHERITED=from-host' "a command can read its parent's environment..."
if printf '%s' "$resp" | grep -q "$SECRET"; then r=1; else r=0; fi
tap_ok $r "...which holds no trace of the secret" "$resp"

# ---- authentication and bad requests --------------------------------------------------------
rm -f "$TMP/marker"
resp=$(printf '{"secret":"wrong","request":{"command":"touch","args":["%s"]}}\n' "$TMP/marker" |
	"$SEND" "$PORT")
tap_is "$resp" '{"status":"error","error":"invalid secret"}' "a wrong secret: invalid secret"
tap_ok "$( [ ! -e "$TMP/marker" ]; echo $?)" "and nothing ran"
resp=$(printf '{"request":{"command":"true"}}\n' | "$SEND" "$PORT")
tap_is "$resp" '{"status":"error","error":"invalid secret"}' "a missing secret: invalid secret"
resp=$(printf '{"secret":"wrong","request":{"command":7}}\n' | "$SEND" "$PORT")
tap_is "$resp" '{"status":"error","error":"invalid secret"}' \
	"a wrong secret with a bad request learns nothing more"

resp=$(printf '\n' | "$SEND" "$PORT")
tap_like "$resp" '^\{"status":"error","error":"invalid request: [^"]+"\}$' "an empty line: error"
resp=$(printf '{"secret": "%s", "request": {' "$SECRET" | "$SEND" "$PORT" -s)
tap_like "$resp" '^\{"status":"error","error":"invalid request: [^"]+"\}$' \
	"malformed JSON (cut, at end of file): error"
ask '{"command":"true","args":"not-a-list"}'
tap_like "$resp" '^\{"status":"error","error":"invalid request: request.args: [^"]+"\}$' \
	"an authenticated bad request is told which field"
head -c 1100000 /dev/zero | tr '\0' x >"$TMP/long"
resp=$("$SEND" "$PORT" <"$TMP/long")
tap_is "$resp" '{"status":"error","error":"invalid request: line longer than 1048576 bytes"}' \
	"an over-long line: error"

ask '{"command":"cloister-no-such-command"}'
tap_is "$resp" \
	'{"status":"error","error":"exec: \"cloister-no-such-command\": executable file not found in $PATH"}' \
	"a missing command: Go's exec error"

# ---- running --------------------------------------------------------------------------------
ask '{"command":"sh","args":["-c","echo out; echo err >&2; exit 3"]}'
tap_is "$resp" '{"status":"completed","exit_code":3,"stdout":"out\n","stderr":"err\n"}' \
	"exit code and both streams"
ask '{"command":"sh","args":["-c","kill -9 $$"]}'
tap_is "$resp" '{"status":"completed","exit_code":137,"stdout":"","stderr":""}' \
	"death by SIGKILL is 137"
ask '{"command":"sh","args":["-c","printf \"%s|%s\" \"$FOO\" \"$INHERITED\""],"env":{"FOO":"bar baz","INHERITED":"overridden"}}'
tap_is "$resp" '{"status":"completed","exit_code":0,"stdout":"bar baz|overridden","stderr":""}' \
	"env overrides merge with the host environment"
ask "{\"command\":\"pwd\",\"workdir\":\"$TMP\"}"
tap_is "$resp" "{\"status\":\"completed\",\"exit_code\":0,\"stdout\":\"$TMP\\n\",\"stderr\":\"\"}" \
	"workdir"
ask '{"command":"true","workdir":"/nonexistent"}'
tap_is "$resp" '{"status":"error","error":"chdir /nonexistent: no such file or directory"}' \
	"a missing workdir: error"

t0=$(date +%s%N)
ask '{"command":"sh","args":["-c","echo partial; sleep 30; echo never"],"timeout_ms":300}'
t1=$(date +%s%N)
tap_is "$resp" '{"status":"timeout","exit_code":-1,"stdout":"partial\n","stderr":""}' \
	"timeout keeps the partial output"
tap_ok "$( [ $(((t1 - t0) / 1000000)) -lt 3000 ]; echo $?)" \
	"and comes at the timeout ($(((t1 - t0) / 1000000)) ms)"

ask '{"command":"sh","args":["-c","yes 0123456789 | head -c 5000000; echo; echo LAST"]}'
len=$(printf '%s' "$resp" | wc -c)
# 200 000 bytes kept; each 11-byte line's newline is 2 bytes of JSON: about 218 000.
tap_ok "$( [ "$len" -lt 225000 ] && [ "$len" -gt 200000 ]; echo $?)" \
	"5 MB of output gives a bounded response ($len bytes)"
tap_like "$resp" '\[\.\.\. [0-9]+ bytes truncated \.\.\.\]\\n.*LAST\\n","stderr":""\}$' \
	"with the marker and the real end of the output"

# Two slow requests at once take the time of one.
t0=$(date +%s%N)
for i in 1 2 3; do
	printf '{"secret":"%s","request":{"command":"sleep","args":["0.5"]}}\n' "$SECRET" |
		"$SEND" "$PORT" >"$TMP/par$i" &
done
wait_for=0
for i in 1 2 3; do
	while [ ! -s "$TMP/par$i" ] && [ $wait_for -lt 100 ]; do
		sleep 0.05
		wait_for=$((wait_for + 1))
	done
done
t1=$(date +%s%N)
tap_ok "$( [ $(((t1 - t0) / 1000000)) -lt 1400 ] && grep -q completed "$TMP/par3"; echo $?)" \
	"concurrent requests run in parallel ($(((t1 - t0) / 1000000)) ms for 3 x 0.5 s)"

# ---- shutting down --------------------------------------------------------------------------
rm -f "$TMP/child.pid"
printf '{"secret":"%s","request":{"command":"sh","args":["-c","echo $$ > %s/child.pid; exec sleep 300"]}}\n' \
	"$SECRET" "$TMP" | "$SEND" "$PORT" >/dev/null 2>&1 &
i=0
while [ ! -s "$TMP/child.pid" ] && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
child=$(cat "$TMP/child.pid" 2>/dev/null)
stop_executor
tap_is "$ex_rc" 0 "SIGTERM: the executor exits 0"
tap_ok "$( [ -n "$child" ] && ! kill -0 "$child" 2>/dev/null; echo $?)" \
	"and the running command is gone (pid ${child:-?})"
if grep -q "$SECRET" "$TMP/ex.err"; then r=1; else r=0; fi
tap_ok $r "the log never shows the secret" "$(head -c 2000 "$TMP/ex.err")"

# ---- bounds on clients: one slot, held by a client that sends nothing -----------------------
start_executor --max-connections 1 --idle-timeout-ms 500
sleep 1 | "$SEND" "$PORT" >"$TMP/idle" 2>&1 &
idle_pid=$!
# Until the idle client is connected (then it is ahead in the accept queue).
i=0
while [ $i -lt 60 ] && ! ss -tnH state established "( dport = :$PORT )" 2>/dev/null | grep -q .; do
	sleep 0.05
	i=$((i + 1))
done
t0=$(date +%s%N)
ask '{"command":"echo","args":["served"]}'
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
tap_is "$resp" '{"status":"completed","exit_code":0,"stdout":"served\n","stderr":""}' \
	"at the connection limit a new client waits, then is served"
tap_ok "$( [ "$ms" -ge 150 ] && [ "$ms" -lt 1500 ]; echo $?)" \
	"once the idle client is dropped at its timeout (${ms} ms)"
tap_like "$(cat "$TMP/ex.err")" "no complete request in time, closing" \
	"the idle client is logged and closed" "$(head -c 2000 "$TMP/ex.err")"
stop_executor
wait "$idle_pid"
tap_done
