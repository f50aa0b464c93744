# Sourced after run_common.sh: servers of the test in a network namespace of their own.
#
#   server_ns_up TAG OCTET   create the namespace cloister-TAG-$$ joined to ours by a veth
#                            pair: ours 10.OCTET.X.1, the namespace's $SRV4 = 10.OCTET.X.2,
#                            and IPv6 fdOCTET:X::1 / $SRV6 = fdOCTET:X::2 (X from our pid);
#                            $NS names it. It, its processes and the veth go at exit.
#   in_server_ns COMMAND…    run COMMAND in it
# Tests running at once pick different OCTETs (run_egress 77, run_egress_user 78, oci_runc 79).
# shellcheck shell=sh

server_ns_up() {
	X=$(($$ % 200 + 20))
	NS=cloister-$1-$$
	server_ns_veth=cl$1$$
	SRV4=10.$2.$X.2
	SRV6=fd$2:$X::2
	ip netns add "$NS"
	on_exit server_ns_down
	ip link add "${server_ns_veth}h" type veth peer name "${server_ns_veth}s"
	ip link set "${server_ns_veth}s" netns "$NS"
	ip addr add "10.$2.$X.1/24" dev "${server_ns_veth}h"
	ip -6 addr add "fd$2:$X::1/64" dev "${server_ns_veth}h" nodad
	ip link set "${server_ns_veth}h" up
	in_server_ns ip addr add "$SRV4/24" dev "${server_ns_veth}s"
	in_server_ns ip -6 addr add "$SRV6/64" dev "${server_ns_veth}s" nodad
	in_server_ns ip link set "${server_ns_veth}s" up
	in_server_ns ip link set lo up
}

in_server_ns() { ip netns exec "$NS" "$@"; }

server_ns_down() {
	ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null
	ip link del "${server_ns_veth}h" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}
