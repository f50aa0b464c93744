#!/bin/sh
# The CLI client against a real `run --ask web`: pending, status, approve, deny --reason, kill;
# its exit codes (0 done, 1 refused or unknown, 64 usage, 69 no supervisor). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 39
tap_plan 39

alive() { kill -0 "$1" 2>/dev/null; }
wait_gone() { # PID SECONDS
	i=0
	while alive "$1" && [ $i -lt $(($2 * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	! alive "$1"
}
# cli ARGS: run the client; output (stdout and stderr) in $out, status in $st.
cli() {
	out=$(timeout 20 "$SUPERVISOR" "$@" 2>&1)
	st=$?
}
# wait_pending TEXT: poll `pending` for a line with TEXT (5 s); its id in $id.
wait_pending() {
	id=
	i=0
	while [ -z "$id" ] && [ $i -lt 100 ]; do
		cli pending
		id=$(printf '%s\n' "$out" | grep -F -- "$1" | awk '{ print $1 }' | head -n 1)
		[ -n "$id" ] || sleep 0.05
		i=$((i + 1))
	done
}

# ---- no supervisor ----
XDG_RUNTIME_DIR=$TMP/empty
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
cli pending
tap_is "$st" 69 "pending with no supervisor running: 69"
tap_like "$out" 'no running supervisor found' "and says so"
cli status
tap_is "$st" 69 "status with no supervisor: 69"
cli approve 0123456789ab
tap_is "$st" 69 "approve with no supervisor: 69"
cli kill somebody
tap_is "$st" 69 "kill with no supervisor: 69"
cli pending --url http://127.0.0.1:1
tap_is "$st" 69 "--url to a port nobody listens on: 69"

# ---- usage ----
cli approve
tap_is "$st" 64 "approve without an id: 64"
cli approve 'not-an-id!'
tap_is "$st" 64 "approve with something that is not an id: 64"
cli approve 0123456789ab --reason x
tap_is "$st" 64 "--reason is only for deny: 64"
cli pending extra
tap_is "$st" 64 "pending takes no argument: 64"

# ---- a supervisor ----
write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
  defaults: false
EOF
# The agent: at $TMP/go runs /usr/bin/id (an ask), at $TMP/go2 /usr/bin/nproc (an ask, with an
# argument that would retitle the terminal and send a C1 CSI), then sleeps until killed.
# shellcheck disable=SC2016 # the agent's script expands its own $1
"$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 30s --name webcli \
	--listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0 \
	-- sh -c 'while [ ! -e "$1/go" ]; do sleep 0.05; done
		/usr/bin/id -u >"$1/id.out" 2>&1; echo "status $?" >>"$1/id.out"
		while [ ! -e "$1/go2" ]; do sleep 0.05; done
		/usr/bin/nproc "$(printf "\\033]0;pwned\\007\\302\\233")" >"$1/nproc.out" 2>&1
		echo "status $?" >>"$1/nproc.out"
		while :; do sleep 0.05; done' sh "$TMP" \
	</dev/null >"$OUT" 2>"$ERR" &
SV=$!
stop_sv() {
	alive "$SV" || return 0
	kill -TERM "$SV" 2>/dev/null
	wait_gone "$SV" 5 || kill -KILL "$SV" 2>/dev/null
}
on_exit 'stop_sv'
INFO=$XDG_RUNTIME_DIR/cloister/api/$SV.json
i=0
while [ ! -s "$INFO" ] && alive "$SV" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_ok "$([ -s "$INFO" ] && echo 0 || echo 1)" "the supervisor announced itself" "$(diag)"

cli pending
tap_is "$st:$out" "0:no pending requests" "pending with nothing waiting: 0"
cli status
tap_is "$st" 0 "status: 0"
tap_like "$out" "^supervisor pid $SV at http://127\.0\.0\.1:[0-9]+/: 0 pending" "status names the supervisor" "$out"
tap_like "$out" 'sandbox webcli +running +pid [0-9]+ +since [0-9]{4}-' "and its sandbox, running" "$out"
cli status --json
tap_like "$out" '"name":[[:space:]]*"webcli"' "status --json has the sandbox" "$out"

touch "$TMP/go"
wait_pending 'id -u'
ID=$id
tap_like "$ID" '^[0-9a-f]{12}$' "pending lists the agent's ask with its id" "$out"
tap_like "$(printf '%s\n' "$out" | grep -F "$ID")" "^$ID +exec +webcli +[0-9]+m[0-9]{2}s +id -u\$" \
	"as: id, kind, sandbox, time left, command" "$out"
cli pending --json
tap_like "$out" "\"id\":[[:space:]]*\"$ID\"" "pending --json has it" "$out"
cli approve "$ID"
tap_is "$st:$out" "0:approved $ID" "approve ID: 0"
i=0
while ! grep -q '^status' "$TMP/id.out" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_is "$(cat "$TMP/id.out" 2>/dev/null)" "0
status 0" "the approved command runs"
cli approve "$ID"
tap_is "$st" 1 "approving it again: 1 (already decided)"
tap_like "$out" 'already decided' "and says so" "$out"
cli approve 0123456789ab
tap_is "$st" 1 "approve of an unknown id: 1"
tap_like "$out" 'no pending request 0123456789ab' "and says so" "$out"

touch "$TMP/go2"
wait_pending 'nproc'
ID2=$id
# The agent's text reaches the user's terminal escaped.
tap_like "$(printf '%s\n' "$out" | grep -F "$ID2")" "nproc '\\\\x1b\\]0;pwned\\\\x07\\\\u\\{009b\\}'\$" \
	"pending shows the agent's control characters escaped" "$out"
tap_ok "$(printf '%s' "$out" | LC_ALL=C grep -c "$(printf '[\033\007]')")" "... and prints none of them" "$out"
cli pending --json
tap_ok "$(printf '%s' "$out" | LC_ALL=C grep -c "$(printf '\302\233')")" \
	"pending --json prints no C1 control (\\u009b instead)" "$out"
cli deny "$ID2" --reason "not now"
tap_is "$st:$out" "0:denied $ID2" "deny ID --reason: 0"
i=0
while ! grep -q '^status' "$TMP/nproc.out" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_like "$(cat "$TMP/nproc.out" 2>/dev/null)" 'status 126' "the denied command fails in the agent (126)"
tap_is "$(audit_count "\"id\":\"$ID2\".*\"reason\":\"not now\"")" 1 "the audit log has the reason"
cli deny "$ID2"
tap_is "$st" 1 "deny of a decided id: 1"

# --url with the token in the environment, as documented; a wrong token is refused.
URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$INFO")
TOKEN=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$INFO")
out=$(CLOISTER_API_TOKEN=wrong-token-0123456789 timeout 20 "$SUPERVISOR" kill webcli --url "$URL" 2>&1)
tap_is "$?" 1 "kill with a wrong API token: refused (1)"
tap_ok "$(alive "$SV" && echo 0 || echo 1)" "and the supervisor still runs" "$out"

cli kill nobody
tap_is "$st" 1 "kill of an unknown sandbox: 1"
out=$(CLOISTER_API_TOKEN=$TOKEN timeout 20 "$SUPERVISOR" kill webcli --url "$URL" 2>&1)
tap_is "$?:$out" "0:webcli: killed" "kill NAME: 0"
wait_gone "$SV" 10
tap_ok "$?" "the agent dies and run exits" "$(diag)"
tap_ok "$([ ! -e "$INFO" ] && echo 0 || echo 1)" "its API info file is removed"
cli status
tap_is "$st" 69 "afterwards no supervisor is found: 69"
tap_done
