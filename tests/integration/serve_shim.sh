#!/bin/sh
# `cloister-supervisor serve`: shim calls decided by the hostexec patterns through the one
# queue, asks answered with the CLI client, the dashboard API up, a clean SIGTERM exit.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
: "${SHIM:?run through make (SHIM is not set)}"

PLAN=14
run_needs_root $PLAN
tap_plan $PLAN

BIN=$TMP/bin
WT=$TMP/wt
CFG=$TMP/cfg
SOCK=$TMP/shim.sock
LOG=$TMP/serve.log
export XDG_RUNTIME_DIR="$TMP/run"
mkdir -p "$BIN" "$WT" "$CFG" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
for t in echo printf true; do
	ln -s "$SHIM" "$BIN/$t"
done
cat >"$CFG/config.yaml" <<'YAML'
hostexec:
  auto_approve:
    - pattern: "^echo auto$"
  manual_approve:
    - pattern: "^echo ask( .*)?$"
YAML

serve_pid=""
stop_serve() {
	if [ -n "$serve_pid" ]; then
		kill "$serve_pid" 2>/dev/null
		wait "$serve_pid" 2>/dev/null
		serve_pid=""
	fi
}
on_exit 'stop_serve'
(cd "$WT" && exec "$SUPERVISOR" serve -v --config-dir "$CFG" --shim-socket "$SOCK" \
	--worktree "$WT" --listen-approval 127.0.0.1:0 --listen-tokens off \
	--listen-request off --ask-timeout 3s) >"$LOG" 2>&1 &
serve_pid=$!
i=0
while ! grep -q 'shims: unix socket' "$LOG" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_ok "$([ -S "$SOCK" ] && echo 0 || echo 1)" "serve listens for shims" "$(cat "$LOG")"

shimmed() { # TOOL ARGS…
	tool=$1
	shift
	(cd "$WT" && CLOISTER_SOCKET=$SOCK timeout -k 2 20 "$BIN/$tool" "$@") >"$OUT" 2>"$ERR"
	rc=$?
}

shimmed echo auto
tap_is "$rc $(cat "$OUT")" "0 auto" "an auto-approved call runs and its output comes back"

shimmed printf 'x'
tap_is "$rc" 126 "a call no pattern matches is denied (126)" "$(cat "$ERR")"
tap_like "$(cat "$ERR")" "doesn't match" "the denial says why"

# An ask: it waits in the queue; the CLI client sees it and approves it.
(cd "$WT" && CLOISTER_SOCKET=$SOCK timeout -k 2 20 "$BIN/echo" ask one >"$TMP/ask.out" \
	2>"$TMP/ask.err"
	echo $? >"$TMP/ask.rc") &
ask_pid=$!
id=""
i=0
while [ -z "$id" ] && [ $i -lt 100 ]; do
	id=$("$SUPERVISOR" pending 2>/dev/null | awk '$2 == "shim" { print $1; exit }')
	[ -n "$id" ] || sleep 0.05
	i=$((i + 1))
done
tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "the ask shows in \`pending\` as a shim request"
# The shim says it waits after a second of "pending".
wait_until 10 grep -q "waiting for approval" "$TMP/ask.err"
"$SUPERVISOR" approve "$id" >/dev/null
wait "$ask_pid"
tap_is "$(cat "$TMP/ask.rc") $(cat "$TMP/ask.out")" "0 ask one" \
	"approved with the CLI: the call runs" "$(cat "$TMP/ask.err")"
tap_like "$(cat "$TMP/ask.err")" "waiting for approval" "the shim said it waits for approval"

# Denied by a person, with a reason.
(cd "$WT" && CLOISTER_SOCKET=$SOCK timeout -k 2 20 "$BIN/echo" ask two >"$TMP/ask.out" \
	2>"$TMP/ask.err"
	echo $? >"$TMP/ask.rc") &
ask_pid=$!
id=""
i=0
while [ -z "$id" ] && [ $i -lt 100 ]; do
	id=$("$SUPERVISOR" pending 2>/dev/null | awk '$2 == "shim" { print $1; exit }')
	[ -n "$id" ] || sleep 0.05
	i=$((i + 1))
done
"$SUPERVISOR" deny "$id" --reason "not today" >/dev/null
wait "$ask_pid"
tap_is "$(cat "$TMP/ask.rc")" 126 "denied with the CLI: the call fails (126)"
tap_like "$(cat "$TMP/ask.err")" "not today" "the shim shows the person's reason"

# Nobody answers: the ask times out (--ask-timeout 3s) and the call is denied.
shimmed echo ask three
tap_is "$rc" 126 "an unanswered ask times out and the call is denied"

# The audit log has the calls.
audit=$(cat "$XDG_STATE_HOME/cloister/audit.log" 2>/dev/null || cat "$HOME/.local/share/cloister/audit.log" 2>/dev/null)
tap_like "$audit" '"kind":"shim".*"decided_by":"cli"' "the audit log has the shim decisions by the CLI"

"$SUPERVISOR" status >"$OUT" 2>&1
tap_like "$(cat "$OUT")" 'sandbox serve' "\`status\` lists the serve daemon"

kill -TERM "$serve_pid"
wait "$serve_pid"
status=$?
serve_pid=""
tap_is "$status" 0 "SIGTERM: serve exits 0"
tap_ok "$([ ! -e "$SOCK" ] && echo 0 || echo 1)" "and removes its socket"
tap_done
