#!/bin/sh
# Attack on the .git *files* of a project, as root and as an unprivileged user. A linked
# worktree (`git worktree add`) and a submodule's checkout have a .git file, "gitdir: …", in the
# project, where the protected .git/hooks and .git/config paths do not exist. The agent rewrote
# it to name a git directory of its own, with a config whose core.fsmonitor git runs at every
# `git status` — the person's shell prompt runs one in the project during the run, before the
# end-of-run check moves the file aside. Held now: both .git files are read-only mounts of
# themselves (EROFS to write, EBUSY to remove).
# And the same configs read at the start cannot stall it: an included file that includes itself
# fifty times, ten deep, is read a bounded number of times and the run says so.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
tap_plan $PLAN

sv_agent_setup
G="git -c user.email=p@x -c user.name=p -c protocol.file.allow=always"

for who in root nobody; do
	W=$TMP/$who
	MARK=$W/ran-on-host
	mkdir -p "$W/cfg" "$W/home"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	# The main repository outside the project; the project is a linked worktree of it, with
	# a submodule.
	git init -q "$W/main"
	$G -C "$W/main" commit -q --allow-empty -m init
	git init -q "$W/lib"
	$G -C "$W/lib" commit -q --allow-empty -m lib
	$G -C "$W/main" worktree add -q "$W/wt" 2>/dev/null
	WT=$W/wt
	$G -C "$WT" submodule -q add "$W/lib" sub 2>/dev/null
	# A config in the project that includes itself fifty times (git gives up ten deep).
	for i in $(seq 50); do printf '[include]\n\tpath = loop.gitconfig\n'; done >"$WT/loop.gitconfig"
	git -C "$W/main" config include.path "$WT/loop.gitconfig"
	sv_agent_who "$who"
	cat >"$W/agent.sh" <<EOF
mkdir -p '$WT/evil/objects' '$WT/evil/refs' && echo 'ref: refs/heads/x' >'$WT/evil/HEAD' &&
	printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >'$WT/evil/config'
(printf 'gitdir: $WT/evil\n' >'$WT/.git') 2>/dev/null; echo "worktree \$?"
(rm -f '$WT/.git' && printf 'gitdir: $WT/evil\n' >'$WT/.git') 2>/dev/null; echo "replace \$?"
(printf 'gitdir: $WT/evil\n' >'$WT/sub/.git') 2>/dev/null; echo "submodule \$?"
(rm -f '$WT/sub/.git' && printf 'gitdir: $WT/evil\n' >'$WT/sub/.git') 2>/dev/null
echo "subreplace \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent "$WT" --name "a4g$$" -- sh "$W/agent.sh"
	tap_like "$(grep '^worktree' "$OUT")" '^worktree [12]$' \
		"$who: a linked worktree's .git file is read-only" "$(cat "$WT/.git"; diag)"
	tap_like "$(grep '^replace' "$OUT")" '^replace [1-9]' \
		"$who: ... and cannot be removed and replaced" "$(diag)"
	tap_like "$(grep '^submodule' "$OUT")" '^submodule [12]$' \
		"$who: a submodule's .git file is read-only" "$(cat "$WT/sub/.git"; diag)"
	tap_like "$(grep '^subreplace' "$OUT")" '^subreplace [1-9]' \
		"$who: ... and cannot be removed and replaced" "$(diag)"
	tap_ok "$([ "$rc" -eq 0 ] && grep -q 'warning: [0-9]* protected directories or git configs too many' "$ERR" &&
		echo 0 || echo 1)" \
		"$who: a config that includes itself fifty times ten deep is read a bounded number of times, with a warning" \
		"$(diag)"
	rm -f "$MARK"
	as_who "$WT" git status
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's git status in the project after the run runs nothing of the agent's"
done
tap_done
