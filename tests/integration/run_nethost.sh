#!/bin/sh
# `run --net host`: the agent shares the host's loopback, but not the supervisors' own APIs.
# From inside the sandbox, this run's dashboard (/pending) fails at 127.0.0.1, 127.1.2.3,
# localhost, [::1], [::ffff:127.0.0.1], 0.0.0.0 and [::], also by TCP Fast Open; its token API
# and another supervisor's dashboard (started before) fail too. The request server is still
# reachable (it answers 401 without the agent's token), and so is an ordinary loopback
# service of the test's.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=17
run_needs_root $PLAN
run_needs_tools $PLAN curl busybox
tap_plan $PLAN

# API files of our own, so that other supervisors on this machine do not confuse the test.
XDG_RUNTIME_DIR=$TMP/xdg
export XDG_RUNTIME_DIR
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
# The policy names loop.test, which resolves to 127.0.0.1 (--hosts): a connection the proxy
# names so may be dialled on loopback, but never to a supervisor's API.
write_config <<'EOF'
exec:
  security: full
  defaults: false
proxy:
  allow:
    - domain: loop.test
  defaults: false
EOF
echo "127.0.0.1 loop.test" >"$TMP/hosts"
R=$TMP/r
mkdir -p "$R"

# port_of NAME FIELD: the port in FIELD ("url", "tokens_url", "request_url") of the API file
# of the supervisor named NAME.
port_of() {
	for f in "$XDG_RUNTIME_DIR"/cloister/api/*.json; do
		[ -f "$f" ] || continue
		grep -q "\"name\":\"$1\"" "$f" || continue
		sed -n "s/.*\"$2\":\"http:\/\/127.0.0.1:\([0-9]*\)\".*/\1/p" "$f"
	done
}
wait_port() {
	i=0
	while [ $i -lt 100 ]; do
		p=$(port_of "$1" "$2")
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# ---- another supervisor, already running, and an ordinary loopback service --------------------
(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask web --net none \
	--name other-sv --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	-- sleep 60) </dev/null >"$TMP/other.out" 2>"$TMP/other.err" &
otherpid=$!
on_exit "kill $otherpid 2>/dev/null; wait $otherpid 2>/dev/null"
OTHER=$(wait_port other-sv url)

echo "plain-loopback-service" >"$TMP/index.html"
# A port nobody holds: httpd gives up at once when the bind fails, so try the next one.
try=0
while :; do
	SVC=$((20000 + ($$ + try * 7919) % 20000))
	busybox httpd -f -p "127.0.0.1:$SVC" -h "$TMP" 2>/dev/null &
	svcpid=$!
	svc_settled() { ! kill -0 "$svcpid" 2>/dev/null || curl -sf -o /dev/null "http://127.0.0.1:$SVC/index.html"; }
	wait_until 5 svc_settled
	kill -0 "$svcpid" 2>/dev/null && break
	try=$((try + 1))
	[ "$try" -lt 20 ] || break
done
on_exit "kill $svcpid 2>/dev/null"
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$SVC/index.html" || [ $i -ge 50 ]; do
	sleep 0.1
	i=$((i + 1))
done

# ---- the agent ------------------------------------------------------------------------------
cat >"$TMP/agent.sh" <<AGENT
i=0; while [ ! -s $TMP/ports ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
. $TMP/ports
for a in 127.0.0.1 127.1.2.3 localhost '[::1]' '[::ffff:127.0.0.1]' 0.0.0.0 '[::]'; do
	curl -sS -m 3 -o /dev/null "http://\$a:\$APPROVAL/pending" 2>/dev/null
	echo "\$a \$?" >>$R/dash
done
$HELPERS/tcpget -f 127.0.0.1 \$APPROVAL /pending >$R/tfo 2>&1
$HELPERS/tcpget 127.0.0.1 \$TOKENS /tokens >$R/tokens 2>&1
$HELPERS/tcpget 127.0.0.1 $OTHER /pending >$R/other 2>&1
curl -sS -m 3 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H 'X-Cloister-Token: not-the-token' --data '{"cmd":"true"}' \
	"http://127.0.0.1:\$REQUEST/request" >$R/request 2>&1
curl -sS -m 3 "http://127.0.0.1:$SVC/index.html" >$R/svc 2>&1
curl -sS -m 3 "http://localhost:$SVC/index.html" >$R/svc_name 2>&1
# Through the proxy (an outside address, named loop.test by the Host header): the proxy dials
# 127.0.0.1 from the host, where no eBPF map stands between it and the dashboard.
curl -sS -m 3 -H 'Host: loop.test' "http://203.0.113.9:\$APPROVAL/pending" >$R/fronted 2>&1
echo "rc=\$?" >>$R/fronted
curl -sS -m 3 -H 'Host: loop.test' "http://203.0.113.9:$SVC/index.html" >$R/fronted_svc 2>&1
# DNS over TCP to loopback (a host's stub resolver) is our resolver too: a query for a name of
# --hosts gets an answer (nothing listens on 127.0.0.1:53 here otherwise).
printf '\000\033\022\064\001\000\000\001\000\000\000\000\000\000\004loop\004test\000\000\001\000\001' |
	busybox nc -w 2 127.0.0.1 53 | od -An -tx1 | tr -d ' \n' >$R/dnstcp
AGENT
# In $TMP: the agent's private /tmp shows its working directory, where it writes its results.
(cd "$TMP" && exec timeout -k 5 40 "$SUPERVISOR" run --config-dir "$CFG" --ask none --net host \
	--name nethost-sv --hosts "$TMP/hosts" \
	--listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0 \
	-- sh "$TMP/agent.sh") </dev/null >"$OUT" 2>"$ERR" &
runpid=$!
APPROVAL=$(wait_port nethost-sv url)
TOKENS=$(wait_port nethost-sv tokens_url)
REQUEST=$(wait_port nethost-sv request_url)
printf 'APPROVAL=%s\nTOKENS=%s\nREQUEST=%s\n' "$APPROVAL" "$TOKENS" "$REQUEST" >"$TMP/ports.tmp"
# From outside the sandbox the dashboard answers: what the agent meets is the sandbox's doing.
token=$(sed -n 's/.*"token":"\([0-9a-f]*\)".*/\1/p' "$(grep -l '"name":"nethost-sv"' "$XDG_RUNTIME_DIR"/cloister/api/*.json)")
outside=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
	"http://127.0.0.1:$APPROVAL/pending")
mv "$TMP/ports.tmp" "$TMP/ports"
wait "$runpid"
rc=$?

tap_is "$rc $outside" "0 200" "the run ends well; its dashboard answers outside the sandbox" "$(diag)"
for a in 127.0.0.1 127.1.2.3 localhost '[::1]' '[::ffff:127.0.0.1]' 0.0.0.0 '[::]'; do
	got=$(grep -F "$a " "$R/dash" | head -n 1 | cut -d' ' -f2)
	tap_is "$got" 7 "--net host: the dashboard's /pending at $a cannot be connected to" \
		"$(cat "$R/dash" 2>/dev/null)"
done
tap_is "$(cat "$R/tfo")" "tcpget: sendto: Operation not permitted" \
	"--net host: TCP Fast Open (sendto, no connect) to the dashboard is refused"
tap_is "$(cat "$R/tokens")" "tcpget: connect: Operation not permitted" \
	"--net host: the token API is refused"
tap_is "$(cat "$R/other")" "tcpget: connect: Operation not permitted" \
	"--net host: another supervisor's dashboard is refused" "$(cat "$TMP/other.err")"
tap_is "$(cat "$R/request")" 401 \
	"--net host: the request server is still reachable (401 without the agent's token)"
tap_is "$(cat "$R/svc")" "plain-loopback-service" \
	"--net host: an ordinary loopback service on another port is still reachable"
tap_is "$(cat "$R/svc_name")" "plain-loopback-service" "... and by the name localhost"
tap_is "$(cat "$R/fronted_svc")" "plain-loopback-service" \
	"--net host: the proxy dials a loopback name the policy names, on another port"
tap_ok "$(! grep -q requests "$R/fronted" && grep -q 'rc=[1-9]' "$R/fronted"; echo $?)" \
	"--net host: but not on the dashboard's port, though the policy names it" \
	"$(cat "$R/fronted")"
tap_like "$(cat "$R/dnstcp")" '^....1234' \
	"--net host: DNS over TCP to 127.0.0.1:53 is answered by our resolver" "$(cat "$R/dnstcp")"
tap_done
