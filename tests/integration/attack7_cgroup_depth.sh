#!/bin/sh
# Attack on the removal of the sandbox's cgroups at the end of a run. With
# --allow-nested-sandbox the agent makes a user, cgroup and mount namespace of its own and
# mounts the cgroup hierarchies there: its cgroup2 leaf and, on a hybrid host, its cgroup v1
# pids companion (the task limit's) are the roots it sees, and it may make cgroups below them
# as deep as it likes (cgroup v1 has no cgroup.max.depth; the leaf's cgroup2 one is unlimited).
# The supervisor removed the tree depth-first with a bound of 32 levels on its recursion: a tree
# deeper than that stayed, with the leaf and the companion above it, for good (the next run's
# stale cleanup has the same bound): kernel memory an agent could pile up run after run.
# What must hold: after a run whose agent nested 200 levels in each hierarchy (and a second
# branch), neither the cgroup2 leaf nor the v1 companion of the run is left. As root: the
# agent's namespace root is the supervisor's uid (0), which owns the cgroup files; an
# unprivileged run has no cgroup of its own to nest in on this kind of host. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=4
run_needs_root $PLAN
run_needs_tools $PLAN unshare
V2=$(cgroup2_root)
if [ -z "$V2" ]; then run_skip_all $PLAN "no cgroup2 hierarchy to make the sandbox's leaf in"; fi
V1=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)pids(,|$)/ { print $5; exit }' /proc/self/mountinfo)
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  ask: off
EOF
NAME=a7d$$
# What a failing run left: its trees, deepest first.
# shellcheck disable=SC2016 # the quotes are the hook's, the paths expanded now
on_exit "for d in '$V2'/cloister/$NAME-* ${V1:+'$V1'/cloister/$NAME-*}; do [ -d \"\$d\" ] && find \"\$d\" -depth -type d -exec rmdir {} + 2>/dev/null; done"
# shellcheck disable=SC2016 # the agent's shell expands these
AGENT='unshare -U -r -C -m sh -c '\''
	mkdir -p /tmp/cg1 /tmp/cg2
	mount -t cgroup2 none /tmp/cg2 || echo "no cgroup2 mount"
	[ -z "$1" ] || mount -t cgroup -o pids none /tmp/cg1 || echo "no v1 mount"
	for m in /tmp/cg2 ${1:+/tmp/cg1}; do
		p=$m
		i=0
		while [ $i -lt 200 ] && mkdir $p/a 2>/dev/null; do
			p=$p/a
			i=$((i + 1))
		done
		mkdir $m/b $m/b/c
		echo "$m: $i deep"
	done'\'' sh "$1"'
sv --ask none --allow-nested-sandbox --name "$NAME" -- sh -c "$AGENT" sh "$V1"
out=$(cat "$OUT")
tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "root: the agent ran" "$(diag)"
if [ -n "$V1" ]; then want="/tmp/cg2: 200 deep /tmp/cg1: 200 deep"; else want="/tmp/cg2: 200 deep"; fi
tap_is "$(printf '%s\n' "$out" | grep ' deep$' | tr '\n' ' ' | sed 's/ $//')" "$want" \
	"root: the agent nested cgroups 200 deep in its own cgroup namespace" "$(diag)"
left2=$(find "$V2/cloister" -maxdepth 1 -name "$NAME-*" 2>/dev/null)
tap_is "$left2" "" "root: the run's cgroup2 leaf is gone, whatever the agent nested below it"
if [ -n "$V1" ]; then
	left1=$(find "$V1/cloister" -maxdepth 1 -name "$NAME-*" 2>/dev/null)
	tap_is "$left1" "" "root: the run's cgroup v1 pids companion is gone too"
else
	tap_skip "root: the run's cgroup v1 pids companion is gone too" \
		"no cgroup v1 pids hierarchy (not a hybrid host): no companion"
fi

tap_done
