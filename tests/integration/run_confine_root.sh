#!/bin/sh
# A root agent is contained too (issue 12, "root agent"), in its own network namespace and on
# the host's network: it cannot open an AF_PACKET socket, write cgroup.procs to leave the
# sandbox's cgroup (the backstop and the egress hooks are attached there), unmount the tmpfs
# over /run/cloister or read the dashboard secret, read the host's disk, or write the kernel's
# sysctls; its capability sets are the reduced ones, no_new_privs holds, and a program with
# file capabilities gains nothing.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=22
run_needs_root $PLAN
run_needs_tools $PLAN setcap
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
CG=$(cgroup2_root)
# A block device the host reads data from (the agent must read nothing of it).
BLK=""
for b in /dev/*; do
	[ -b "$b" ] || continue
	if [ "$(dd if="$b" bs=512 count=1 2>/dev/null | wc -c)" -eq 512 ]; then
		BLK=$b
		break
	fi
done
# A program whose file capabilities name CAP_SYS_ADMIN and CAP_NET_RAW (permitted, without
# the effective bit: with it, the kernel refuses to run a program it cannot give them all).
cp /usr/bin/cat "$TMP/capcat"
setcap cap_sys_admin,cap_net_raw+ip "$TMP/capcat"

# Kept: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP AUDIT_WRITE SETFCAP, and
# NET_BIND_SERVICE in a network namespace of its own.
CAPS_NETNS=00000000a00005fb
CAPS_HOST=00000000a00001fb

cat >"$TMP/agent.sh" <<EOF
R=\$1
$HELPERS/confine_probe packet >\$R/packet 2>&1
cg=\$(awk '\$0 ~ / - cgroup2 / { print \$5 }' /proc/self/mountinfo | tail -n 1)
{ echo \$\$ >"\$cg/cgroup.procs"; } 2>\$R/cgroup.err; echo "rc=\$?" >\$R/cgroup
umount /run/cloister >\$R/umount 2>&1; echo "rc=\$?" >>\$R/umount
umount -l /run/cloister >>\$R/umount 2>&1; echo "rc=\$?" >>\$R/umount
cat /run/cloister/secret >\$R/secret 2>&1; echo "rc=\$?" >>\$R/secret
if [ -n "$BLK" ]; then dd if=$BLK bs=512 count=1 2>/dev/null | wc -c >\$R/disk; else echo 0 >\$R/disk; fi
cat /proc/sys/kernel/core_pattern >\$R/core_pattern.old
cat \$R/core_pattern.old >/proc/sys/kernel/core_pattern 2>\$R/sysctl; echo "rc=\$?" >>\$R/sysctl
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status >\$R/status
$TMP/capcat /proc/self/status | grep -E '^CapEff:' >\$R/filecaps
touch \$R/ready
while [ ! -e \$R/go ]; do sleep 0.05; done
exit 0
EOF

# one MODE NAME [RUN OPTIONS]: a run; while the agent waits (after its escape attempt), the
# sandbox's leaf still holds it.
one() {
	mode=$1
	name=$2
	shift 2
	R=$TMP/r-$name
	mkdir -p "$R"
	(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" \
		--ask none --name "$name" "$@" -- sh "$TMP/agent.sh" "$R") </dev/null >"$OUT" 2>"$ERR" &
	svpid=$!
	i=0
	while [ ! -e "$R/ready" ] && [ $i -lt 150 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	leaf_procs=$(cat "$CG"/cloister/"$name"-*/cgroup.procs 2>/dev/null | wc -l)
	touch "$R/go"
	wait $svpid
	rc=$?
	tap_is "$rc" 0 "$mode: the run ends normally" "$(diag)"
	tap_like "$(cat "$R/packet")" '^packet: (Operation not permitted|Address family not supported)' \
		"$mode: no AF_PACKET socket" "$(cat "$R/packet")"
	tap_like "$(cat "$R/cgroup") $(cat "$R/cgroup.err")" '^rc=[1-9].*Read-only file system' \
		"$mode: writing cgroup.procs fails (read-only)" "$(cat "$R/cgroup.err")"
	tap_ok "$([ "$leaf_procs" -ge 2 ] && echo 0 || echo 1)" \
		"$mode: ... and the agent is still in the sandbox's cgroup ($leaf_procs processes)"
	tap_is "$(grep -c 'rc=0' "$R/umount")" 0 "$mode: the tmpfs over /run/cloister stays" \
		"$(cat "$R/umount")"
	tap_like "$(cat "$R/secret")" 'No such file or directory' \
		"$mode: the dashboard secret is not there to read" "$(cat "$R/secret")"
	if [ -n "$BLK" ]; then
		tap_is "$(cat "$R/disk")" 0 "$mode: the host's disk ($BLK) reads nothing"
	else
		tap_skip "$mode: the host's disk" "no readable block device in /dev"
	fi
	tap_like "$(cat "$R/sysctl")" 'rc=[1-9]' "$mode: the kernel's sysctls are read-only" \
		"$(cat "$R/sysctl")"
	want=$CAPS_NETNS
	[ "$mode" = "--net host" ] && want=$CAPS_HOST
	tap_is "$(tr -s '\t ' ' ' <"$R/status" | tr '\n' ' ')" \
		"CapInh: 0000000000000000 CapPrm: $want CapEff: $want CapBnd: $want CapAmb: 0000000000000000 NoNewPrivs: 1 " \
		"$mode: capabilities reduced in every set, no_new_privs"
	tap_is "$(tr -s '\t ' ' ' <"$R/filecaps")" "CapEff: $want" \
		"$mode: a program with file capabilities gains nothing"
}

[ -n "$CG" ] || echo "# no cgroup2 mount: the cgroup checks will fail"
[ -e /run/cloister/secret ] || echo "# /run/cloister/secret does not exist before the run"
one netns rootcg$$
tap_ok "$([ -e /run/cloister/secret ] && echo 0 || echo 1)" \
	"the secret exists on the host (so the agent's failure to read it means something)"
one "--net host" rootcgh$$ --net host
tap_is "$(cat /proc/sys/kernel/core_pattern)" "$(cat "$TMP/r-rootcg$$/core_pattern.old")" \
	"the host's core_pattern is untouched"

tap_done
