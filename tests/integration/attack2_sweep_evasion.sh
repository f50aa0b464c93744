#!/bin/sh
# Attacks on the end-of-run sweep of protected names that were absent at the start ("renamed to
# NAME.cloister-blocked"), as root and as an unprivileged user:
#   - the sweep tries NAME.cloister-blocked, then .1 … .99, never replacing: the agent creates
#     those 100 names first, then NAME (.vscode/tasks.json, run on folder open): every rename
#     fails with EEXIST and NAME stays for the host;
#   - a protected path whose PARENT is absent at the start is not remembered at all: in a
#     project without .git, the agent's `git init` and a .git/config with core.fsmonitor stay,
#     and the person's `git status` after the run runs the agent's command on the host.
# Held: a plain .vscode created during the run is moved aside; when NAME.cloister-blocked is
# taken, the sweep picks NAME.cloister-blocked.RANDOM (the agent is gone, the name unguessable);
# an absent protected path is remembered by its nearest existing ancestor, and with a symlink
# on its way (.git -> elsewhere) the first directory that was absent goes aside whole.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=14
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
tap_plan $PLAN

sv_agent_setup
run_agent() { # WORKTREE [RUN OPTIONS]: the agent WORKTREE.sh, in WORKTREE
	dir=$1
	shift
	sv_agent "$dir" --name "a2w$$" "$@" -- sh "$dir.sh"
}

for who in root nobody; do
	W=$TMP/$who
	mkdir -p "$W/cfg" "$W/home" "$W/plain" "$W/crowd" "$W/nogit" "$W/linkgit"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	MARK=$W/ran-on-host
	cat >"$W/plain.sh" <<EOF
mkdir .vscode && echo '{"tasks": []}' >.vscode/tasks.json; echo "made \$?"
EOF
	cat >"$W/crowd.sh" <<EOF
mkdir .vscode.cloister-blocked
i=1; while [ \$i -lt 100 ]; do mkdir .vscode.cloister-blocked.\$i; i=\$((i + 1)); done
mkdir .vscode && echo '{"tasks": []}' >.vscode/tasks.json; echo "made \$?"
EOF
	cat >"$W/nogit.sh" <<EOF
git init -q . && printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>.git/config
echo "made \$?"
EOF
	# In a project without .git: .git a symlink to a repository of the agent's elsewhere.
	cat >"$W/linkgit.sh" <<EOF
mkdir -p '$W/linkgit/away' && git init -q '$W/linkgit/away' &&
	printf '[core]\n\tfsmonitor = "touch $MARK; false"\n' >>'$W/linkgit/away/.git/config' &&
	ln -s away/.git .git; echo "made \$?"
EOF
	chmod 644 "$W"/*.sh
	sv_agent_who "$who"

	run_agent "$W/plain"
	tap_ok "$([ ! -e "$W/plain/.vscode" ] && [ -e "$W/plain/.vscode.cloister-blocked/tasks.json" ] &&
		echo 0 || echo 1)" "$who: a .vscode created during the run is moved aside at its end" "$(diag)"
	# With -q too the person learns what was moved: a file of theirs may be in it.
	rm -rf "$W/plain/.vscode.cloister-blocked"
	run_agent "$W/plain" -q
	tap_ok "$(grep -qF "created $W/plain/.vscode, which is protected (fs.protect): moved to $W/plain/.vscode.cloister-blocked" "$ERR" &&
		echo 0 || echo 1)" "$who: with -q, the run still says what it moved" "$(diag)"

	run_agent "$W/crowd"
	tap_ok "$([ -e "$W/crowd/.vscode/tasks.json" ] && echo 1 || echo 0)" \
		"$who: with .vscode.cloister-blocked{,.1…99} taken first, .vscode is still moved aside" \
		"$(diag)"

	run_agent "$W/nogit"
	tap_ok "$([ -e "$W/nogit/.git/config" ] && echo 1 || echo 0)" \
		"$who: in a project without .git, the .git the agent made does not stay" "$(diag)"
	rm -f "$MARK"
	as_who "$W/nogit" git status
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's \`git status\` there after the run runs nothing of the agent's"

	run_agent "$W/linkgit"
	tap_ok "$([ ! -e "$W/linkgit/.git" ] && [ -L "$W/linkgit/.git.cloister-blocked" ] &&
		echo 0 || echo 1)" "$who: a .git symlink the agent made goes aside" \
		"$(ls -la "$W/linkgit"; diag)"
	rm -f "$MARK"
	as_who "$W/linkgit" git status
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the person's \`git status\` at the project's top runs nothing of the agent's"
done
tap_done
