#!/bin/sh
# A running command can be cancelled from the dashboard's API: an approved hostexec request
# and a shim call both show on GET /running, and POST /cancel/ID stops them (the hostexec
# client hears "Command cancelled by user", the shim exits with 143 after SIGTERM).
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
: "${SHIM:?run through make (SHIM is not set)}"

PLAN=9
run_needs_root $PLAN
tap_plan $PLAN

export XDG_RUNTIME_DIR="$TMP/xdg-run"
mkdir -p "$XDG_RUNTIME_DIR" "$TMP/bin" "$TMP/wt"
chmod 700 "$XDG_RUNTIME_DIR"
ln -s "$SHIM" "$TMP/bin/sleep"
write_config <<'EOF'
hostexec:
  auto_approve:
    - pattern: "^sleep 30$"
EOF
LOG=$TMP/serve.log
(cd "$TMP/wt" && exec "$SUPERVISOR" serve -v --config-dir "$CFG" --shim-socket "$TMP/shim.sock" \
	--worktree "$TMP/wt" --listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 \
	--listen-request 127.0.0.1:0 --listen-proxy off) >"$LOG" 2>&1 &
serve_pid=$!
stop_serve() {
	kill "$serve_pid" 2>/dev/null
	wait "$serve_pid" 2>/dev/null
}
on_exit stop_serve
info=""
i=0
while [ -z "$info" ] && [ $i -lt 100 ]; do
	info=$(cat "$XDG_RUNTIME_DIR"/cloister/api/*.json 2>/dev/null)
	[ -n "$info" ] || sleep 0.1
	i=$((i + 1))
done
field() { printf '%s' "$info" | sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
URL=$(field url)
TOK=$(field token)
TOKURL=$(field tokens_url)
REQURL=$(field request_url)
CTOK=cancel-test-token-0123456789
curl -s -X POST -H "Authorization: Bearer $TOK" \
	-d "{\"token\":\"$CTOK\",\"cloister\":\"box\"}" "$TOKURL/tokens" >/dev/null

# running_id KIND: the id of the running command of KIND (bounded wait).
running_id() {
	id=""
	n=0
	while [ -z "$id" ] && [ $n -lt 100 ]; do
		id=$(curl -s -H "Authorization: Bearer $TOK" "$URL/running" |
			sed -n "s/.*\"id\":\"\\([0-9a-f]*\\)\",\"kind\":\"$1\".*/\\1/p")
		[ -n "$id" ] || sleep 0.1
		n=$((n + 1))
	done
	echo "$id"
}

# ---- hostexec ----
t0=$(date +%s)
curl -s -m 40 -X POST -H "X-Cloister-Token: $CTOK" -d '{"args":["sleep","30"]}' \
	"$REQURL/request" >"$TMP/hostexec.out" &
client=$!
id=$(running_id hostexec)
tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "an auto-approved hostexec command is listed as running" \
	"$(curl -s -H "Authorization: Bearer $TOK" "$URL/running")"
resp=$(curl -s -X POST -H "Authorization: Bearer $TOK" "$URL/cancel/$id")
tap_like "$resp" '"status":"cancelled"' "POST /cancel/ID cancels it"
wait "$client"
tap_is "$(cat "$TMP/hostexec.out")" '{"status":"error","reason":"Command cancelled by user"}' \
	"the blocked client hears that it was cancelled"
tap_ok "$([ $(($(date +%s) - t0)) -lt 20 ] && echo 0 || echo 1)" "... at once, not after 30 s"
tap_like "$(curl -s -X POST -H "Authorization: Bearer $TOK" "$URL/cancel/$id")" \
	'"error"' "a second cancel is a harmless 404"

# A client that hangs up takes its command with it (an agent must not pile up host processes).
curl -s -m 1 -X POST -H "X-Cloister-Token: $CTOK" -d '{"args":["sleep","30"]}' \
	"$REQURL/request" >/dev/null 2>&1
n=0
while [ "$(curl -s -H "Authorization: Bearer $TOK" "$URL/running")" != '{"running":[]}' ] && [ $n -lt 50 ]; do
	sleep 0.1
	n=$((n + 1))
done
tap_is "$(curl -s -H "Authorization: Bearer $TOK" "$URL/running")" '{"running":[]}' \
	"a hostexec client that hangs up stops its command"

# ---- a shim call ----
(cd "$TMP/wt" && CLOISTER_SOCKET=$TMP/shim.sock timeout -k 2 40 "$TMP/bin/sleep" 30 \
	>/dev/null 2>"$TMP/shim.err"
	echo $? >"$TMP/shim.rc") &
shim=$!
id=$(running_id shim)
tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "a shim call that runs is listed too"
curl -s -X POST -H "Authorization: Bearer $TOK" "$URL/cancel/$id" >/dev/null
wait "$shim"
tap_is "$(cat "$TMP/shim.rc")" 143 "cancelled: the shim exits 143 (SIGTERM)" "$(cat "$TMP/shim.err")"
tap_is "$(curl -s -H "Authorization: Bearer $TOK" "$URL/running")" '{"running":[]}' "nothing is left running"
tap_done
