#!/bin/sh
# Attack on fs.protect through what a protected path leads to, as root and as an unprivileged
# user. The protected paths of a project are read-only mounts of themselves, but git, Claude
# Code or VS Code read further than the path:
# - a hook in .git/hooks that is a symlink to a script of the project (scripts/pre-commit, as
#   many projects install theirs), one that leads nowhere yet (the agent makes the script),
#   .claude/settings.json a symlink into the project, and a protected file reached through a
#   chain of two links, the middle one an ordinary file name of the project that the agent
#   replaces; a hook and .vscode/tasks.json that are hard links of project files (`ln`): the
#   read-only mount holds the name, not the inode;
# - .git/config (protected) naming ordinary files of the project: include.path (relative to
#   .git/), core.fsmonitor, a filter's clean command, an alias "!scripts/…", and hooks that
#   exist in the core.hooksPath directory;
# - a repository in a subdirectory (not mounted: the end-of-run check holds it) whose hook links
#   to a script of the project, and whose config includes a file of the project.
# Before: the agent rewrote each of these files, and the person's next `git commit` or
# `git status` ran them. Held now: the files these lead to are read-only (EROFS), a link on a
# chain cannot be replaced (EBUSY), what the agent makes where a link leads is moved aside at
# the end, and in the subdirectory's repository the hook and the included file the run changed
# are moved aside; the person's commit after the run runs nothing of the agent's.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=36
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	WT=$W/wt
	MARK=$W/ran-on-host
	mkdir -p "$W/cfg" "$W/home" "$WT/scripts" "$WT/conf" "$WT/tools" "$WT/.githooks" "$WT/.claude"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	git init -q "$WT"
	printf '#!/bin/sh\nexit 0\n' >"$WT/scripts/pre-commit"
	chmod 755 "$WT/scripts/pre-commit"
	ln -s ../../scripts/pre-commit "$WT/.git/hooks/pre-commit"
	ln -s ../../scripts/post-commit "$WT/.git/hooks/post-commit" # leads nowhere yet
	echo '{}' >"$WT/conf/claude.json"
	ln -s ../conf/claude.json "$WT/.claude/settings.json"
	printf '#!/bin/sh\nexit 0\n' >"$WT/scripts/pre-push"
	ln "$WT/scripts/pre-push" "$WT/.git/hooks/pre-push"
	mkdir "$WT/.vscode"
	echo '{"tasks":[]}' >"$WT/conf/tasks.json"
	ln "$WT/conf/tasks.json" "$WT/.vscode/tasks.json"
	echo '{"mcpServers":{}}' >"$WT/conf/mcp.json"
	ln -s conf/mcp.json "$WT/mcp-link.json"
	ln -s mcp-link.json "$WT/.mcp.json"
	printf '[user]\n\tname = the team\n' >"$WT/team.gitconfig"
	printf 'cat\n' >"$WT/tools/clean.sh"
	printf '#!/bin/sh\nexit 0\n' >"$WT/scripts/fsmon.sh"
	printf '#!/bin/sh\ngit status\n' >"$WT/scripts/st.sh"
	printf '#!/bin/sh\nexit 0\n' >"$WT/.githooks/commit-msg"
	chmod 755 "$WT/scripts/fsmon.sh" "$WT/scripts/st.sh" "$WT/.githooks/commit-msg"
	echo 'our hooks' >"$WT/.githooks/README"
	git -C "$WT" config include.path ../team.gitconfig
	git -C "$WT" config core.hooksPath .githooks
	git -C "$WT" config filter.tidy.clean 'sh tools/clean.sh'
	git -C "$WT" config alias.st '!scripts/st.sh'
	# A repository in a subdirectory: its hook links to a script of the project, its config
	# includes a file of the project.
	git init -q "$WT/sub"
	printf '#!/bin/sh\nexit 0\n' >"$WT/sub/hook.sh"
	chmod 755 "$WT/sub/hook.sh"
	ln -s ../../hook.sh "$WT/sub/.git/hooks/pre-commit"
	printf '[user]\n\tname = sub\n' >"$WT/sub/inc.gitconfig"
	git -C "$WT/sub" config include.path ../inc.gitconfig
	sv_agent_who "$who"
	cat >"$W/agent.sh" <<EOF
