#!/bin/sh
# `cloister-supervisor run --ask web` driven over HTTP with curl, as a hostexec client, the CLI's
# token registration and a dashboard would: the API info file, every read needing the API token
# (401 without it, 200 with the Bearer header or the dashboard's cookie; the page and its files
# public), the token API (register, list, revoke), POST /request auto-approved, approved
# through POST /approve, denied through POST /deny with a reason, timed out (request.timeout
# from the config), refused by the policy; the SSE stream sees request-added then
# request-removed for the same id; an exec ask of the agent shows in /pending and is approved
# with `cloister-supervisor approve`. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 94
tap_plan 98

# Our own runtime directory: the CLI client finds this supervisor and no other.
XDG_RUNTIME_DIR=$TMP/xdg
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"

write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
  defaults: false
request:
  timeout: 2s
hostexec:
  auto_approve:
    - pattern: "^echo hello$"
  manual_approve:
    - pattern: "^printf .*$"
EOF

# req METHOD URL [CURL ARGS]: the status in $code, the body in $body.
req() {
	m=$1
	u=$2
	shift 2
	code=$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 -X "$m" "$@" "$u")
	body=$(cat "$TMP/body")
}
# field KEY [TEXT]: the (last) string value of KEY in TEXT (default $body).
field() { printf '%s' "${2-$body}" | sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p'; }
# pending_id PATH TEXT: the id of the first item of GET PATH whose JSON contains TEXT, or "".
pending_id() {
	req GET "$URL$1" -H "Authorization: Bearer $TOKEN"
	printf '%s' "$body" | sed 's/},{/}\n{/g' | grep -F -- "$2" |
		grep -o '"id":"[0-9a-f]*"' | head -n 1 | cut -d'"' -f4
}
# item_of PATH ID: the JSON of that item of GET PATH ($body is the whole answer).
item_of() {
	req GET "$URL$1" -H "Authorization: Bearer $TOKEN"
	printf '%s' "$body" | sed 's/},{/}\n{/g' | grep -F "\"id\":\"$2\""
}
# wait_id PATH TEXT: poll for it (5 s); the id in $id.
wait_id() {
	id=
	i=0
	while [ -z "$id" ] && [ $i -lt 100 ]; do
		id=$(pending_id "$1" "$2")
		[ -n "$id" ] || sleep 0.05
		i=$((i + 1))
	done
}
# hostexec ARGS_JSON OUTFILE: POST /request with the registered token, blocking.
hostexec() {
	curl -s --max-time 20 -X POST -H "X-Cloister-Token: $CT" -H 'Content-Type: application/json' \
		-d "{\"cmd\":\"ignored\",\"args\":$1}" "$RURL/request" >"$2"
}
alive() { kill -0 "$1" 2>/dev/null; }
wait_gone() { # PID SECONDS
	i=0
	while alive "$1" && [ $i -lt $(($2 * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	! alive "$1"
}

# The agent waits for $TMP/go, runs /usr/bin/id (an ask), then waits for $TMP/stop.
# It runs in $TMP, its project: the rest of the file system is read-only to it.
# shellcheck disable=SC2016 # the agent's script expands its own $1
(cd "$TMP" && exec "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 20s --name webapi \
	--listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0 \
	-- sh -c 'while [ ! -e "$1/go" ]; do sleep 0.05; done
		/usr/bin/id -u >"$1/id.out" 2>&1; echo "status $?" >>"$1/id.out"
		while [ ! -e "$1/stop" ]; do sleep 0.05; done' sh "$TMP" \
	) </dev/null >"$OUT" 2>"$ERR" &
SV=$!
stop_sv() {
	touch "$TMP/stop"
	wait_gone "$SV" 10 || { kill -TERM "$SV" 2>/dev/null; wait_gone "$SV" 5 || kill -KILL "$SV" 2>/dev/null; }
}
on_exit 'stop_sv'

INFO=$XDG_RUNTIME_DIR/cloister/api/$SV.json
i=0
while [ ! -s "$INFO" ] && alive "$SV" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_ok "$([ -s "$INFO" ] && echo 0 || echo 1)" "the API info file is written as \$XDG_RUNTIME_DIR/cloister/api/PID.json" "$(diag)"
tap_is "$(stat -c %a "$INFO" 2>/dev/null)" 600 "the API info file is private (0600)"
info=$(cat "$INFO" 2>/dev/null)
URL=$(field url "$info")
TURL=$(field tokens_url "$info")
RURL=$(field request_url "$info")
TOKEN=$(field token "$info")
tap_like "$URL $TURL $RURL" '^http://127\.0\.0\.1:[0-9]+ http://127\.0\.0\.1:[0-9]+ http://127\.0\.0\.1:[0-9]+$' \
	"it names the three servers on loopback, on free ports" "$info"
tap_like "$TOKEN" '^[0-9a-f]{32,}$' "it holds the per-run API token"

req GET "$URL/status" -H "Authorization: Bearer $TOKEN"
tap_is "$code $(field status)" "200 ok" "GET /status answers" "$body"

# ---- every read needs the API token: the agent's argv is nobody else's business ----
# (deliberately stricter than guardian-api.md, whose GETs are open to any local user)
for p in /pending /pending-domains /decisions /running /status /sandboxes /metrics /events \
	/logs '/logs?cloister=webapi'; do
	code=$(curl -s -o "$TMP/body" -D "$TMP/head" -w '%{http_code}' -m 2 "$URL$p")
	tap_like "$code $(cat "$TMP/body")" '^401 \{"error":"missing or wrong API token' \
		"GET $p without the token: 401 with a JSON error" "$(cat "$TMP/body")"
	code=$(curl -s -o /dev/null -w '%{http_code}' -m 1 -H "Authorization: Bearer $TOKEN" "$URL$p")
	tap_is "$code" 200 "GET $p with the Bearer token (the CLI): 200"
	code=$(curl -s -o /dev/null -w '%{http_code}' -m 1 -H "Cookie: cloister_token=$TOKEN" "$URL$p")
	tap_is "$code" 200 "GET $p with the dashboard's session cookie: 200"
done
tap_like "$(cat "$TMP/head")" 'WWW-Authenticate: Bearer' "a 401 names the scheme (WWW-Authenticate)"
# Another local user (nobody): no token to be had, so nothing to read.
if command -v setpriv >/dev/null 2>&1; then
	code=$(setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null \
		-w '%{http_code}' "$URL/pending")
	tap_is "$code" 401 "another local user (nobody) gets 401 from GET /pending"
	tap_ok "$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$INFO" >/dev/null 2>&1 &&
		echo 1 || echo 0)" "... and cannot read the API file's token"
else
	tap_skip "another local user gets 401" "setpriv is not installed"
	tap_skip "another local user cannot read the API file" "setpriv is not installed"
fi
for p in / /static/app.js /static/util.js /static/style.css; do
	code=$(curl -s -o /dev/null -w '%{http_code}' "$URL$p")
	tap_is "$code" 200 "GET $p (the page and its files) needs no token"
done
code=$(curl -s -o /dev/null -D "$TMP/head" -w '%{http_code}' "$URL/?token=$TOKEN")
tap_like "$code $(grep -i '^Set-Cookie:' "$TMP/head")" '^303 Set-Cookie: cloister_token=' \
	"the login link sets the session cookie"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/?token=0123456789abcdef0123456789abcdef")
tap_is "$code" 401 "a wrong login link: 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$RURL/nothing")
tap_is "$code" 401 "the request server answers nothing without a cloister token (401)"

# ---- safety ----
req GET "$URL/pending" -H 'Host: evil.com'
tap_is "$code" 403 "a Host that is not loopback gets 403 (DNS rebinding)"
req POST "$URL/approve/0123456789ab" -H 'Origin: http://evil.com' -H "Authorization: Bearer $TOKEN"
tap_is "$code" 403 "a foreign Origin gets 403 (CSRF), even with the token"
req POST "$URL/approve/0123456789ab"
tap_is "$code" 401 "a state change without the API token gets 401"
req POST "$URL/approve/0123456789ab" -H "Authorization: Bearer $TOKEN"
tap_is "$code $(field error)" "404 request not found" "with the API token: an unknown id is 404"

# ---- token API ----
CT=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
req GET "$TURL/tokens"
tap_is "$code" 401 "the token list needs the API token"
# The worktree is a git checkout (of branch feature-x): /pending names the branch.
mkdir -p "$TMP/.git"
echo 'ref: refs/heads/feature-x' >"$TMP/.git/HEAD"
req POST "$TURL/tokens" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
	-d "{\"token\":\"$CT\",\"cloister\":\"webapi-ext\",\"project\":\"proj\",\"worktree\":\"$TMP\"}"
tap_is "$code $body" '201 {"status":"registered"}' "POST /tokens registers a cloister token"
req POST "$TURL/tokens" -H "Authorization: Bearer $TOKEN" -d '{"token":"short","cloister":"x"}'
tap_is "$code" 400 "an invalid token is refused with 400"
req GET "$TURL/tokens" -H "Authorization: Bearer $TOKEN"
tap_like "$body" "\{\"token\":\"$CT\",\"cloister\":\"webapi-ext\",\"project\":\"proj\",\"worktree\":\"$TMP\"\}" \
	"GET /tokens lists it with its fields"

# ---- the event stream, watched for the rest of the test ----
curl -s -N --max-time 60 -H 'Accept: text/event-stream' -H "Authorization: Bearer $TOKEN" \
	"$URL/events" >"$TMP/sse" 2>/dev/null &
SSE=$!
on_exit "kill $SSE 2>/dev/null"
i=0
while ! grep -q '^retry:' "$TMP/sse" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_ok "$(grep -q '^retry:' "$TMP/sse" && echo 0 || echo 1)" "GET /events starts with a retry: field"

# ---- POST /request ----
hostexec '["echo","hello"]' "$TMP/auto"
auto=$(cat "$TMP/auto")
# The executor may not be wired into `run` yet: then an auto-approval answers
# {"status":"error","reason":"command execution not configured"}.
if printf '%s' "$auto" | grep -q '"stdout"'; then
	tap_is "$(field status "$auto")|$(field pattern "$auto")" "auto_approved|^echo hello\$" \
		"an auto_approve match runs at once: status auto_approved and the pattern" "$auto"
	tap_like "$auto" '"exit_code":0,"stdout":"hello\\n","stderr":""' "with the command's output"
else
	tap_is "$auto" '{"status":"error","reason":"command execution not configured"}' \
		"an auto_approve match is accepted (no executor configured in run yet)"
	tap_skip "auto_approved output" "run does not configure command execution yet"
fi

hostexec '["rm","-rf","/"]' "$TMP/nomatch"
tap_is "$(cat "$TMP/nomatch")" '{"status":"denied","reason":"Command doesn'"'"'t match allowlist"}' \
	"no pattern matches: denied at once"

# Every verdict of the policy is one audit line, as for execs: the auto-approval with its
# rule, the refusal with its reason. Automatic lines may wait in memory for --audit-delay (20
# ms), in order: the later one in the file means both are.
wait_until 10 grep -qF '"summary":"rm -rf /"' "$AUDIT"
line=$(grep -F '"summary":"echo hello"' "$AUDIT" | grep -F '"kind":"hostexec"')
tap_like "$line" '"sandbox":"webapi-ext","project":"proj",.*"argv":\["echo","hello"\],.*"verdict":"allow","rule":"hostexec.auto_approve\[0\].*"decided_by":"policy"' \
	"the auto-approved request is one audit line: kind hostexec, verdict allow, its rule" "$line"
tap_is "$(printf '%s\n' "$line" | grep -c .)" 1 "... one line, not more"
line=$(grep -F '"summary":"rm -rf /"' "$AUDIT")
tap_like "$line" '"kind":"hostexec",.*"verdict":"deny",.*"decided_by":"policy"' \
	"the refused request is one audit line: verdict deny" "$line"
tap_is "$(printf '%s\n' "$line" | grep -c .)" 1 "... one line, not more"

hostexec '["printf","%s","x y"]' "$TMP/approved" &
bg1=$!
wait_id /pending '"cmd":"printf '"'"'%s'"'"' '"'"'x y'"'"'"'
APPROVE_ID=$id
tap_like "$APPROVE_ID" '^[0-9a-f]{12}$' "a manual_approve match waits in /pending, with its canonical cmd" "$body"
item=$(item_of /pending "$APPROVE_ID")
tap_like "$item" '"cloister":"webapi-ext","project":"proj",.*"kind":"hostexec"' \
	"the item names the token's cloister and project, kind hostexec" "$item"
tap_like "$item" '"branch":"feature-x","agent":""' "... and the branch checked out in its worktree" \
	"$item"
tap_like "$item" '"args":\["printf","%s","x y"\]' "the item carries the args" "$item"
req POST "$URL/approve/$APPROVE_ID" -H "Authorization: Bearer $TOKEN"
tap_is "$code $body" "200 {\"status\":\"approved\",\"id\":\"$APPROVE_ID\"}" "POST /approve/ID approves it"
wait $bg1
approved=$(cat "$TMP/approved")
if printf '%s' "$approved" | grep -q '"stdout"'; then
	tap_is "$approved" '{"status":"approved","exit_code":0,"stdout":"x y","stderr":""}' \
		"the blocked request gets status approved and the output" "$approved"
else
	tap_is "$approved" '{"status":"error","reason":"command execution not configured"}' \
		"the blocked request is answered once approved (no executor configured in run yet)"
fi
req POST "$URL/deny/$APPROVE_ID" -H "Authorization: Bearer $TOKEN"
tap_is "$code $(field status)" "409 approved" "a second decision on it is 409 and changes nothing"

hostexec '["printf","deny-me"]' "$TMP/denied" &
bg2=$!
wait_id /pending 'printf deny-me'
DENY_ID=$id
req POST "$URL/deny/$DENY_ID" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
	-d '{"reason":"not today"}'
tap_is "$code $body" "200 {\"status\":\"denied\",\"id\":\"$DENY_ID\"}" "POST /deny/ID with a reason"
wait $bg2
tap_is "$(cat "$TMP/denied")" '{"status":"denied","reason":"not today"}' \
	"the blocked request gets status denied and the reason"

start=$(date +%s)
hostexec '["printf","slow"]' "$TMP/timeout" &
bg3=$!
wait_id /pending 'printf slow'
TIMEOUT_ID=$id
tap_like "$TIMEOUT_ID" '^[0-9a-f]{12}$' "an undecided request waits in /pending"
wait $bg3
elapsed=$(($(date +%s) - start))
tap_is "$(cat "$TMP/timeout")" '{"status":"timeout","reason":"No approval within 2s"}' \
	"undecided, it times out after request.timeout (2s)"
tap_ok "$([ "$elapsed" -ge 2 ] && [ "$elapsed" -le 6 ] && echo 0 || echo 1)" \
	"after about 2 seconds" "elapsed: $elapsed s"
req GET "$URL/pending" -H "Authorization: Bearer $TOKEN"
tap_is "$body" '{"requests":[]}' "nothing is left pending"

# ---- bad requests ----
req POST "$RURL/request" -H "X-Cloister-Token: $CT" -d '{"args":["echo","a\u0000b"]}'
tap_like "$code $body" '^400 \{"error":".*NUL' "a NUL in args is 400"
req POST "$RURL/request" -H "X-Cloister-Token: $CT" -d '{"args":'
tap_like "$code $body" '^400 \{"error":"invalid JSON' "malformed JSON is 400 with an error"
req POST "$RURL/request" -H "X-Cloister-Token: $CT" -d '{"cmd":"echo hello"}'
tap_is "$code" 400 "a request without args is 400 (cmd alone is not enough)"
head -c 1100000 /dev/zero | tr '\0' ' ' >"$TMP/big"
req POST "$RURL/request" -H "X-Cloister-Token: $CT" --data-binary @"$TMP/big"
tap_is "$code" 413 "a body over 1 MiB is 413"
# Announced, not sent: refused from the headers alone (without the fix the server waits).
code=$(curl -s -m 3 -o /dev/null -w '%{http_code}' -H "X-Cloister-Token: $CT" -H 'Expect:' \
	-H 'Content-Length: 5000000000' --data-binary @/dev/null "$RURL/request")
tap_is "$code" 413 "a Content-Length over 1 MiB is 413 at once, before any of the body"
req POST "$RURL/request" -H "X-Cloister-Token: $CT" -H 'Origin: http://127.0.0.1' -d '{"args":["echo","hello"]}'
tap_is "$code" 403 "a browser (any Origin) gets 403 from the request server"

# ---- revoke ----
req DELETE "$TURL/tokens/$CT" -H "Authorization: Bearer $TOKEN"
tap_is "$code $body" '200 {"status":"revoked"}' "DELETE /tokens/TOKEN revokes it"
req DELETE "$TURL/tokens/$CT" -H "Authorization: Bearer $TOKEN"
tap_is "$code $body" '404 {"error":"token not found"}' "a second DELETE is 404"
req POST "$RURL/request" -H "X-Cloister-Token: $CT" -d '{"args":["echo","hello"]}'
tap_is "$code" 401 "the revoked token gets 401"

# ---- an exec ask of the agent, approved with the CLI ----
touch "$TMP/go"
wait_id /pending '"exe":"/usr/bin/id"'
EXEC_ID=$id
item=$(item_of /pending "$EXEC_ID")
tap_like "$item" '"cloister":"webapi",.*"cmd":"id -u",.*"kind":"exec","pid":[0-9]+' \
	"the agent's exec ask is in /pending: kind exec, cmd, pid" "$item"
tap_like "$item" '"agent":"sh"' "... with the agent's name (run's command)" "$item"
out=$("$SUPERVISOR" approve "$EXEC_ID" 2>&1)
tap_is "$?:$out" "0:approved $EXEC_ID" "cloister-supervisor approve ID approves it"
out=$("$SUPERVISOR" status 2>&1)
tap_like "$?:$out" "^0:supervisor pid $SV at $URL/" "cloister-supervisor status reads with the API file's token"
out=$(CLOISTER_API_TOKEN='' "$SUPERVISOR" pending --url "$URL" 2>&1)
tap_like "$?:$(printf '%s' "$out" | tr '\n' ' ')" '^1:.*HTTP 401.*CLOISTER_API_TOKEN' \
	"... and without a token it is refused, and says why"
out=$(CLOISTER_API_TOKEN=$TOKEN "$SUPERVISOR" pending --url "$URL" 2>&1)
tap_is "$?:$out" "0:no pending requests" "... with \$CLOISTER_API_TOKEN it reads"
i=0
while ! grep -q '^status' "$TMP/id.out" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_is "$(cat "$TMP/id.out" 2>/dev/null)" "0
status 0" "the agent's command then runs"

# ---- the SSE stream, in order ----
wait_until 5 grep -q "data: {\"id\":\"$EXEC_ID\",.*\"status\":\"approved\"" "$TMP/sse"
sse=$(cat "$TMP/sse")
added=$(printf '%s\n' "$sse" | grep -n "^data: {\"id\":\"$APPROVE_ID\"" | head -n 1 | cut -d: -f1)
removed=$(printf '%s\n' "$sse" | grep -n "^data: {\"id\":\"$APPROVE_ID\".*\"status\":\"approved\"" | head -n 1 | cut -d: -f1)
tap_ok "$([ -n "$added" ] && [ -n "$removed" ] && [ "$added" -lt "$removed" ] && echo 0 || echo 1)" \
	"SSE: request-added, then request-removed (approved) for the same id" "$sse"
prev_event=$(printf '%s\n' "$sse" | sed -n "$((added - 1))p")
tap_is "$prev_event" "event: request-added" "the first is a request-added event"
prev_event=$(printf '%s\n' "$sse" | sed -n "$((removed - 1))p")
tap_is "$prev_event" "event: request-removed" "the second a request-removed event"
tap_like "$sse" "data: \{\"id\":\"$TIMEOUT_ID\",.*\"status\":\"timed_out\"" "SSE: the timeout is a request-removed too"
tap_like "$sse" "data: \{\"id\":\"$EXEC_ID\",.*\"status\":\"approved\",.*\"decided_by\":\"cli\"" \
	"SSE: the exec approval, decided by the CLI"

# ---- the end ----
touch "$TMP/stop"
wait_gone "$SV" 10
tap_ok "$? " "the supervisor exits once the agent does"
wait "$SV"
tap_is "$?" 0 "run exits 0"
tap_ok "$([ ! -e "$INFO" ] && echo 0 || echo 1)" "the API info file is removed"
tap_done
