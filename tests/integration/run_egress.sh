#!/bin/sh
# Egress from inside `run`: servers of our own in a network namespace of the test (plain HTTP,
# TLS, a raw TCP echo, a banner service that speaks first, IPv6), reached by name through the
# supervisor's proxy and resolver. Allowed names work with curl, wget, busybox wget and openssl
# s_client, and with raw TCP clients that send nothing (EOF at once, or waiting for the
# server's banner past the proxy's sniff deadline); denied ones fail fast; an unlisted
# one waits for a decision posted through the API, and a project-scope decision is written to
# the decisions file and holds after a restart. No bypass: direct IPs, UDP elsewhere, ICMP,
# IPv6 literals, the metadata address. The same through the CONNECT proxy from the host.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

PLAN=44
run_needs_root $PLAN
run_needs_tools $PLAN curl wget openssl busybox ip
tap_plan $PLAN

# ---- the servers' namespace, joined to ours by a veth pair ----------------------------------
server_ns_up eg 77

WWW=$TMP/www
mkdir -p "$WWW"
echo "hello-from-test" >"$WWW/index.html"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
	-keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
ip netns exec "$NS" busybox httpd -f -p 80 -h "$WWW" &
ip netns exec "$NS" openssl s_server -quiet -accept 443 -www -cert "$TMP/cert.pem" \
	-key "$TMP/key.pem" >/dev/null 2>&1 &
ip netns exec "$NS" sh -c 'while :; do busybox nc -l -p 7000 -e /bin/cat; done' \
	>/dev/null 2>&1 &
# Speaks first, like ssh or smtp, then echoes until the client's EOF.
ip netns exec "$NS" busybox nc -ll -p 7001 -e sh -c 'echo banner-from-test; exec cat' \
	>/dev/null 2>&1 &
servers_up() { [ "$(in_server_ns ss -Hltn | grep -cE ':(80|443|7000|7001) ')" -ge 4 ]; }
wait_until 10 servers_up

cat >"$TMP/hosts" <<EOF
$SRV4 allowed.test denied.test unlisted.test
$SRV6 allowed6.test
EOF
write_config <<'EOF'
proxy:
  allow:
    - domain: allowed.test
    - domain: allowed6.test
  deny:
    - domain: denied.test
  unlisted_domain_behavior: request_approval
  defaults: false
exec:
  security: full
  defaults: false
EOF

R=$TMP/r
mkdir -p "$R"
now_ms() { date +%s%3N; }
rc_of() { cat "$R/$1.rc" 2>/dev/null; }

# ---- from inside the sandbox: allowed, denied, no bypass -------------------------------------
cat >"$TMP/agent.sh" <<EOF
r=$R
curl -sS -m 5 http://allowed.test/ >\$r/http 2>&1; echo \$? >\$r/http.rc
curl -sSk -m 5 https://allowed.test/ >\$r/https 2>&1; echo \$? >\$r/https.rc
echo | openssl s_client -connect allowed.test:443 -servername allowed.test >\$r/sclient 2>&1
echo \$? >\$r/sclient.rc
wget -q -O \$r/wget -T 5 -t 1 http://allowed.test/ 2>\$r/wget.err; echo \$? >\$r/wget.rc
# No -T: Debian's busybox-static is built without FEATURE_WGET_TIMEOUT, and its getopt32 then
# stores -T's number through a NULL pointer (exit 139 anywhere, sandbox or not).
busybox wget -q -O \$r/bbwget http://allowed.test/ 2>\$r/bbwget.err; echo \$? >\$r/bbwget.rc
$HELPERS/tcpfirst allowed.test 7001 eof >\$r/eof 2>\$r/eof.err; echo \$? >\$r/eof.rc
$HELPERS/tcpfirst allowed.test 7001 wait >\$r/first 2>\$r/first.err; echo \$? >\$r/first.rc
echo ping | busybox nc -w 2 allowed.test 7000 >\$r/echo 2>&1; echo \$? >\$r/echo.rc
curl -sS -m 5 http://allowed6.test/ >\$r/v6name 2>&1; echo \$? >\$r/v6name.rc
getent hosts denied.test >/dev/null; echo \$? >\$r/denied_dns.rc
t0=\$(date +%s%3N)
curl -sS -m 5 --resolve denied.test:80:$SRV4 http://denied.test/ >\$r/denied 2>&1
echo \$? >\$r/denied.rc; echo \$((\$(date +%s%3N) - t0)) >\$r/denied.ms
HTTP_PROXY= http_proxy= curl -sS -m 5 --noproxy '*' http://$SRV4/ >\$r/ip 2>&1; echo \$? >\$r/ip.rc
curl -sS -m 5 -g "http://[$SRV6]/" >\$r/ip6 2>&1; echo \$? >\$r/ip6.rc
curl -sS -m 3 http://169.254.169.254/latest/meta-data/ >\$r/meta 2>&1; echo \$? >\$r/meta.rc
$HELPERS/udpsend $SRV4 9999 >\$r/udp 2>&1; echo \$? >\$r/udp.rc
busybox ping -c 1 -W 1 $SRV4 >\$r/ping 2>&1; echo \$? >\$r/ping.rc
busybox nslookup allowed.test 192.0.2.53 >\$r/nslookup 2>&1; echo \$? >\$r/nslookup.rc
EOF
sv --no-web --ask none --hosts "$TMP/hosts" -- sh "$TMP/agent.sh"
tap_is "$rc" 0 "the agent ran" "$(diag)"
tap_is "$(rc_of http) $(cat "$R/http")" "0 hello-from-test" "curl reaches an allowed name over HTTP"
tap_is "$(rc_of https) $(grep -c 'Ciphers supported' "$R/https")" "0 1" \
	"curl reaches an allowed name over TLS (named by SNI)"
