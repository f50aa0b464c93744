#!/bin/sh
# Attack on the protected paths (fs.protect), as root and as an unprivileged user: the built-in
# default protects {worktree}/.git/config and {worktree}/.git/hooks, but the project is
# writable everywhere else, and git reads the .git of whatever directory it runs in. The agent
# makes a repository of its own in a subdirectory (sub/.git/config with core.fsmonitor, or a
# hook) and, after the run, the person's `git status` in sub/ — or a shell prompt that runs
# it on `cd sub` — runs the agent's command on the host, outside the sandbox.
# Held: the worktree's own .git/config stays read-only. At the end of the run (the agent gone),
# every .git in the project is looked at: one the run made goes aside whole; in one that was
# there, the config, hooks, commondir and submodules' git directories the run changed go
# aside; a .git file the run made (naming a git directory elsewhere) and the config of a bare
# repository (HEAD, objects/, refs/) the run made go aside too, and so do hooks the run made in
# the directory that an unchanged config's core.hooksPath names. The run says what it moved.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=22
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	WT=$W/wt
	mkdir -p "$W/cfg" "$W/home" "$WT"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	git init -q "$WT"
	# A repository that was there before the run (a vendored project, a submodule's checkout).
	git init -q "$WT/old"
	git -C "$WT/old" config user.name "the person"
	# The project's hooks in a directory of the project (core.hooksPath), as many set it up.
	git -C "$WT" config core.hooksPath .githooks
	mkdir "$WT/.githooks"
	echo 'our hooks' >"$WT/.githooks/README"
	sv_agent_who "$who"
	MARK=$W/ran-on-host
	# The agent: its own repository in sub/, whose fsmonitor is a command of its choosing.
	cat >"$W/agent.sh" <<EOF
(printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>'$WT/.git/config') 2>/dev/null
echo "top \$?"
mkdir -p '$WT/sub/.git' && cd '$WT/sub' && git init -q . &&
	printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>.git/config
echo "sub \$?"
# The repository that was there: its config and a new hook.
printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>'$WT/old/.git/config'; echo "old \$?"
printf '#!/bin/sh\ntouch $MARK\n' >'$WT/old/.git/hooks/pre-commit' &&
	chmod +x '$WT/old/.git/hooks/pre-commit'; echo "hook \$?"
# A .git file naming a git directory elsewhere, and a bare repository (git uses the directory
# it runs in as one when it has HEAD, objects/ and refs/).
git init -q --bare '$WT/evil' && printf '[core]\n\tpager = "touch $MARK; cat"\n' >>'$WT/evil/config'
mkdir '$WT/linked' && printf 'gitdir: ../evil\n' >'$WT/linked/.git'; echo "linked \$?"
# Out of the check's reach: a repository deeper than it looks; and one under a directory its
# owner cannot list (git still runs in what is below it: the directory can be crossed), which
# the check makes listable for itself.
d='$WT/deep'; i=0; while [ \$i -lt 140 ]; do d=\$d/d; i=\$((i + 1)); done
mkdir -p "\$d" && git init -q "\$d"; echo "deep \$?"
mkdir -p '$WT/closed/sub' && git init -q '$WT/closed/sub' && chmod 111 '$WT/closed'
echo "closed \$?"
# A hook where the project's config (read-only to the agent) says git looks for them.
printf '#!/bin/sh\ntouch $MARK\n' >'$WT/.githooks/pre-commit' && chmod +x '$WT/.githooks/pre-commit' &&
	echo 'edited' >>'$WT/.githooks/README'; echo "hookspath \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent "$WT" --name "a2g$$" -- sh "$W/agent.sh"
	tap_like "$(grep '^top' "$OUT")" '^top [12]$' \
		"$who: the worktree's own .git/config stays read-only" "$(diag)"

	# The mechanism is the end-of-run check (see the README, "Files"): the write succeeds
	# during the run, the repository is moved aside when the agent is gone.
	tap_ok "$([ ! -e "$WT/sub/.git" ] && [ -f "$WT/sub/.git.cloister-blocked/config" ] &&
		grep -qF "made or changed $WT/sub/.git (git runs it on the host): moved to $WT/sub/.git.cloister-blocked" "$ERR" &&
		echo 0 || echo 1)" \
		"$who: the .git the agent made in a subdirectory is moved aside at the end, and the run says so" \
		"$(diag)"
	# After the run: the person looks at sub/ with git, on the host.
	rm -f "$MARK"
	as_who "$WT/sub" git status
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's \`git status\` in sub/ after the run runs nothing of the agent's"
	tap_ok "$([ -d "$WT/old/.git/objects" ] && [ ! -e "$WT/old/.git/config" ] &&
		grep -q fsmonitor "$WT/old/.git/config.cloister-blocked" &&
		[ ! -e "$WT/old/.git/hooks/pre-commit" ] &&
		[ -e "$WT/old/.git/hooks/pre-commit.cloister-blocked" ] && echo 0 || echo 1)" \
		"$who: in a repository that was there, the config and the hook the agent changed go aside" \
		"$(grep '^old\|^hook' "$OUT"; ls -la "$WT/old/.git" "$WT/old/.git/hooks"; diag)"
	rm -f "$MARK"
	as_who "$WT/old" git status && echo x >"$WT/old/f" && as_who "$WT/old" git add f &&
		as_who "$WT/old" git -c user.email=p@x -c user.name=p commit -qm x
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: git status and commit there after the run run nothing of the agent's"
	tap_ok "$([ ! -e "$WT/linked/.git" ] && [ -f "$WT/linked/.git.cloister-blocked" ] &&
		[ ! -e "$WT/evil/config" ] && [ -f "$WT/evil/config.cloister-blocked" ] &&
		echo 0 || echo 1)" \
		"$who: a .git file naming another git directory, and a bare repository's config, go aside" \
		"$(grep '^linked' "$OUT"; ls -la "$WT/linked" "$WT/evil"; diag)"
	rm -f "$MARK"
	as_who "$WT/evil" env PAGER=cat git -p log
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's \`git log\` in the bare repository runs nothing of the agent's"
	tap_ok "$(grep -q "warning: $WT/deep/d/.*/d was not checked for a .git of the agent's: too deep" "$ERR" &&
		echo 0 || echo 1)" "$who: a repository deeper than the check looks is named, not missed" \
		"$(diag)"
	# Not root: the directory is the supervisor's uid's, made listable for the check.
	tap_ok "$([ "$(stat -c %a "$WT/closed")" = 111 ] && chmod 755 "$WT/closed" &&
		[ ! -e "$WT/closed/sub/.git" ] && [ -d "$WT/closed/sub/.git.cloister-blocked" ] &&
		echo 0 || echo 1)" \
		"$who: under a directory made unlistable, the .git goes aside (its mode kept)" \
		"$(grep '^closed' "$OUT"; diag)"
	chmod 755 "$WT/closed"
	tap_ok "$([ ! -e "$WT/.githooks/pre-commit" ] && [ -e "$WT/.githooks/pre-commit.cloister-blocked" ] &&
		grep -q edited "$WT/.githooks/README" && echo 0 || echo 1)" \
		"$who: a hook in the core.hooksPath directory goes aside, the other files there stay" \
		"$(grep '^hookspath' "$OUT"; ls -la "$WT/.githooks"; diag)"
	rm -f "$MARK"
	echo y >"$WT/g" && as_who "$WT" git add g &&
		as_who "$WT" git -c user.email=p@x -c user.name=p commit -qm y
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's next commit in the project runs nothing of the agent's"
done
tap_done
