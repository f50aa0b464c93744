#!/bin/sh
# The proxy never dials the host it runs on: a service of the host listening on every address
# (0.0.0.0 and [::], a busybox httpd of the test's) is out of the agent's reach through any
# allowed name that resolves to one of the host's addresses — not only loopback: the address
# of an interface the test adds (a veth, IPv4 and IPv6), the address of the host's own
# default route, 0.0.0.0 — through the transparent proxy (fake-IP and --real-ip resolver) and
# through the CONNECT proxy, for a root run and for an unprivileged one. A `domain:` entry
# naming that exact host still lets it through. The kernel side (an address added after the
# proxy started) is in tests/kernel/test_proxy.c.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

PLAN=25
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl busybox ip ss
tap_plan $PLAN

# The veth's host side is an address of the host (10.80.X.1, fd80:X::1) that no service binds
# to by name; the namespace's end is not used.
server_ns_up el 80
SELF4=10.80.$X.1
SELF6=fd80:$X::1
HOSTIP=$(ip -4 route get 192.0.2.123 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')

# A free port on every address of the host (bounded tries; the test's own pid picks the start).
p=$((20000 + $$ % 30000))
i=0
while [ $i -lt 200 ] && [ -n "$(ss -Hltn "sport = :$p")" ]; do
	p=$((p + 1))
	i=$((i + 1))
done
PORT=$p
WWW=$TMP/www
mkdir -p "$WWW"
echo "host-service" >"$WWW/index.html"
chmod -R a+rX "$WWW"
busybox httpd -f -p "$PORT" -h "$WWW" &
HTTPD=$!
on_exit "kill $HTTPD 2>/dev/null"
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/" || [ $i -ge 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
tap_like "$(curl -s "http://$SELF4:$PORT/") $(curl -s -g "http://[$SELF6]:$PORT/")" \
	"^host-service host-service$" "the host's service answers on the host's addresses (v4, v6)"

# Names: a pattern allows svc*.local.test; named.local.test is a domain: entry.
{
	echo "$SELF4 svc.local.test named.local.test"
	echo "$SELF6 svc6.local.test"
	echo "0.0.0.0 zero.local.test"
	[ -n "$HOSTIP" ] && echo "$HOSTIP hostip.local.test"
} >"$TMP/hosts"
CONFIG='proxy:
  allow:
    - pattern: "*.local.test"
    - domain: named.local.test
  unlisted_domain_behavior: reject
exec:
  security: full'

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/r" "$U/xdg"
chmod 700 "$U/xdg"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$TMP/hosts" "$U/hosts"
printf '%s\n' "$CONFIG" >"$U/cfg/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"
printf '%s\n' "$CONFIG" >"$CFG/config.yaml"
mkdir -p "$TMP/xdg"
chmod 700 "$TMP/xdg"

# The agent: each name through the proxy; results in $R/NAME (body) and $R/NAME.rc.
cat >"$U/agent.sh" <<EOF
r=\$1
for n in svc svc6 zero hostip named; do
	curl -sS -m 5 http://\$n.local.test:$PORT/ >\$r/\$n 2>&1; echo \$? >\$r/\$n.rc
done
[ -z "\$2" ] || while [ ! -e \$r/stop ]; do sleep 0.1; done
EOF
chmod 644 "$U/agent.sh"

# start_run WHO R [RUN OPTIONS]: the supervisor as root or nobody in the background ($runpid),
# the agent's results in directory R; with "wait" among the options the agent waits for R/stop.
start_run() {
	who=$1
	r=$2
	shift 2
	wait_arg=
	case " $* " in *" --listen-proxy "*) wait_arg="wait" ;; esac
	if [ "$who" = root ]; then
		(cd "$TMP" && XDG_RUNTIME_DIR=$TMP/xdg timeout -k 5 40 "$SUPERVISOR" run --config-dir "$CFG" \
			--hosts "$TMP/hosts" \
			--ask none "$@" -- sh "$U/agent.sh" "$r" $wait_arg </dev/null >"$OUT" 2>"$ERR") &
	else
		(cd "$U" && timeout -k 5 40 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
			XDG_RUNTIME_DIR="$U/xdg" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
			--hosts "$U/hosts" --ask none "$@" -- sh "$U/agent.sh" "$r" $wait_arg) \
			</dev/null >"$OUT" 2>"$ERR" &
	fi
	runpid=$!
}