tap_is "$(rc_of sclient)" 0 "openssl s_client reaches an allowed name" "$(tail -5 "$R/sclient")"
tap_is "$(rc_of wget) $(cat "$R/wget")" "0 hello-from-test" "wget reaches an allowed name"
tap_is "$(rc_of bbwget) $(cat "$R/bbwget")" "0 hello-from-test" \
	"busybox wget reaches an allowed name" "$(cat "$R/bbwget.err")"
tap_is "$(rc_of echo) $(cat "$R/echo")" "0 ping" \
	"a raw TCP service is named through the resolver's fake address"
tap_is "$(rc_of eof) $(cat "$R/eof")" "0 banner-from-test" \
	"a client that sends EOF before any byte is relayed and gets the server's answer" \
	"$(cat "$R/eof.err")"
first_ms=$(sed -n 's/^first-ms //p' "$R/first.err")
tap_is "$(rc_of first) $(tr '\n' ' ' <"$R/first")" "0 banner-from-test QUIT " \
	"a client that waits for the server to speak first gets its banner, then talks" \
	"$(cat "$R/first.err")"
tap_ok "$([ "${first_ms:-0}" -ge 250 ] && [ "${first_ms:-0}" -lt 3000 ] && echo 0 || echo 1)" \
	"... after the proxy's short sniff deadline (${first_ms:-?} ms)"
tap_is "$(rc_of v6name) $(cat "$R/v6name")" "0 hello-from-test" \
	"an allowed name with an IPv6 upstream works"
tap_ok "$([ "$(rc_of denied_dns)" != 0 ] && echo 0 || echo 1)" \
	"a denied name does not resolve (NXDOMAIN)"
tap_ok "$([ "$(rc_of denied)" != 0 ] && echo 0 || echo 1)" \
	"a denied name reached by address fails" "$(cat "$R/denied")"
tap_ok "$([ "$(cat "$R/denied.ms")" -lt 2000 ] && echo 0 || echo 1)" \
	"... fast ($(cat "$R/denied.ms") ms)"
tap_ok "$([ "$(rc_of ip)" != 0 ] && echo 0 || echo 1)" \
	"a direct connect to an IP, proxy variables unset, does not get out" "$(cat "$R/ip")"
tap_ok "$([ "$(rc_of ip6)" != 0 ] && echo 0 || echo 1)" "nor to an IPv6 literal"
tap_ok "$([ "$(rc_of meta)" != 0 ] && echo 0 || echo 1)" "the metadata address is refused"
tap_like "$(grep '169.254.169.254' "$AUDIT" | tail -1)" '"verdict":"deny"' \
	"... and the audit log says so"
tap_is "$(rc_of udp) $(cat "$R/udp")" "1 udpsend: Operation not permitted" \
	"UDP to another port is dropped"
tap_ok "$([ "$(rc_of ping)" != 0 ] && echo 0 || echo 1)" "ICMP does not get out"
tap_like "$(cat "$R/nslookup")" "198\.18\.|fd63:" \
	"DNS to another resolver is answered by ours (a fake address)"
