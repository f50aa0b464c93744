#!/bin/sh
# Domain decisions of a project hold at once in the user's other running supervisors of that
# project, and `decisions rm` takes one back there (issue 16; exec decisions:
# run_decisions_shared.sh). Each supervisor looks at the decisions files (a stat) every second
# and before each ask, and reads them again when one changed:
#   - run A allows a name for the project: the decisions file is replaced (rename), run B's
#     waiting connection to that name goes through, and its next one needs no ask;
#   - `decisions rm` (another replacement) makes run B ask again;
#   - the file edited in place (same inode), by hand, is read too;
#   - as an unprivileged user (nobody), with no asks (unlisted names refused): a name the
#     project's file allows (written by another run: a rename) is reached, and refused again
#     once it is taken out.
# The name resolves to a server of the test on this host's loopback (--hosts), which an exact
# domain entry may reach.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=14
run_needs_root $PLAN
run_needs_tools $PLAN curl python3 setpriv
tap_plan $PLAN

# The server: one answer to every GET; it picks its own free port and writes it down.
cat >"$TMP/srv.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello-live\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
EOF
python3 "$TMP/srv.py" "$TMP/port" &
PY=$!
on_exit "kill $PY 2>/dev/null; wait $PY 2>/dev/null"
wait_file 10 "$TMP/port"
PORT=$(cat "$TMP/port")
ONE=one$$.test
TWO=two$$.test
printf '127.0.0.1 %s %s\n' "$ONE" "$TWO" >"$TMP/hosts"

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
write_config <<'EOF2'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
    - path: "/usr/bin/cat"
    - path: "/usr/bin/curl"
proxy:
  unlisted_domain_behavior: request_approval
EOF2
PROJECT=live$$
PROJECT_FILE=$CFG/decisions/projects/$PROJECT.yaml
fetch() { printf 'curl -sS -m 30 http://%s:%s/' "$1" "$PORT"; }
A=$TMP/a
B=$TMP/b
start_run one$$ "$A" --hosts "$TMP/hosts"
PA=$pid
start_run two$$ "$B" --hosts "$TMP/hosts"
PB=$pid
on_exit "stop_pid $PA; stop_pid $PB"

# Both connect to ONE; the second run's ask waits first.
STEPS=$B
step 1 "$(fetch "$ONE")"
wait_pending " two$$ " "$ONE"
idb=$id
STEPS=$A
step 1 "$(fetch "$ONE")"
wait_pending " one$$ " "$ONE"
tap_ok "$([ -n "$idb" ] && [ -n "$id" ] && echo 0 || echo 1)" "both runs ask for $ONE" "$out"
cli approve "$id" --scope project
done_within 1 10
tap_like "$res" 'hello-live' "the first run allows it for the project and connects" \
	"$res $(cat "$A.err")"
STEPS=$B
done_within 1 10
tap_like "$res" 'hello-live' "the second run's held connection goes through on that decision" \
	"$res $(cat "$B.err")"
step 2 "$(fetch "$ONE")"
done_within 2 10
tap_like "$res" 'hello-live' "and its next connection to it needs no ask" "$res"
cli pending
tap_ok "$(printf '%s\n' "$out" | grep -qF -- " two$$ " && echo 1 || echo 0)" \
	"nothing of the second run waits" "$out"

# `decisions rm` (the file replaced again): the second run asks again, within a second.
cli decisions list --config-dir "$CFG" --project "$PROJECT"
entry=$(printf '%s\n' "$out" | grep -F -- "$ONE" | awk '{ print $1 }' | head -n 1)
cli decisions rm "$entry" --config-dir "$CFG" --project "$PROJECT"
tap_is "$st" 0 "decisions rm removes the project's entry for $ONE" "$out"
# It holds there until the next look at the files (at most a second): the agent connects
# again and again, until a connection is held for an ask (then denied: the loop ends).
# shellcheck disable=SC2016 # the agent's shell expands these
step 3 'i=0; while [ $i -lt 100 ] && '"$(fetch "$ONE")"' >/dev/null; do sleep 0.05; i=$((i + 1)); done; echo "tries $i"'
wait_pending " two$$ " "$ONE"
tap_like "$id" '^[0-9a-f]{12}$' "the running second run asks for it again" "$out"
[ -n "$id" ] && cli deny "$id"
done_within 3 10

