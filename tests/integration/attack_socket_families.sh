#!/bin/sh
# Attack: a socket family that netfilter and the eBPF hooks never see. The sandbox's network
# namespace and the cgroup hooks confine IPv4 and IPv6; AF_VSOCK is not network-namespaced,
# and on a virtual machine it reaches the hypervisor's host (CID 2) and its services (a
# Firecracker vsock proxy, a QEMU guest agent, WSL2's host) past the proxy. This kernel has a
# vsock transport (the machine is a VM), so the agent can open AF_VSOCK sockets, as root and as
# an unprivileged user, in its own network namespace and on the host's network. The test never
# connects anywhere: creating the socket is the hole. What holds (the seccomp filter's
# allow-list of families): beyond AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, no address family
# the user can use outside is open inside. Skipped where no other family is open outside.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
attack_setup
# The families (numbers) a socket of some type can be created in, but the four above and
# AF_PACKET (refused by the filter, tested in run_confine_root.sh).
cat >"$TMP/families.py" <<'EOF'
import socket
names = {v: k for k, v in vars(socket).items() if k.startswith("AF_") and isinstance(v, int)}
names[44] = "AF_XDP"
open_ = []
for fam in range(1, 46):
    if fam in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, 16, 17):
        continue
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_RAW):
        try:
            socket.socket(fam, typ).close()
        except OSError:
            continue
        open_.append(names.get(fam, str(fam)))
        break
print(" ".join(open_) or "none")
EOF
chmod 644 "$TMP/families.py"

outside_root=$("$PY" "$TMP/families.py")
outside_nobody=$(as_nobody "$PY" "$TMP/families.py")
echo "# open outside: root: $outside_root; nobody: $outside_nobody"
if [ "$outside_root" = none ] && [ "$outside_nobody" = none ]; then
	i=0
	while [ $i -lt $PLAN ]; do
		tap_skip "$(basename "$0")" "no address family beyond unix, inet, inet6, netlink and packet is open on this machine"
		i=$((i + 1))
	done
	exit 0
fi

# inside WHO RUN-OPTIONS…: the families open inside the sandbox, as WHO.
inside() {
	who=$1
	shift
	if [ "$who" = root ]; then
		sv --ask none "$@" -- "$PY" "$TMP/families.py"
	else
		cp "$TMP/families.py" "$U/families.py"
		sv_nobody --ask none "$@" -- "$PY" "$U/families.py"
	fi
	cat "$OUT"
}

# case WHO WHAT OUTSIDE RUN-OPTIONS…
case_of() {
	who=$1
	what=$2
	outside=$3
	shift 3
	got=$(inside "$who" "$@")
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who, $what: the probe ran" "$(diag)"
	tap_is "$got" none "$who, $what: no other socket family (outside: $outside)"
}
case_of root "own network namespace" "$outside_root"
case_of root "--net host" "$outside_root" --net host --allow-abstract-sockets
case_of nobody "own network namespace" "$outside_nobody"

tap_done