tap_like "$(grep '"summary":"allowed.test:80"' "$AUDIT" | grep bytes_down | tail -1)" \
	'"bytes_down":[1-9]' "the audit log has each connection with its bytes"

# ---- an unlisted name: a domain card, decided through the API with project scope ------------
export XDG_RUNTIME_DIR="$TMP/xdg-run"
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
(cd "$TMP" && exec timeout -k 5 40 "$SUPERVISOR" run -v --config-dir "$CFG" --project demo --ask web \
	--listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request off \
	--listen-proxy 127.0.0.1:0 --hosts "$TMP/hosts" -- \
	sh -c "curl -sS -m 30 http://unlisted.test/ >$R/unl 2>&1; echo \$? >$R/unl.rc; \
	       while [ ! -e $R/stop ]; do sleep 0.1; done" \
	</dev/null >"$TMP/bg.out" 2>"$TMP/bg.err") &
bg=$!
stop_bg() {
	touch "$R/stop"
	kill "$bg" 2>/dev/null
}
on_exit stop_bg
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
id=""
i=0
while [ -z "$id" ] && [ $i -lt 100 ]; do
	id=$(curl -s -H "Authorization: Bearer $TOK" "$URL/pending-domains" |
		sed -n 's/.*"id":"\([0-9a-f]*\)".*"domain":"unlisted.test:80".*/\1/p')
	[ -n "$id" ] || sleep 0.1
	i=$((i + 1))
done
tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "an unlisted name waits as a domain card" \
	"$(cat "$TMP/bg.err")"
tap_ok "$([ ! -e "$R/unl.rc" ] && echo 0 || echo 1)" "... and the connection is held meanwhile"
tap_like "$(curl -s -H "Authorization: Bearer $TOK" "$URL/pending-domains")" \
	'"exe":"[^"]*curl","args":\["curl","-sS"' \
	"the card names the process that connected (pid, exe, argv)"
out=$("$SUPERVISOR" pending 2>&1)
tap_like "$out" "^$id .* unlisted\\.test:80\$" "the CLI's pending lists the domain card" "$out"
out=$("$SUPERVISOR" show "$id" 2>&1)
tap_like "$out" "^domain +unlisted\\.test:80\$" "... and show ID names its domain" "$out"
resp=$(curl -s -X POST -H "Authorization: Bearer $TOK" -d '{"scope":"project"}' \
	"$URL/approve-domain/$id")
