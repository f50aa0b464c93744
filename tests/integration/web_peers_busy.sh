#!/bin/sh
# One dashboard for every run on a busy machine: with tens of thousands of TIME_WAIT sockets
# (a build, a test suite that connects a lot), the supervisor still tells a peer's origin from
# another — it asks the kernel for the one listener of the peer's port (NETLINK_SOCK_DIAG)
# instead of reading the whole /proc/net/tcp, which then holds megabytes. In a network
# namespace of its own (root), so that the flood touches no other test:
#   - the peer's page may read /pending and gets its preflight (CORS for its origin);
#   - an origin no API file names, a listener of ours or not, is refused;
#   - GET /peers lists the peer.
# Prints TAP.
set -u
PLAN=6
if [ "$(id -u)" -eq 0 ] && [ -z "${CLOISTER_IN_NETNS:-}" ]; then
	# Everything below runs in a fresh network namespace, which ends with its processes.
	if unshare -n true 2>/dev/null; then
		CLOISTER_IN_NETNS=1 exec unshare -n sh "$0" "$@"
	fi
fi
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
run_needs_root $PLAN
[ -n "${CLOISTER_IN_NETNS:-}" ] || run_skip_all $PLAN "unshare -n failed: no network namespace of its own"
run_needs_tools $PLAN ip curl python3
tap_plan $PLAN
ip link set lo up
# No reuse of TIME_WAIT ports on loopback (the default): every connection stays counted.
echo 0 >/proc/sys/net/ipv4/tcp_tw_reuse 2>/dev/null

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
write_config <<'EOF'
exec:
  security: allowlist
  defaults: false
  allow:
    - path: "/usr/bin/sleep"
EOF

# start NAME: a supervisor whose agent sleeps; its pid in $svpid, its login link in $login.
start() {
	(cd "$TMP" && exec timeout -k 5 120 "$SUPERVISOR" run -v --config-dir "$CFG" --ask web \
		--name "$1" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- /usr/bin/sleep 110 </dev/null >"$TMP/$1.out" 2>"$TMP/$1.err") &
	svpid=$!
	on_exit "kill $svpid 2>/dev/null; wait $svpid 2>/dev/null"
	login=
	i=0
	while [ -z "$login" ] && kill -0 "$svpid" 2>/dev/null && [ $i -lt 200 ]; do
		login=$(sed -n 's|.*dashboard at \(http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]*\).*|\1|p' "$TMP/$1.err" | head -n 1)
		[ -n "$login" ] || sleep 0.1
		i=$((i + 1))
	done
}
start "peer$$"
PEERURL=${login%%/\?token=*}
start "main$$"
URL=${login%%/\?token=*}
tok=${login##*token=}
if [ -z "$PEERURL" ] || [ -z "$URL" ]; then
	tap_ok 1 "two supervisors start" "$(cat "$TMP/peer$$.err" "$TMP/main$$.err" 2>/dev/null | head -c 3000)"
	tap_done
fi

# The flood: N connections on loopback, each closed by the client first (TIME_WAIT on its
# side), spread over three listeners so that the ephemeral ports suffice. A listener of ours
# stays up: its origin is no peer's all the same.
N=40000
python3 - "$N" >"$TMP/flood" 2>&1 <<'PY' &
import socket, sys, time
n = int(sys.argv[1])
ls = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    ls.append(s)
made = 0
for i in range(n):
    l = ls[i % 3]
    c = socket.create_connection(l.getsockname())
    a, _ = l.accept()
    c.close()
    a.close()
    made += 1
print(ls[0].getsockname()[1], made, flush=True)
time.sleep(100)
PY
FLOOD=$!
on_exit "kill $FLOOD 2>/dev/null"
i=0
while [ ! -s "$TMP/flood" ] && kill -0 "$FLOOD" 2>/dev/null && [ $i -lt 1200 ]; do
	sleep 0.1
	i=$((i + 1))
done
# shellcheck disable=SC2046 # the two words it printed
set -- $(cat "$TMP/flood")
OTHER="http://127.0.0.1:${1:-0}"
tw=$(grep -c ' 06 ' /proc/net/tcp)
size=$(wc -c </proc/net/tcp)
# More than 4 MiB: what the supervisor once read whole on every cross-origin request.
tap_ok "$([ "$tw" -ge 30000 ] && [ "$size" -gt 4194304 ] && echo 0 || echo 1)" \
	"the namespace has $tw TIME_WAIT sockets ($size bytes of /proc/net/tcp)" "$(head -c 500 "$TMP/flood")"

cors() { # ORIGIN METHOD PATH: the status and the Access-Control-Allow-Origin header
	curl -s -m 10 -o /dev/null -D - -X "$2" -H "Origin: $1" -H "Authorization: Bearer $tok" \
		-H 'Sec-Fetch-Site: same-site' "$URL$3" |
		tr -d '\r' | awk 'NR == 1 { s = $2 } tolower($1) == "access-control-allow-origin:" { o = $2 } END { print s " " o }'
}
tap_is "$(cors "$PEERURL" GET /pending)" "200 $PEERURL" "the peer's page may read /pending (CORS for its origin)"
tap_is "$(cors "$PEERURL" OPTIONS /approve/0123456789ab)" "204 $PEERURL" "and gets its preflight for a POST"
tap_like "$(cors "$OTHER" GET /pending)" "^403 \$" "an origin no API file names is refused, a listener of ours"
tap_like "$(cors "http://127.0.0.1:1" GET /pending)" "^403 \$" "... or not"
tap_is "$(curl -s -m 10 -H "Authorization: Bearer $tok" "$URL/peers" | tr -d ' \n' | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')" \
	"$PEERURL" "GET /peers lists the other run's dashboard"
tap_done
