#!/bin/sh
# The sandbox's task limit. A fork bomb (or a program cloning threads until it fails) needs no
# allowed exec and no connection to take the host's pids, make them be reused at once and bring
# the person's machine down. The kernel holds the limit: the cgroup's pids.max as root (a v1
# companion leaf on a hybrid hierarchy), RLIMIT_NPROC in the sandbox's user namespace for a
# user. A bounded bomb (tests/helpers/forkbomb) stops at the limit; the agent tries to leave its
# cgroup and to raise the limit, and the bomb stops at the same count after; the built-in
# default applies without options, the config key and the option change it; the person gets
# one line (as root); the user's own processes on the host are not counted, and the host still
# forks. The agent's oom_score_adj is raised (the OOM killer takes it first) and it cannot
# shield itself. As root and as a user. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=34
run_needs_root $PLAN
run_needs_tools $PLAN setpriv bash setsid pgrep
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/home"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/forkbomb" "$U/forkbomb"
cat >"$U/cfg/config.yaml" <<'EOF'
exec:
  security: full
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
CG2=$(cgroup2_root)
V1=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)pids(,|$)/ { print $5; exit }' /proc/self/mountinfo)
NAME=pids$$
F=$U/forkbomb

# What the agent sees of its limit: RLIMIT_NPROC's hard value, and every pids.max it can read
# (cgroup2's, at its cgroup namespace's root, or its v1 companion leaf).
cat >"$U/show.sh" <<EOF
echo "nproc \$(ulimit -Hu)"
for f in "$CG2/pids.max" "$V1"/cloister/$NAME-*/pids.max; do
	[ -r "\$f" ] && echo "pids.max \$(cat "\$f")"
done
echo "oom \$(cat /proc/self/oom_score_adj)"
(echo -1000 >/proc/self/oom_score_adj) 2>/dev/null
echo "oom after \$(cat /proc/self/oom_score_adj)"
exit 0
EOF
# The bomb as the attack starts it (bash, a subshell that execs it): the same count of tasks.
cat >"$U/bomb.sh" <<EOF
echo "bomb \$($F fork 1000)"
EOF
# With --allow-nested-sandbox: root in a user namespace of its own (uid 0 mapped to itself as
# root), a cgroup namespace of its own, the cgroup hierarchies mounted again, writable there,
# every pids.max in them set to max, the rlimits raised; then the bomb.
cat >"$U/nested.sh" <<EOF
exec unshare -Ur --cgroup --mount bash -c '
	mkdir -p /tmp/v1 /tmp/v2
	mount -t cgroup -o pids none /tmp/v1 2>/dev/null && echo "mounted v1"
	mount -t cgroup2 none /tmp/v2 2>/dev/null && echo "mounted v2"
	for f in /tmp/v1/pids.max /tmp/v2/pids.max; do
		[ -e "\$f" ] && (echo max >"\$f") 2>/dev/null && echo "wrote \$f"
	done
	ulimit -Hu unlimited 2>/dev/null; ulimit -Su unlimited 2>/dev/null
	echo "nested \$($F fork 1000)"'
EOF
# The attack: the bomb, threads, then every way out of the cgroup and every way to raise the
# limit that the agent can see, then the bomb again.
cat >"$U/attack.sh" <<EOF
echo "bomb \$($F fork 1000)"
echo "threads \$($F thread 1000)"
for f in "$CG2"/cgroup.procs "$CG2"/*/cgroup.procs "$V1"/cgroup.procs "$V1"/*/cgroup.procs \
	"$V1"/*/*/cgroup.procs; do
	[ -e "\$f" ] && (echo \$\$ >"\$f") 2>/dev/null && echo "ESCAPE \$f"