# check WHO MODE R: the agent's results of one run.
check() {
	for n in svc svc6 zero; do
		tap_ok "$([ "$(cat "$2/$n.rc" 2>/dev/null)" != 0 ] && echo 0 || echo 1)" \
			"$1, $3: an allowed name resolving to the host's own address ($n) is refused" \
			"$(cat "$2/$n" 2>/dev/null)"
	done
	if [ -n "$HOSTIP" ]; then
		tap_ok "$([ "$(cat "$2/hostip.rc" 2>/dev/null)" != 0 ] && echo 0 || echo 1)" \
			"$1, $3: ... and to the address of its default route ($HOSTIP)" \
			"$(cat "$2/hostip" 2>/dev/null)"
	else
		tap_skip "$1, $3: the host's default-route address" "this host has no IPv4 default route"
	fi
	tap_is "$(cat "$2/named.rc" 2>/dev/null) $(cat "$2/named" 2>/dev/null)" "0 host-service" \
		"$1, $3: a domain: entry naming that exact host reaches it" "$(diag)"
}

for who in root nobody; do
	if [ "$who" = root ]; then
		xdg=$TMP/xdg
		aud=$AUDIT
	else
		xdg=$U/xdg
		aud=$U/state/cloister/audit.log
	fi
	R=$U/r/$who-fake
	mkdir -p "$R"
	chown "$NOBODY:$NOBODY" "$R"

	# ---- fake-IP resolver and the CONNECT proxy, one run ----
	start_run "$who" "$R" -v --listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 \
		--listen-request off --listen-proxy 127.0.0.1:0
	i=0
	while [ ! -e "$R/named.rc" ] && [ $i -lt 200 ] && kill -0 "$runpid" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	check "$who" "$R" "transparent proxy"
	# The run goes on: its automatic lines may wait in memory for --audit-delay (20 ms).
	wait_until 10 grep -q '"summary":"svc.local.test' "$aud"
	tap_like "$(grep '"summary":"svc.local.test' "$aud" 2>/dev/null | tail -n 1)" \
		'"verdict":"deny".*"reason":"an address of this host"' \
		"$who: the audit log says why" "$(tail -n 3 "$aud" 2>/dev/null)"

	info=$(cat "$xdg"/cloister/api/*.json 2>/dev/null)
	field() { printf '%s' "$info" | sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
	PPORT=$(sed -n 's/.*CONNECT proxy at 127.0.0.1:\([0-9]*\).*/\1/p' "$ERR" | head -n 1)
	CTOK=local-test-token-$who-0123456789
	curl -s -o /dev/null -X POST -H "Authorization: Bearer $(field token)" \
		-d "{\"token\":\"$CTOK\",\"cloister\":\"outside-$who\"}" "$(field tokens_url)/tokens"
	code=$(curl -s -o "$TMP/connect" -w '%{http_code}' -m 5 -p \
		-x "http://cloister:$CTOK@127.0.0.1:$PPORT" "http://svc.local.test:$PORT/")
	tap_is "$code" 000 "$who, CONNECT proxy: an allowed name resolving to the host is refused" \
		"$(cat "$TMP/connect"; diag)"
	first=$(printf 'CONNECT svc.local.test:%s HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n' \
		"$PORT" "$(printf 'cloister:%s' "$CTOK" | base64 -w0)" |
		busybox nc -w 2 127.0.0.1 "$PPORT" | head -n 1 | tr -d '\r')
	tap_like "$first" '^HTTP/1.1 403' "$who, CONNECT proxy: ... with 403" "$first"
	out=$(curl -sS -m 5 -p -x "http://cloister:$CTOK@127.0.0.1:$PPORT" \
		"http://named.local.test:$PORT/" 2>&1)
	tap_is "$out" "host-service" "$who, CONNECT proxy: the exactly named host is reached"
	touch "$R/stop"
	wait "$runpid"
	rc=$?
	tap_is "$rc" 0 "$who: the run ends normally" "$(diag)"

	# ---- real-IP resolver ----
	R=$U/r/$who-real
	mkdir -p "$R"
	chown "$NOBODY:$NOBODY" "$R"
	start_run "$who" "$R" --no-web --real-ip
	wait "$runpid"
	rc=$?
	tap_ok "$([ "$(cat "$R/svc.rc" 2>/dev/null)" != 0 ] && echo 0 || echo 1)" \
		"$who, --real-ip: the agent connecting to the host's address itself is refused" \
		"$(cat "$R/svc" 2>/dev/null; diag)"
	tap_is "$(cat "$R/named.rc" 2>/dev/null) $(cat "$R/named" 2>/dev/null)" "0 host-service" \
		"$who, --real-ip: ... unless the policy names the host" "$(diag)"
done

tap_done
