#!/bin/sh
# Egress for a supervisor run by an ordinary user: the sandbox's netns then belongs to the
# sandbox's own user namespace, and the supervisor (without CAP_SYS_ADMIN on the host) enters
# it through that user namespace, which it owns, to install the route, the nftables rules and
# the listeners. The agent reaches an allowed name through the proxy; a denied one, a direct IP
# and other UDP do not get out.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl busybox ip
tap_plan $PLAN

# ---- a server in a namespace of the test, joined to ours by a veth pair ----------------------
server_ns_up eu 78
mkdir -p "$TMP/www"
echo "hello-user" >"$TMP/www/index.html"
ip netns exec "$NS" busybox httpd -f -p 80 -h "$TMP/www" &

# ---- the user's own supervisor, config and state ---------------------------------------------
NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/r"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/udpsend" "$U/udpsend"
cat >"$U/cfg/config.yaml" <<'EOF'
proxy:
  allow:
    - domain: allowed.test
  deny:
    - domain: denied.test
  defaults: false
exec:
  security: full
  defaults: false
EOF
printf '%s allowed.test denied.test\n' "$SRV4" >"$U/hosts"
chown -R "$NOBODY:$NOBODY" "$U"
R=$U/r
cat >"$U/agent.sh" <<EOF
curl -sS -m 5 http://allowed.test/ >$R/http 2>&1; echo \$? >$R/http.rc
curl -sS -m 5 http://denied.test/ >$R/denied 2>&1; echo \$? >$R/denied.rc
curl -sS -m 3 http://$SRV4/ >$R/direct 2>&1; echo \$? >$R/direct.rc
$U/udpsend $SRV4 5353 >$R/udp 2>&1; echo \$? >$R/udp.rc
EOF

(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
	"$U/cloister-supervisor" run --config-dir "$U/cfg" --hosts "$U/hosts" --ask none \
	-- sh "$U/agent.sh") </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 0 "a non-root run with egress ends normally" "$(diag)"
tap_ok "$(grep -q 'no network for the agent' "$ERR" && echo 1 || echo 0)" \
	"non-root: the sandbox gets its network (rules and listeners in its netns)" "$(diag)"
tap_is "$(cat "$R/http.rc" 2>&1):$(cat "$R/http" 2>&1)" "0:hello-user" \
	"non-root: the agent reaches an allowed name through the proxy"
tap_is "$(cat "$R/denied.rc" 2>&1)" 6 "non-root: a denied name does not resolve (curl: 6)" \
	"$(cat "$R/denied" 2>&1)"
tap_like "$(cat "$R/direct.rc" 2>&1)" '^(7|52|56)$' \
	"non-root: a direct IP connect is decided by the proxy: refused (reset)" "$(cat "$R/direct" 2>&1)"
tap_like "$(cat "$ERR")" "connection to $SRV4:80 denied" "non-root: and the supervisor says so" "$(diag)"
tap_is "$(cat "$R/udp.rc" 2>&1) $(cat "$R/udp" 2>&1)" "1 udpsend: Operation not permitted" \
	"non-root: UDP to another host is refused"
AUD=$U/state/cloister/audit.log
tap_like "$(grep '"kind":"domain"' "$AUD" 2>&1)" '"summary":"allowed.test:80".*"verdict":"allow"' \
	"non-root: the connection is in the user's audit log"

tap_done
