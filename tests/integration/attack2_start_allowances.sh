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

NOBODY=65534
chmod 711 "$TMP"
cp "$SUPERVISOR" "$TMP/cloister-supervisor"
chmod 755 "$TMP/cloister-supervisor"

for who in root nobody; do
	W=$TMP/$who
	mkdir -p "$W/cfg" "$W/wt" "$W/homes/u/.local/bin"
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
	if [ "$who" = nobody ]; then
		chown -R "$NOBODY:$NOBODY" "$W"
		AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	else
		AS=""
	fi
	chmod 711 "$W"

	# shellcheck disable=SC2086 # words on purpose
	(cd "$W/wt" && exec timeout -k 5 30 $AS env HOME="$W/homes/u" XDG_STATE_HOME="$W/state" \
		"$TMP/cloister-supervisor" run -v --config-dir "$W/cfg" --name "a2s$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off --ask none \
		-- "$W/wt/agent") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	tap_like "$(cat "$OUT")" "^setpriv (1|126)\$" \
		"$who: a program the person did not type is refused (its #! line says env -C /usr/bin)" "$(diag)"
	tap_ok "$(grep -q 'allowed for this run: /usr/bin (the agent' "$ERR" && echo 1 || echo 0)" \
		"$who: ... and /usr/bin is never allowed as the agent's interpreter" "$(diag)"
	tap_todo ""

	# Held: started in $HOME itself, the worktree's programs are not allowed.
	# shellcheck disable=SC2086
	(cd "$W/homes/u" && exec timeout -k 5 30 $AS env HOME="$W/homes/u" XDG_STATE_HOME="$W/state" \
		"$TMP/cloister-supervisor" run -v --config-dir "$W/cfg" --name "a2e$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off --ask none \
		-- "$W/homes/agent") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	tap_like "$(cat "$OUT")" "^tool (1|126)\$" \
		"$who: started in \$HOME itself, a program in ~/.local/bin needs an ask" "$(diag)"

	# shellcheck disable=SC2086
	(cd "$W/homes" && exec timeout -k 5 30 $AS env HOME="$W/homes/u" XDG_STATE_HOME="$W/state" \
		"$TMP/cloister-supervisor" run -v --config-dir "$W/cfg" --name "a2h$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off --ask none \
		-- "$W/homes/agent") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	tap_like "$(cat "$OUT")" "^tool (1|126)\$" \
		"$who: started in a parent of \$HOME, a program in ~/.local/bin still needs an ask" "$(diag)"
	tap_todo ""
done
tap_done