(printf 'touch $MARK\n' >>'$WT/scripts/pre-commit') 2>/dev/null; echo "hook \$?"
printf '#!/bin/sh\ntouch $MARK\n' >'$WT/scripts/post-commit' && chmod 755 '$WT/scripts/post-commit'
echo "absent \$?"
(echo '{"hooks":{}}' >'$WT/conf/claude.json') 2>/dev/null; echo "claude \$?"
(printf 'touch $MARK\n' >>'$WT/scripts/pre-push') 2>/dev/null; echo "hardhook \$?"
(echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' >'$WT/conf/tasks.json') 2>/dev/null
echo "hardtasks \$?"
(rm '$WT/mcp-link.json' && echo '{"mcpServers":{"x":{"command":"sh"}}}' >'$WT/mcp-link.json') \
	2>/dev/null; echo "chain \$?"
(printf '[core]\n\tfsmonitor = scripts/fsmon.sh\n' >>'$WT/team.gitconfig') 2>/dev/null
echo "include \$?"
(printf 'touch $MARK\n' >>'$WT/tools/clean.sh') 2>/dev/null; echo "filter \$?"
(printf 'touch $MARK\n' >>'$WT/scripts/st.sh') 2>/dev/null; echo "alias \$?"
(printf 'touch $MARK\n' >>'$WT/.githooks/commit-msg') 2>/dev/null; echo "hookspath \$?"
echo 'edited' >>'$WT/.githooks/README'; echo "readme \$?"
printf 'touch $MARK\n' >>'$WT/sub/hook.sh'; echo "subhook \$?"
printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>'$WT/sub/inc.gitconfig'; echo "subinc \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent "$WT" -v --name "a4l$$" -- sh "$W/agent.sh"
	tap_like "$(grep '^hook' "$OUT")" '^hook [12]$' \
		"$who: the script a .git/hooks link leads to is read-only" "$(diag)"
	tap_ok "$([ ! -e "$WT/scripts/post-commit" ] && [ -f "$WT/scripts/post-commit.cloister-blocked" ] &&
		grep -qF "created $WT/scripts/post-commit, which is protected" "$ERR" &&
		echo 0 || echo 1)" \
		"$who: what the agent makes where a hook's dangling link leads is moved aside at the end" \
		"$(grep '^absent' "$OUT"; ls -la "$WT/scripts"; diag)"
	tap_like "$(grep '^claude' "$OUT")" '^claude [12]$' \
		"$who: the file .claude/settings.json links to is read-only" "$(diag)"
	tap_like "$(grep '^hardhook' "$OUT")" '^hardhook [12]$' \
		"$who: a hook that is a hard link of a project file cannot be written through it" "$(diag)"
	tap_like "$(grep '^hardtasks' "$OUT")" '^hardtasks [12]$' \
		"$who: nor can .vscode/tasks.json, a hard link of a project file" "$(diag)"
	tap_like "$(grep '^chain' "$OUT")" '^chain [1-9]' \
		"$who: a link in the middle of a protected path's chain cannot be replaced" "$(diag)"
	tap_is "$(cat "$WT/.mcp.json" 2>&1)" '{"mcpServers":{}}' \
		"$who: after the run, .mcp.json leads to the person's file" "$(diag)"
	tap_like "$(grep '^include' "$OUT")" '^include [12]$' \
		"$who: the file .git/config includes (relative to .git/) is read-only" "$(diag)"
	tap_like "$(grep '^filter' "$OUT")" '^filter [12]$' \
		"$who: the script a filter's clean command runs is read-only" "$(diag)"
	tap_like "$(grep '^alias' "$OUT")" '^alias [12]$' \
		"$who: the script an alias runs is read-only" "$(diag)"
	tap_like "$(grep '^hookspath' "$OUT")" '^hookspath [12]$' \
		"$who: a hook that exists in the core.hooksPath directory is read-only" "$(diag)"
	tap_ok "$(grep -q '^readme 0$' "$OUT" && grep -q edited "$WT/.githooks/README" &&
		echo 0 || echo 1)" \
		"$who: the other files of the hooks directory stay writable" "$(diag)"
	tap_ok "$([ -L "$WT/sub/.git/hooks/pre-commit.cloister-blocked" ] &&
		[ ! -e "$WT/sub/.git/hooks/pre-commit" ] && [ ! -e "$WT/sub/inc.gitconfig" ] &&
		[ -f "$WT/sub/inc.gitconfig.cloister-blocked" ] &&
		grep -qF "made or changed $WT/sub/.git/hooks/pre-commit (git runs it on the host)" "$ERR" &&
		echo 0 || echo 1)" \
		"$who: in a subdirectory's repository, a hook whose script changed and a changed included file go aside" \
		"$(grep '^sub' "$OUT"; ls -la "$WT/sub" "$WT/sub/.git/hooks"; diag)"
	tap_ok "$(grep -qF "read-only, a protected path leads to it: $WT/scripts/pre-commit (from $WT/.git/hooks/pre-commit)" "$ERR" &&
		grep -qF "read-only, a protected path leads to it: $WT/tools/clean.sh (from $WT/.git/config)" "$ERR" &&
		echo 0 || echo 1)" "$who: run -v names each file made read-only and what leads to it" \
		"$(diag)"
	# After the run: the person commits, on the host (hooks, fsmonitor, filter, alias).
	rm -f "$MARK"
	echo x >"$WT/f" && as_who "$WT" git add f && as_who "$WT" git -c user.email=p@x commit -qm x &&
		as_who "$WT" git st
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's commit in the project after the run runs nothing of the agent's" \
		"$(ls -la "$WT" "$WT/scripts")"
	# core.hooksPath above leaves .git/hooks aside: a commit that runs those (the person unsets
	# it, or another checkout does not set it) runs what their links lead to.
	rm -f "$MARK"
	as_who "$WT" git -c core.hooksPath=.git/hooks -c user.email=p@x commit -q --allow-empty -m z
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: nor a commit that runs the hooks of .git/hooks" "$(ls -la "$WT/.git/hooks" "$WT/scripts")"
	rm -f "$MARK"
	echo y >"$WT/sub/g" && as_who "$WT/sub" git add g &&
		as_who "$WT/sub" git -c user.email=p@x commit -qm y
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: nor does a commit in the subdirectory's repository"
	tap_ok "$([ "$rc" -eq 0 ] && echo 0 || echo 1)" "$who: the run itself ends normally" "$(diag)"
done
tap_done
