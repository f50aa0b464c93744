#!/bin/sh
# Attacks on the start-time allowances of the built-in defaults (the agent's own files, its #!
# interpreter, the worktree's programs), as root and as an unprivileged user. What the person
# typed is `run -- WORKTREE/agent`; nothing else should run without an ask.
#   - the #! line picks what is allowed: `#!/usr/bin/env -S -C /usr/bin sh` is a working script (env
#     changes to /usr/bin and runs sh), but the #! parser skips "-C" as an option without its
#     argument and takes "/usr/bin" for the interpreter: every program there runs for the whole
#     run ("allowed for this run: /usr/bin (the agent's own)"). A worktree is writable, so an agent
#     of one run can plant that line in the script the person starts next time.
#   - the worktree's programs are allowed unless the worktree is / or exactly $HOME: started in
#     a parent of $HOME (/home), every program in $HOME/.local/bin (and other users' homes)
#     runs without an ask.
# Both closed: the parser knows env's options that take an argument (-C/--chdir, -a/--argv0,
# -u, -S's split string), gives up on one it does not know, and only ever allows a regular
# file as the interpreter; a worktree that holds $HOME (any ancestor) gets no allowance.
# Held (kept as coverage): started in $HOME itself, the worktree's programs are not allowed.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv env
if ! env -S true 2>/dev/null || ! env -C / true 2>/dev/null; then
	run_skip_all $PLAN "env has no -S or -C (coreutils < 8.30)"
fi
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	SV_HOME=$W/homes/u
	mkdir -p "$W/cfg" "$W/wt" "$SV_HOME/.local/bin"
	# The built-in lists stay in effect (a config writing exec.allow would switch the
	# allowances off); a miss is refused at once.
	printf 'exec:\n  ask: off\n' >"$W/cfg/config.yaml"
	# A program nobody typed and the built-in list does not allow: setpriv (a copy, so that
	# it is not under /usr/bin for the second case).
	cp "$(command -v setpriv)" "$W/homes/u/.local/bin/tool"
	cat >"$W/wt/agent" <<EOF
#!/usr/bin/env -S -C /usr/bin sh
cd '$W/wt' || exit 9
setpriv --dump >/dev/null 2>&1; echo "setpriv \$?"
EOF
	cat >"$W/homes/agent" <<EOF
#!/bin/sh
'$W/homes/u/.local/bin/tool' --dump >/dev/null 2>&1; echo "tool \$?"
EOF
	chmod 755 "$W/wt/agent" "$W/homes/agent"
	sv_agent_who "$who"

	sv_agent "$W/wt" -v --name "a2s$$" -- "$W/wt/agent"
	tap_like "$(cat "$OUT")" "^setpriv (1|126)\$" \
		"$who: a program the person did not type is refused (its #! line says env -C /usr/bin)" "$(diag)"
	tap_ok "$(grep -q 'allowed for this run: /usr/bin (the agent' "$ERR" && echo 1 || echo 0)" \
		"$who: ... and /usr/bin is never allowed as the agent's interpreter" "$(diag)"
	tap_todo ""

	# Held: started in $HOME itself, the worktree's programs are not allowed.
	sv_agent "$W/homes/u" -v --name "a2e$$" -- "$W/homes/agent"
	tap_like "$(cat "$OUT")" "^tool (1|126)\$" \
		"$who: started in \$HOME itself, a program in ~/.local/bin needs an ask" "$(diag)"

	sv_agent "$W/homes" -v --name "a2h$$" -- "$W/homes/agent"
	tap_like "$(cat "$OUT")" "^tool (1|126)\$" \
		"$who: started in a parent of \$HOME, a program in ~/.local/bin still needs an ask" "$(diag)"
	tap_todo ""
done
tap_done