# Edited in place by hand (truncated and written, same inode): TWO allowed for the project.
ino=$(stat -c %i "$PROJECT_FILE")
cat >"$PROJECT_FILE" <<EOF
proxy:
  allow:
    - domain: "$TWO"
EOF
tap_is "$(stat -c %i "$PROJECT_FILE")" "$ino" "the decisions file is edited in place" \
	"$(cat "$PROJECT_FILE")"
step 4 "$(fetch "$TWO")"
done_within 4 10
tap_like "$res" 'hello-live' "the running second run connects to $TWO without an ask" \
	"$res $(cat "$PROJECT_FILE")"
cli pending
tap_ok "$(printf '%s\n' "$out" | grep -qF -- "$TWO" && echo 1 || echo 0)" \
	"and nothing asks for it" "$out"
stop_pid "$PA"
stop_pid "$PB"

# ---- nobody: the same watch without privileges ---------------------------------------------
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg/decisions/projects" "$U/b" "$U/rt"
chmod 700 "$U/rt" "$U/cfg/decisions" "$U/cfg/decisions/projects"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$TMP/hosts" "$U/hosts"
cat >"$U/cfg/config.yaml" <<'EOF2'
exec:
  security: full
  defaults: false
proxy:
  unlisted_domain_behavior: reject
EOF2
chown -R "$NOBODY:$NOBODY" "$U"
as_nobody() {
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
		XDG_RUNTIME_DIR="$U/rt" "$@"
}
# Another run's write: a new file renamed over the project's, as nobody.
put_decisions() { # TEXT
	# shellcheck disable=SC2016 # the inner shell expands these
	as_nobody sh -c 'umask 077; printf "%s" "$1" >"$2.tmp" && mv "$2.tmp" "$2"' sh "$1" \
		"$U/cfg/decisions/projects/$PROJECT.yaml"
}
(cd "$U/b" && exec timeout -k 5 120 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
	XDG_RUNTIME_DIR="$U/rt" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
	--project "$PROJECT" --ask none --name three$$ --hosts "$U/hosts" -- \
	sh -c "$STEP_AGENT" sh "$U/b") </dev/null >"$U/b.out" 2>"$U/b.err" &
PN=$!
on_exit "stop_pid $PN"
as_nobody_step() { # N COMMAND
	# shellcheck disable=SC2016 # the inner shell expands these
	as_nobody sh -c 'printf "%s\n" "$2" >"$1.tmp" && mv "$1.tmp" "$1"' sh "$U/b/cmd$1" "$2"
}
as_nobody_step 1 "$(fetch "$ONE")"
STEPS=$U/b
done_within 1 20
hellos=$(printf '%s\n' "$res" | grep -c hello-live)
tap_ok "$([ "$hellos" -eq 0 ] && grep -q '^status [1-9]' "$U/b/out1" && echo 0 ||
	echo 1)" "nobody: an unlisted name is refused" "$res $(cat "$U/b.err")"
put_decisions "proxy:
  allow:
    - domain: \"$ONE\"
"
# shellcheck disable=SC2016 # the agent's shell expands these
as_nobody_step 2 'i=0; until '"$(fetch "$ONE")"' 2>/dev/null; do [ $i -lt 100 ] || exit 1; sleep 0.05; i=$((i + 1)); done'
done_within 2 20
tap_like "$res" 'hello-live' "nobody: once another run allows it for the project, it is reached" \
	"$res $(cat "$U/b.err")"
put_decisions "proxy:
  allow:
    - domain: \"$TWO\"
"
# shellcheck disable=SC2016 # the agent's shell expands these
as_nobody_step 3 'i=0; while '"$(fetch "$ONE")"' >/dev/null 2>&1; do [ $i -lt 100 ] || exit 1; sleep 0.05; i=$((i + 1)); done; echo refused'
done_within 3 20
tap_like "$res" 'refused' "nobody: taken out of the file, it is refused again" \
	"$res $(cat "$U/b.err")"
as_nobody_step 4 "$(fetch "$TWO")"
done_within 4 20
tap_like "$res" 'hello-live' "nobody: and the name the file now allows is reached" \
	"$res $(cat "$U/b.err")"
tap_done
