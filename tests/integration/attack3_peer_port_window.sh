#!/bin/sh
# Attack on the dashboards' peer origin check (peers.h) from a `run --net host` agent (root
# only: it needs eBPF). A dashboard accepts the Origin http://127.0.0.1:P of a page when P is
# named in one of the user's API files and a socket of the user's uid listens on it (sock_diag).
# The agent shares the host's loopback and may bind any free loopback port. A supervisor that
# ends closed its listener first and removed its API file afterwards (after its host commands
# and executor jobs were done): in between, the file still named a port nobody held. The agent
# binds it and another dashboard of the user trusts the agent's page as a peer (its answers
# carry Access-Control-Allow-Origin: the agent's page reads the asks and answers them with the
# person's cookie). The window is widened here by delaying the ending supervisor's unlink
# (strace's fault injection), the way a slow host command would.
# Held now: the API file goes first, so the port is never named while free.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=4
run_needs_root $PLAN
run_needs_tools $PLAN curl strace /usr/bin/python3
tap_plan $PLAN

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
API=$XDG_RUNTIME_DIR/cloister/api
write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
R=$TMP/r
mkdir -p "$R"
alive() { kill -0 "$1" 2>/dev/null; }
# A run that waits until the test is done; its supervisor's pid in $pid.
waiting_run() { # NAME [OPTIONS…]
	name=$1
	shift
	(cd "$TMP" && exec "$SUPERVISOR" run --config-dir "$CFG" --name "$name" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off --ask none "$@" \
		-- /bin/sh -c "i=0; while [ ! -e '$R/done' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i+1)); done") \
		</dev/null >"$TMP/out-$name" 2>"$TMP/err-$name" &
	pid=$!
	on_exit "touch '$R/done'; kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	i=0
	while [ ! -s "$API/$pid.json" ] && alive "$pid" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
field() { # FILE KEY
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

waiting_run "a3b$$"
B=$pid
B_URL=$(field "$API/$B.json" url)
B_TOKEN=$(field "$API/$B.json" token)
waiting_run "a3a$$"
A=$pid
A_URL=$(field "$API/$A.json" url)
PA=${A_URL##*:}
tap_like "$B_URL $A_URL" '^http://127\.0\.0\.1:[0-9]+ http://127\.0\.0\.1:[0-9]+$' \
	"two dashboards of the user are up" "$(cat "$TMP/err-a3a$$" "$TMP/err-a3b$$")"
origin_from_a() { # the status of B's answer to a page of origin A_URL
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $B_TOKEN" \
		-H "Origin: $A_URL" "$B_URL/pending"
}
tap_is "$(origin_from_a)" 200 "the dashboard trusts its live peer's origin"

# The --net host agent: takes port PA as soon as it is free, and holds it.
cat >"$TMP/grab.py" <<EOF
import os, socket, time
s = socket.socket()
for _ in range(1200):
    try:
        s.bind(("127.0.0.1", $PA)); s.listen(8); break
    except OSError:
        time.sleep(0.01)
else:
    raise SystemExit(1)
open("$R/bound.tmp", "w").close(); os.rename("$R/bound.tmp", "$R/bound")
while not os.path.exists("$R/done"):
    time.sleep(0.05)
EOF
(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --net host \
	--name "a3n$$" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	--ask none -- /usr/bin/python3 "$TMP/grab.py") </dev/null >"$OUT" 2>"$ERR" &
N=$!
on_exit "touch '$R/done'; kill $N 2>/dev/null; wait $N 2>/dev/null"

# Supervisor A ends, its unlinks slowed down by 4 s each.
strace -f -qq -p "$A" -e trace=unlink,unlinkat -e inject=unlink,unlinkat:delay_enter=4000000 \
	-o /dev/null 2>"$TMP/strace.err" &
S=$!
on_exit "kill $S 2>/dev/null; wait $S 2>/dev/null"
i=0 # strace has attached once A's status names a tracer
while [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$A/status" 2>/dev/null)" = 0 ] &&
	[ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -TERM "$A"
i=0
while [ ! -e "$R/bound" ] && alive "$A" && [ $i -lt 400 ]; do
	sleep 0.01
	i=$((i + 1))
done
status=$(origin_from_a)
file=absent
[ -e "$API/$A.json" ] && file=present
tap_ok "$([ "$status" = 403 ] && echo 0 || echo 1)" \
	"the agent that took the ending dashboard's port is not trusted as a peer" \
	"status $status, agent bound: $([ -e "$R/bound" ] && echo yes || echo no), A's file $file, A alive: $(alive "$A" && echo yes || echo no)"
i=0
while { [ ! -e "$R/bound" ] || alive "$A"; } && [ $i -lt 600 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_is "$([ -e "$R/bound" ] && origin_from_a)" 403 \
	"nor once it holds the port for good, the supervisor gone" "$(cat "$ERR")"
tap_done
