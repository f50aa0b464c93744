#!/bin/sh
# Names resolve on the host's side as the host resolves them: the proxy's lookups consult the
# hosts file and follow nsswitch.conf's `hosts:` order of files and dns, `--hosts FILE` adds a
# file consulted first, a changed hosts file is read again, and whatever a file maps a name to
# still goes through the proxy's refusals (loopback, metadata). The machine's /etc is never
# touched: CLOISTER_SYSTEM_HOSTS and CLOISTER_NSSWITCH_CONF point at the test's own files.
# As root and as an ordinary user.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

PLAN=13
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl busybox ip
tap_plan $PLAN

server_ns_up hs 81
mkdir -p "$TMP/www"
echo "hello-hosts" >"$TMP/www/index.html"
in_server_ns busybox httpd -f -p 80 -h "$TMP/www" &

ETC=$TMP/etc
mkdir -p "$ETC"
# put FILE TEXT: write the test's FILE anew and rename it into place, as /etc is edited.
put() {
	printf '%s' "$2" >"$ETC/$1.new" && mv "$ETC/$1.new" "$ETC/$1"
}
put hosts "$SRV4 corp.test
127.0.0.1 sneaky.maps.test
169.254.169.254 meta.maps.test
"
put nsswitch.conf "hosts: files mdns4_minimal [NOTFOUND=return] dns myhostname
"
printf '%s extra.test\n' "$SRV4" >"$TMP/extra-hosts"
write_config <<'EOF'
proxy:
  allow:
    - domain: corp.test
    - domain: extra.test
    - domain: later.test
    - pattern: "*.maps.test"
  unlisted_domain_behavior: reject
  defaults: false
exec:
  security: full
  defaults: false
EOF
chmod -R a+rX "$ETC" "$TMP/extra-hosts" "$TMP/www"

R=$TMP/r
mkdir -p "$R"
rc_of() { cat "$R/$1.rc" 2>/dev/null; }
# The agent: fetch NAME (the output in $R/NAME, the status in $R/NAME.rc).
fetch() { echo "curl -sS -m 8 http://$1/ >$R/$1 2>&1; echo \$? >$R/$1.rc"; }
{
	fetch corp.test
	fetch extra.test
	echo "curl -sS -m 5 http://sneaky.maps.test:9/ >$R/sneaky 2>&1; echo \$? >$R/sneaky.rc"
	echo "curl -sS -m 5 http://meta.maps.test/ >$R/meta 2>&1; echo \$? >$R/meta.rc"
	fetch later.test
	echo "touch $R/first-done"
	# A bounded wait for the test to map later.test, then for the proxy to see it.
	echo "i=0; while [ ! -e $R/mapped ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done"
	echo "i=0; until curl -sS -m 3 http://later.test/ >$R/later2 2>&1; do"
	echo "  [ \$i -lt 50 ] || break; i=\$((i + 1)); sleep 0.2"
	echo "done; echo \$? >$R/later2.rc"
} >"$TMP/agent.sh"
(
	i=0
	while [ ! -e "$R/first-done" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	put hosts "$SRV4 corp.test later.test
127.0.0.1 sneaky.maps.test
169.254.169.254 meta.maps.test
"
	touch "$R/mapped"
) &
mapper=$!
on_exit "kill $mapper 2>/dev/null"
CLOISTER_SYSTEM_HOSTS=$ETC/hosts CLOISTER_NSSWITCH_CONF=$ETC/nsswitch.conf \
	sv -v --no-web --ask none --hosts "$TMP/extra-hosts" -- sh "$TMP/agent.sh"
wait "$mapper"
tap_is "$rc" 0 "the agent ran" "$(diag)"
tap_is "$(rc_of corp.test) $(cat "$R/corp.test")" "0 hello-hosts" \
	"a name of the hosts file resolves on the host side (files before dns)"
tap_is "$(rc_of extra.test) $(cat "$R/extra.test")" "0 hello-hosts" \
	"--hosts adds a file of its own"
tap_like "$(cat "$ERR")" "names resolve through $TMP/extra-hosts, then files \($ETC/hosts\), dns; skipped: mdns4_minimal myhostname" \
	"run -v says which sources, in which order, and which nsswitch services are skipped"
tap_ok "$([ "$(rc_of sneaky)" != 0 ] && echo 0 || echo 1)" \
	"a name the hosts file maps to loopback is refused" "$(cat "$R/sneaky")"
tap_like "$(grep '"summary":"sneaky.maps.test:9"' "$AUDIT" | tail -1)" \
	'"verdict":"deny".*restricted address' "... by the proxy's address check, as a DNS answer would be"
tap_like "$(grep '"summary":"meta.maps.test:80"' "$AUDIT" | tail -1)" \
	'"verdict":"deny".*restricted address' "a name mapped to the metadata address is refused"
tap_ok "$([ "$(rc_of later.test)" != 0 ] && echo 0 || echo 1)" \
	"a name not in the file (and not in DNS) does not resolve" "$(cat "$R/later.test")"
tap_is "$(rc_of later2) $(cat "$R/later2")" "0 hello-hosts" \
	"a hosts file changed while the run goes on is read again"

# ---- nsswitch.conf without `files`: the hosts file is not consulted --------------------------
put nsswitch.conf "hosts: dns
"
rm -f "$R"/*
{
	fetch corp.test
	fetch extra.test
} >"$TMP/agent.sh"
CLOISTER_SYSTEM_HOSTS=$ETC/hosts CLOISTER_NSSWITCH_CONF=$ETC/nsswitch.conf \
	sv --no-web --ask none --hosts "$TMP/extra-hosts" -- sh "$TMP/agent.sh"
tap_ok "$([ "$(rc_of corp.test)" != 0 ] && echo 0 || echo 1)" \
	"with \"hosts: dns\" the hosts file is not consulted" "$(cat "$R/corp.test")"
tap_is "$(rc_of extra.test) $(cat "$R/extra.test")" "0 hello-hosts" \
	"... but the file given with --hosts still is"

# ---- an ordinary user's supervisor -----------------------------------------------------------
put nsswitch.conf "hosts: files dns
"
NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/r"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$CFG/config.yaml" "$U/cfg/config.yaml"
cat >"$U/agent.sh" <<EOF
curl -sS -m 8 http://corp.test/ >$U/r/corp 2>&1; echo \$? >$U/r/corp.rc
curl -sS -m 5 http://sneaky.maps.test:9/ >$U/r/sneaky 2>&1; echo \$? >$U/r/sneaky.rc
EOF
chown -R "$NOBODY:$NOBODY" "$U"
(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
	CLOISTER_SYSTEM_HOSTS="$ETC/hosts" CLOISTER_NSSWITCH_CONF="$ETC/nsswitch.conf" \
	"$U/cloister-supervisor" run --config-dir "$U/cfg" --ask none -- sh "$U/agent.sh") \
	</dev/null >"$OUT" 2>"$ERR"
tap_is "$(cat "$U/r/corp.rc" 2>&1) $(cat "$U/r/corp" 2>&1)" "0 hello-hosts" \
	"non-root: a name of the hosts file resolves" "$(diag)"
tap_like "$(grep '"summary":"sneaky.maps.test:9"' "$U/state/cloister/audit.log" 2>&1 | tail -1)" \
	'"verdict":"deny".*restricted address' "non-root: a name mapped to loopback is refused"

tap_done
