#!/bin/sh
# The CLI client with two supervisors whose sandboxes have the same name: `pending` shows each
# ask's executable, directory and argv; `show ID`; `kill NAME` refuses the ambiguous name and
# lists the supervisors, `--supervisor PID` chooses. The API files: one naming a server that is
# not the supervisor (a squatter on the port, or a supervisor of another network namespace
# answering for a copy) gets neither the token nor a second listing; a dead one is removed; a
# stale one (its token refused: 401) does not stop kill/pause/resume/approve before the
# supervisor that has the sandbox or the ask.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 31
run_needs_tools 31 python3 curl setpriv
tap_plan 31

alive() { kill -0 "$1" 2>/dev/null; }
wait_gone() { # PID SECONDS
	i=0
	while alive "$1" && [ $i -lt $(($2 * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	! alive "$1"
}
cli() {
	out=$(timeout 20 "$SUPERVISOR" "$@" 2>&1)
	st=$?
}

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
DIR=$XDG_RUNTIME_DIR/cloister/api
WORK=$TMP/work
mkdir -p "$WORK"

write_config <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
EOF

PIDS=""
# start NAME SCRIPT: a supervisor in the background; its pid in $sv.
start() {
	(cd "$WORK" && exec "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 60s \
		--name "$1" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- sh -c "$2" sh "$WORK") </dev/null >>"$OUT" 2>>"$ERR" &
	sv=$!
	PIDS="$PIDS $sv"
	i=0
	while [ ! -s "$DIR/$sv.json" ] && alive "$sv" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
stop_all() {
	for p in $PIDS; do
		alive "$p" || continue
		kill -TERM "$p" 2>/dev/null
		wait_gone "$p" 5 || kill -KILL "$p" 2>/dev/null
	done
}
on_exit 'stop_all'

# shellcheck disable=SC2016 # the agent's script expands its own $1
start twin 'while [ ! -e "$1/go" ]; do sleep 0.05; done
	/usr/bin/id -u "a b" >"$1/id.out" 2>&1
	while :; do sleep 0.05; done'
A=$sv
start twin 'while :; do sleep 0.05; done'
B=$sv
tap_ok "$([ -s "$DIR/$A.json" ] && [ -s "$DIR/$B.json" ] && echo 0 || echo 1)" \
	"two supervisors, both sandboxes named twin, announced themselves" "$(diag)"

touch "$WORK/go"
id=
i=0
while [ -z "$id" ] && [ $i -lt 100 ]; do
	cli pending
	id=$(printf '%s\n' "$out" | awk '$2 == "exec" && /id -u/ { print $1 }' | head -n 1)
	[ -n "$id" ] || sleep 0.05
	i=$((i + 1))
done
tap_like "$id" '^[0-9a-f]{12}$' "pending lists the ask" "$out"
tap_like "$out" "executable +/usr/bin/id" "pending shows the executable" "$out"
tap_like "$out" "directory +$WORK" "pending shows the directory" "$out"
tap_like "$out" "argv +/usr/bin/id -u 'a b'\$" "pending shows the argv, quoted as a shell would" "$out"

cli show "$id"
tap_is "$st" 0 "show ID: 0"
tap_like "$out" "^command +id -u 'a b'\$" "show names the command" "$out"
tap_like "$out" "^executable +/usr/bin/id\$" "show names the executable" "$out"
tap_like "$out" "^supervisor +pid $A at http://127\.0\.0\.1:[0-9]+\$" "show names the supervisor" "$out"
cli show "$id" --json
tap_like "$out" "\"exe\":[[:space:]]*\"/usr/bin/id\"" "show --json" "$out"
cli show 0123456789ab
tap_is "$st" 1 "show of an unknown id: 1"

# ---- API files that do not belong to the server they name ----
URL_A_SELF=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$DIR/$A.json")
# A live process that is not a supervisor, with a copy of A's file (another nonce): as a
# supervisor in another network namespace whose port here is A's.
sleep 300 &
SQ=$!
on_exit "kill $SQ 2>/dev/null"
sed -e "s/\"pid\":$A/\"pid\":$SQ/" -e 's/"nonce":"[0-9a-f]*"/"nonce":"'"$(printf '%064d' 7)"'"/' \
	-e 's/,"start":[0-9]*//' "$DIR/$A.json" >"$DIR/$SQ.json"
chmod 0600 "$DIR/$SQ.json"
cli pending
tap_is "$(printf '%s\n' "$out" | grep -c "^$id ")" 1 "a copied file naming A's port: the ask is listed once" "$out"
tap_like "$out" "ignoring the API file of pid $SQ" "and the CLI says which file it ignored" "$out"

# A squatter on a port an API file names: it answers anything, and logs what it gets.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/squat.py" <<'EOF'
import http.server, sys
log = open(sys.argv[2], "a")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        log.write(self.requestline + "\n" + str(self.headers) + "\n"); log.flush()
        body = b'{"proof":"' + b"0" * 64 + b'","requests":[]}'
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$TMP/squat.py" "$PORT" "$TMP/squat.log" &
PY=$!
on_exit "kill $PY 2>/dev/null"
i=0
while ! python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
printf '{"url":"http://127.0.0.1:%s","token":"canary-token-%s","name":"squat","nonce":"%064d","pid":%s}' \
	"$PORT" "$$" 5 "$PY" >"$DIR/$PY.json"
chmod 0600 "$DIR/$PY.json"
cli pending
tap_is "$(grep -c "canary-token-$$" "$TMP/squat.log" 2>/dev/null)" 0 \
	"a server that cannot prove the file's nonce never gets its token" "$(cat "$TMP/squat.log" 2>/dev/null)"
tap_like "$(cat "$TMP/squat.log" 2>/dev/null)" "GET /api-proof\?challenge=[0-9a-f]{64}" \
	"it was asked for the proof (without the token)" "$(cat "$TMP/squat.log" 2>/dev/null)"
kill "$PY" "$SQ" 2>/dev/null

# Another local user's server on a port an API file of ours names (a stale file, the port taken
# since): its origin gets no CORS from our supervisors, the page it serves cannot use our cookie.
TOKEN_B=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$DIR/$B.json")
URL_B=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$DIR/$B.json")
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
setpriv --reuid 65534 --regid 65534 --clear-groups python3 -c \
	"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$NPORT)); s.listen(); time.sleep(60)" &
NOB=$!
on_exit "kill $NOB 2>/dev/null"
i=0
while ! grep -q ":$(printf '%04X' "$NPORT") 00000000:0000 0A" /proc/net/tcp && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
printf '{"url":"http://127.0.0.1:%s","token":"x","name":"stale","nonce":"%064d","pid":%s}' \
	"$NPORT" 9 "$NOB" >"$DIR/$NOB.json"
chmod 0600 "$DIR/$NOB.json"
cors() { # ORIGIN METHOD: the status and the Access-Control-Allow-Origin header
	curl -s -o /dev/null -D - -X "$2" -H "Origin: $1" -H "Authorization: Bearer $TOKEN_B" \
		-H 'Sec-Fetch-Site: same-site' "$URL_B/pending" |
		tr -d '\r' | awk 'NR == 1 { s = $2 } tolower($1) == "access-control-allow-origin:" { o = $2 } END { print s " " o }'
}
tap_is "$(cors "http://127.0.0.1:$NPORT" GET)" "403 " \
	"nobody's listener on a port our API file names: its origin is refused (403), even with the token"
tap_is "$(cors "http://127.0.0.1:$NPORT" OPTIONS)" "403 " "and gets no preflight"
tap_is "$(cors "$URL_A_SELF" GET)" "200 $URL_A_SELF" "while a supervisor of ours is a peer (CORS for its origin)"
kill "$NOB" 2>/dev/null

# A supervisor that died without cleaning up: its file goes on the next listing.
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
sed "s/\"pid\":$B/\"pid\":$DEAD/" "$DIR/$B.json" >"$DIR/$DEAD.json"
chmod 0600 "$DIR/$DEAD.json"
cli status
tap_ok "$([ ! -e "$DIR/$DEAD.json" ] && echo 0 || echo 1)" "the API file of a dead supervisor is removed" "$(ls -l "$DIR")"

# ---- kill NAME with two sandboxes of that name ----
cli kill twin
tap_is "$st" 1 "kill of a name two supervisors run: refused (1)"
tap_like "$out" "2 sandboxes are named twin" "and says so" "$out"
tap_like "$out" "supervisor pid $A at" "listing the first supervisor" "$out"
tap_like "$out" "supervisor pid $B at" "and the second" "$out"
tap_ok "$(alive "$A" && alive "$B" && echo 0 || echo 1)" "both still run"
cli kill twin --supervisor "$A"
tap_is "$st:$out" "0:twin: killed" "kill NAME --supervisor PID kills that one"
wait_gone "$A" 10
tap_ok "$(! alive "$A" && alive "$B" && echo 0 || echo 1)" "the chosen supervisor ends, the other runs on" "$(diag)"

# ---- a stale API file first: its token refused (401), the next supervisor is asked ----
# B's own server (it proves the nonce) with a token it no longer takes, listed before B's
# file (the files go by pid; this shell's is lower than B's; no start time to compare).
sed "s/\"token\":\"[^\"]*\"/\"token\":\"stale-token-$$\"/; s/\"pid\":$B/\"pid\":$$/; s/,\"start\":[0-9]*//" \
	"$DIR/$B.json" >"$DIR/$$.json"
chmod 0600 "$DIR/$$.json"
last() { printf '%s' "$out" | tail -n 1; }
cli pause twin
tap_is "$st:$(last)" "0:twin: paused" "pause NAME: a stale API file's 401 does not stop it, the next supervisor pauses" "$out"
tap_like "$out" "twin: the API token is refused .a stale API file" "and the refused token is said" "$out"
cli resume twin
tap_is "$st:$(last)" "0:twin: resumed" "resume NAME: likewise" "$out"
cli kill nobody-$$
tap_is "$st:$(last)" "1:cloister-supervisor: no sandbox named nobody-$$ among the supervisors that took the token" \
	"a name nobody runs: 1, and the refused token is part of the answer" "$out"
cli approve 0123456789abcdef0123456789abcdef
tap_is "$st:$(last)" "1:cloister-supervisor: no pending request 0123456789abcdef0123456789abcdef among the supervisors that took the token" \
	"approve ID: the stale file does not stop it either (the id is looked for in B too)" "$out"
rm -f "$DIR/$$.json"
tap_done