done
mkdir "$CG2/own" 2>/dev/null && echo "ESCAPE mkdir $CG2/own"
[ -n "$V1" ] && mkdir "$V1/own$NAME" 2>/dev/null && echo "ESCAPE mkdir $V1/own$NAME"
for f in "$CG2/pids.max" "$V1"/pids.max "$V1"/cloister/pids.max "$V1"/cloister/*/pids.max; do
	[ -e "\$f" ] && (echo max >"\$f") 2>/dev/null && echo "RAISED \$f"
done
ulimit -Hu unlimited 2>/dev/null || ulimit -Hu 1000000 2>/dev/null
ulimit -Su unlimited 2>/dev/null || ulimit -Su hard 2>/dev/null
prlimit --pid \$\$ --nproc=unlimited 2>/dev/null
echo "after \$($F fork 1000)"
EOF
chown -R "$NOBODY:$NOBODY" "$U"
on_exit "for d in $CG2/cloister/$NAME-* $V1/cloister/$NAME-*; do [ -d \"\$d\" ] && rmdir \"\$d\"; done"
[ -z "$V1" ] || on_exit "rmdir $V1/own$NAME 2>/dev/null"

# bomb_count WHAT: K of the line "WHAT forkbomb: made K of N, then …: Resource temporarily
# unavailable" in $OUT, else nothing.
bomb_count() {
	sed -n "s/^$1 forkbomb: made \([0-9]*\) of [0-9]*, then [a-z]*: Resource temporarily unavailable$/\1/p" "$OUT"
}

# within N MAX: status 0 when N is a count from 1 to MAX.
within() { [ -n "$1" ] && [ "$1" -ge 1 ] && [ "$1" -le "$2" ]; }

for who in root nobody; do
	# ---- the default, without options -----------------------------------------------------
	sv_as "$who" -v --name "$NAME" --ask none -- bash "$U/show.sh"
	tap_like "$(cat "$ERR")" "sandbox \"$NAME\": at most 4096 tasks \\(" \
		"$who: without options, the sandbox gets the default limit (4096 tasks)"
	if [ "$who" = root ]; then
		tap_like "$(cat "$OUT")" "pids.max 4096" "root: the agent's cgroup says pids.max 4096"
	else
		tap_is "$(grep '^nproc' "$OUT")" "nproc 4096" "nobody: the agent's hard RLIMIT_NPROC is 4096"
	fi
	tap_is "$(grep '^oom' "$OUT" | tr '\n' ' ')" "oom 500 oom after 500 " \
		"$who: the OOM killer takes the agent first (oom_score_adj 500); it cannot shield itself (-1000)"

	# ---- the attack -----------------------------------------------------------------------
	SV_TIMEOUT=60 sv_as "$who" -v --name "$NAME" --ask none --pids-max 64 -- bash "$U/attack.sh"
	bomb=$(bomb_count bomb)
	tap_ok "$(within "$bomb" 62; echo $?)" \
		"$who: a fork bomb stops with EAGAIN within --pids-max 64 (made $bomb)" "$(diag)"
	threads=$(bomb_count threads)
	tap_ok "$(within "$threads" 62; echo $?)" \
		"$who: threads count too: cloning stops within the limit (made $threads)" "$(diag)"
	tap_is "$(grep '^ESCAPE' "$OUT")" "" "$who: the agent cannot move itself to another cgroup nor make one"
	tap_is "$(grep '^RAISED' "$OUT")" "" "$who: the agent cannot write a pids.max"
	tap_is "$(bomb_count after)" "$bomb" \
		"$who: after every try to leave and to raise it (rlimits too), the bomb stops at the same count"
	if [ "$who" = root ]; then
		tap_like "$(cat "$ERR")" "sandbox \"$NAME\" hit its task limit \\(64 processes and threads\\)" \
			"root: the person is told the sandbox hit its task limit"
		tap_is "$(grep -c 'hit its task limit' "$ERR")" 1 "root: once"
		if grep -q 'at most 64 tasks (cgroup v1 pids.max)' "$ERR"; then
			tap_is "$(ls -d "$V1"/cloister/"$NAME"-* 2>/dev/null)" "" \
				"root: the v1 companion leaf is removed with the sandbox"
		else
			tap_skip "root: the v1 companion leaf is removed" "cgroup2 holds the limit here"
		fi
	else
		tap_skip "nobody: the person is told" "RLIMIT_NPROC's refusals are counted nowhere"
		tap_skip "nobody: once" "RLIMIT_NPROC's refusals are counted nowhere"
		# The user's own processes on the host are not counted: more of them than the
		# limit, and the bomb makes as many as before.
		# shellcheck disable=SC2016 # the inner shell's variables
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups setsid sh -c \
			'i=0; while [ $i -lt 80 ]; do sleep 120 & i=$((i + 1)); done; wait' &
		pg=$!
		on_exit "kill -- -$pg 2>/dev/null"
		wait_until 20 sh -c "[ \$(pgrep -c -g $pg) -ge 81 ]"
		held=$(pgrep -c -g "$pg")
		SV_TIMEOUT=60 sv_as nobody --name "$NAME" --ask none --pids-max 64 -- bash "$U/bomb.sh"
		tap_is "$(bomb_count bomb)" "$bomb" \
			"nobody: with $held more of the user's processes on the host, the sandbox still makes $bomb"
		kill -- -"$pg" 2>/dev/null
	fi

	SV_TIMEOUT=60 sv_as "$who" --name "$NAME" --ask none --allow-nested-sandbox --pids-max 64 \
		-- bash "$U/nested.sh"
	n=$(bomb_count nested)
	tap_ok "$(within "$n" 62; echo $?)" \
		"$who: root in a nested user namespace, the cgroup file systems mounted again and their pids.max written: the bomb still stops (made $n)" \
		"$(diag)"

	sv_as "$who" --name "$NAME" --ask none --pids-max 1 -- true
	tap_like "$rc $(cat "$ERR")" "^125 .*fork: Resource temporarily unavailable \\(the task limit counts the sandbox's init too" \
		"$who: --pids-max 1 leaves no room for the agent: run says why"

	# ---- the config key -------------------------------------------------------------------
	cfg=$CFG
	[ "$who" = root ] || cfg=$U/cfg
	printf 'limits:\n  pids_max: 32\n' >>"$cfg/config.yaml"
	SV_TIMEOUT=60 sv_as "$who" --name "$NAME" --ask none -- bash "$U/bomb.sh"
	n=$(bomb_count bomb)
	tap_ok "$(within "$n" 30; echo $?)" "$who: limits.pids_max: 32 in config.yaml holds (made $n)" \
		"$(diag)"
	sed -i '/^limits:/,$d' "$cfg/config.yaml"

	# ---- the host keeps working -----------------------------------------------------------
	tap_is "$(setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups sh -c 'sh -c "echo forked"')" \
		forked "$who: after the bombs, the host's user still forks"
done

# ---- a supervisor that died leaves its v1 companion leaf; the next run removes it -------------
if [ -n "$V1" ] && ! grep -qw pids "$CG2/cgroup.controllers" 2>/dev/null; then
	(cd "$U" && exec "$SUPERVISOR" run --config-dir "$CFG" --name "$NAME" --ask none --no-web \
		-- sh -c "while [ ! -e $U/never ]; do sleep 0.05; done") </dev/null >"$OUT" 2>"$ERR" &
	spid=$!
	on_exit "kill -9 $spid 2>/dev/null"
	wait_until 20 sh -c "ls -d $V1/cloister/$NAME-*-$spid-* >/dev/null 2>&1"
	leaf=$(ls -d "$V1"/cloister/"$NAME"-*-"$spid"-* 2>/dev/null)
	kill -9 "$spid"
	wait "$spid" 2>/dev/null
	tap_ok "$([ -n "$leaf" ] && [ -d "$leaf" ]; echo $?)" \
		"root: a killed supervisor leaves its v1 companion leaf behind" "$(diag)"
	wait_until 20 sh -c "[ \$(cat $leaf/pids.current 2>/dev/null || echo 0) -eq 0 ]"
	sv_as root --name "$NAME" --ask none -- true
	tap_ok "$([ -n "$leaf" ] && [ ! -e "$leaf" ]; echo $?)" \
		"root: the next run removes it" "$(ls -d "$V1"/cloister/* 2>&1); $(diag)"
else
	tap_skip "root: a killed supervisor's v1 companion leaf" "cgroup2 has the pids controller"
	tap_skip "root: the next run removes it" "cgroup2 has the pids controller"
fi

# ---- nothing can hold it (no pids controller in cgroup2, its v1 hierarchy unmounted) ----------
if [ -n "$V1" ] && ! grep -qw pids "$CG2/cgroup.controllers" 2>/dev/null &&
	command -v unshare >/dev/null; then
	nolimit() {
		# shellcheck disable=SC2016 # the inner shell's arguments
		(cd "$U" && exec unshare -m --propagation private sh -c \
			'umount "$1" && shift && exec timeout -k 5 "$0" "$@"' "$SV_TIMEOUT" "$V1" \
			"$SUPERVISOR" run --config-dir "$CFG" --name "$NAME" --ask none --no-web "$@") \
			</dev/null >"$OUT" 2>"$ERR"
		rc=$?
	}
	nolimit --pids-max 64 -- true
	tap_like "$rc $(cat "$ERR")" "^125 .*run: cannot limit the sandbox's tasks: .*no pids controller" \
		"root: a limit asked for (--pids-max) that nothing can hold: run refuses to start"
	nolimit -- bash "$U/bomb.sh"
	tap_like "$rc $(grep -c 'tasks are not limited' "$ERR") $(cat "$OUT")" \
		"^0 1 bomb forkbomb: made 1000 of 1000, never refused" \
		"root: the default that nothing can hold: run says so, once, and runs"
else
	tap_skip "root: a limit asked for that nothing can hold" "needs cgroup v1 pids and unshare"
	tap_skip "root: the default that nothing can hold" "needs cgroup v1 pids and unshare"
fi

tap_done