tap_like "$resp" '"status":"approved","scope":"project"' "approved with scope project"
i=0
while [ ! -e "$R/unl.rc" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
tap_is "$(rc_of unl) $(cat "$R/unl")" "0 hello-from-test" "the held connection goes through"
tap_like "$(cat "$CFG/decisions/projects/demo.yaml" 2>/dev/null)" "unlisted.test" \
	"the decision is in the project's decisions file"
tap_is "$(stat -c %a "$CFG/decisions/projects/demo.yaml" 2>/dev/null)" 600 \
	"... mode 0600"

# ---- the CONNECT proxy from the host, on the same supervisor ---------------------------------
PPORT=$(sed -n 's/.*CONNECT proxy at 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/bg.err" | head -1)
CTOK=connect-test-token-0123456789
curl -s -X POST -H "Authorization: Bearer $TOK" \
	-d "{\"token\":\"$CTOK\",\"cloister\":\"outside\",\"project\":\"demo\"}" "$TOKURL/tokens" \
	>/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -p -x "http://127.0.0.1:$PPORT" \
	-k https://allowed.test/ 2>/dev/null)
tap_is "$code" 000 "CONNECT without credentials is refused (407)"
first=$(printf 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n' |
	busybox nc -w 2 127.0.0.1 "$PPORT" | head -1 | tr -d '\r')
tap_like "$first" "^HTTP/1.1 407" "... with 407 Proxy Authentication Required"
out=$(curl -sS -m 5 -k -x "http://cloister:$CTOK@127.0.0.1:$PPORT" https://allowed.test/ 2>&1)
tap_like "$out" "Ciphers supported" "CONNECT with the token reaches an allowed name"
auth=$(printf 'cloister:%s' "$CTOK" | base64 -w0)
denied=$(printf 'CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\nProxy-Authorization: Basic %s\r\n\r\n' "$auth" |
	busybox nc -w 2 127.0.0.1 "$PPORT" | tr -d '\r')
tap_like "$denied" "^HTTP/1.1 403" "CONNECT to a denied name gets 403"
tap_like "$denied" '\{"error": ?"domain not in allowlist", ?"domain": ?"denied.test' \
	"... with the JSON body"
out=$(curl -sS -m 5 -p -x "http://cloister:$CTOK@127.0.0.1:$PPORT" http://unlisted.test/ 2>&1)
tap_is "$out" "hello-from-test" "the project's new decision holds for CONNECT clients too"
touch "$R/stop"
wait "$bg" 2>/dev/null

# ---- after a restart the project decision still holds ----------------------------------------
rm -f "$R/unl" "$R/unl.rc"
sv --no-web --ask none --project demo --hosts "$TMP/hosts" -- \
	sh -c "curl -sS -m 5 http://unlisted.test/ >$R/unl 2>&1; echo \$? >$R/unl.rc"
tap_is "$(rc_of unl) $(cat "$R/unl")" "0 hello-from-test" \
	"after a restart the project decision allows the name without asking"

# ---- --net host: the host's network, the eBPF redirect on the sandbox's cgroup --------------
cat >"$TMP/agent_host.sh" <<AGENT
r=$R
curl -sS -m 5 http://allowed.test/ >\$r/h_http 2>&1; echo \$? >\$r/h_http.rc
getent hosts denied.test >/dev/null; echo \$? >\$r/h_dns.rc
curl -sS -m 5 http://$SRV4/ >\$r/h_ip 2>&1; echo \$? >\$r/h_ip.rc
$HELPERS/udpsend $SRV4 9999 >\$r/h_udp 2>&1; echo \$? >\$r/h_udp.rc
AGENT
sv --no-web --ask none --net host --hosts "$TMP/hosts" -- sh "$TMP/agent_host.sh"
tap_is "$(rc_of h_http) $(cat "$R/h_http")" "0 hello-from-test" \
	"--net host: an allowed name goes through the proxy" "$(diag)"
tap_ok "$([ "$(rc_of h_dns)" != 0 ] && echo 0 || echo 1)" "--net host: a denied name does not resolve"
tap_ok "$([ "$(rc_of h_ip)" != 0 ] && echo 0 || echo 1)" \
	"--net host: a direct connect to an address does not get out" "$(cat "$R/h_ip")"
tap_is "$(rc_of h_udp) $(cat "$R/h_udp")" "1 udpsend: Operation not permitted" \
	"--net host: UDP to another port is refused"

# ---- the agent cannot approve its own asks ----------------------------------------------------
# On the host's network the dashboard's port is refused to it (run_nethost.sh has the
# details), so a forged Origin header never gets there; the secret's directory is hidden.
cat >"$TMP/agent_self.sh" <<AGENT
port=\$(sed -n 's/.*"url":"http:\/\/127.0.0.1:\([0-9]*\)".*/\1/p' $TMP/portfile)
curl -s -o /dev/null -w '%{http_code}' -X POST -H "Origin: http://127.0.0.1:\$port" \
	"http://127.0.0.1:\$port/approve/0123456789ab" >$R/self
cat "$XDG_RUNTIME_DIR/cloister/secret" >$R/secret 2>&1; echo \$? >$R/secret.rc
AGENT
cat "$XDG_RUNTIME_DIR"/cloister/api/*.json >"$TMP/portfile" 2>/dev/null
(cd "$TMP" && exec timeout -k 5 30 "$SUPERVISOR" run --config-dir "$CFG" --ask web --net host \
	--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off -- sh -c \
	"i=0; while [ ! -s $TMP/portfile ] && [ \$i -lt 200 ]; do sleep 0.1; i=\$((i + 1)); done; sh $TMP/agent_self.sh" \
	</dev/null >"$TMP/self.out" 2>"$TMP/self.err") &
selfpid=$!
i=0
while [ $i -lt 100 ]; do
	for f in "$XDG_RUNTIME_DIR"/cloister/api/*.json; do
		[ -f "$f" ] && cat "$f" >"$TMP/portfile"
	done
	[ -s "$TMP/portfile" ] && break
	sleep 0.1
	i=$((i + 1))
done
wait "$selfpid"
tap_is "$(cat "$R/self")" 000 "an agent that forges the dashboard's Origin cannot even connect" \
	"$(cat "$TMP/self.err")"
tap_ok "$([ "$(rc_of secret)" != 0 ] && echo 0 || echo 1)" \
	"the dashboard's secret is hidden from the agent" "$(cat "$R/secret")"
tap_done
