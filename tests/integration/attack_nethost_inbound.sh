#!/bin/sh
# Attack: on the host's network (`run --net host`), a route out that needs no allowed
# connection: the agent listens on the host's addresses and a machine outside connects in.
# The eBPF hooks decide what the agent connects to and sends, not what it accepts, so a peer
# (here: a network namespace of the test joined by a veth pair, as a machine on the LAN would
# be) reaches a listener the agent bound on 0.0.0.0, on [::] and on the host's own address,
# and reads what the agent sends back over the accepted connection. What must hold: the agent
# listens on loopback only (its dev servers keep working there; a case checks that). Root
# only: --net host needs root. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

PLAN=5
run_needs_root $PLAN
run_needs_tools $PLAN python3 ip
tap_plan $PLAN

server_ns_up ai 82
HOST4=${SRV4%.2}.1
HOST6=${SRV6%::2}::1
write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
R=$TMP/r
mkdir -p "$R"
# The agent: one listener per address given, each answering one client with "agent-data:"
# and what the client sent. The ports it got go to $R/port-N, then $R/ready.
cat >"$TMP/listen.py" <<'EOF'
import socket, sys, threading
out = sys.argv[1]
def serve(i, addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, 0))
    s.listen(4)
    with open("%s/port-%d" % (out, i), "w") as f:
        f.write(str(s.getsockname()[1]))
    s.settimeout(20)
    try:
        c, peer = s.accept()
        data = c.recv(100)
        c.sendall(b"agent-data:" + data)
        c.close()
        with open("%s/accepted-%d" % (out, i), "w") as f:
            f.write(peer[0])
    except OSError:
        pass
threads = [threading.Thread(target=serve, args=(i, a)) for i, a in enumerate(sys.argv[2:])]
for t in threads:
    t.start()
open(out + "/ready", "w").close()
for t in threads:
    t.join()
EOF
# client [NS] ADDR PORT: connect (from the server namespace with "ns"), send "hello", print
# the answer or the error.
CLIENT='
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    s.sendall(b"hello")
    print(s.recv(100).decode())
except (OSError, ValueError) as e:
    print("error:", e)
'
client() {
	if [ "$1" = ns ]; then
		shift
		in_server_ns python3 -c "$CLIENT" "$@" 2>&1
	else
		shift
		python3 -c "$CLIENT" "$@" 2>&1
	fi
}
port() { cat "$R/port-$1" 2>/dev/null; }

(cd "$TMP" && exec timeout -k 5 40 "$SUPERVISOR" run --config-dir "$CFG" --net host --ask none \
	-- /usr/bin/python3 "$TMP/listen.py" "$R" 0.0.0.0 :: "$HOST4" 127.0.0.1) \
	</dev/null >"$OUT" 2>"$ERR" &
svpid=$!
on_exit "kill $svpid 2>/dev/null"
wait_exists 20 "$R/ready"
tap_ok $? "the agent runs its listeners on the host's network" "$(diag)"

tap_todo "--net host: what the agent accepts is not confined (no bind hook): a way in and out"
# not_reached ANSWER: 0 unless the agent answered.
not_reached() { case $1 in agent-data*) echo 1 ;; *) echo 0 ;; esac; }
got=$(client ns "$HOST4" "$(port 0)")
tap_ok "$(not_reached "$got")" \
	"a peer outside cannot reach the agent's listener on 0.0.0.0 (through $HOST4)" "got: $got"
got=$(client ns "$HOST6" "$(port 1)")
tap_ok "$(not_reached "$got")" "nor its listener on [::] (through $HOST6)" "got: $got"
got=$(client ns "$HOST4" "$(port 2)")
tap_ok "$(not_reached "$got")" "nor one bound on the host's own address $HOST4" "got: $got"
tap_todo ""
tap_is "$(client local 127.0.0.1 "$(port 3)")" "agent-data:hello" \
	"the agent's listener on loopback still serves the host (a dev server)"
kill "$svpid" 2>/dev/null
wait "$svpid" 2>/dev/null

tap_done
