#!/bin/sh
# Attack on the built-in protect list for a run started in $HOME (the worktree is ~, so the
# whole home is writable but for fs.protect), as root and as an unprivileged user. The list
# names the shells' start-up files, ~/.local/bin and the like; the agent writes what the host
# runs later through files the list leaves out:
#   - ~/.local/lib/python3.X/site-packages/NAME.pth: an `import` line in a .pth file runs in
#     every later Python on the host (the user site is on by default) — shown here by running
#     the host's python3 after the run;
#   - ~/.bash_aliases (sourced by Debian's and Ubuntu's default ~/.bashrc) and ~/.cargo/env
#     (sourced by ~/.profile and ~/.bashrc wherever rustup installed Rust): the person's next
#     shell runs them.
# Closed: fs.protect covers ~/.local/lib (user site-packages), ~/.bash_aliases (moved aside at
# the end when absent at the start) and ~/.cargo/env. (Still to consider: a run whose worktree
# holds $HOME could keep $HOME read-only but the worktree's own subdirectories.)
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
[ -x /usr/bin/python3 ] || run_skip_all $PLAN "no /usr/bin/python3"
SITE_REL=$(env HOME=/h /usr/bin/python3 -m site --user-site 2>/dev/null | sed 's|^/h/||')
case $SITE_REL in
.local/lib/python3*/site-packages) ;;
*) run_skip_all $PLAN "python3 has no user site under ~/.local/lib ($SITE_REL)" ;;
esac
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	H=$W/home
	mkdir -p "$W/cfg" "$H/.cargo" "$H/$SITE_REL"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	# shellcheck disable=SC2016 # the shell that sources it expands these
	echo 'export PATH="$HOME/.cargo/bin:$PATH"' >"$H/.cargo/env"
	MARK=$W/ran-on-host
	cat >"$W/agent.sh" <<EOF
(echo 'import os; open("$MARK", "w")' >'$H/$SITE_REL/zz.pth') 2>/dev/null; echo "pth \$?"
(echo 'touch $MARK' >>'$H/.bash_aliases') 2>/dev/null; echo "aliases \$?"
(echo 'touch $MARK' >>'$H/.cargo/env') 2>/dev/null; echo "cargo \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent_who "$who"
	# Started in ~: the worktree is the home directory.
	sv_agent "$H" --name "a2m$$" -- sh "$W/agent.sh"
	rm -f "$MARK"
	as_who "$H" /usr/bin/python3 -c pass
	tap_ok "$([ -e "$MARK" ] && echo 1 || echo 0)" \
		"$who: the host's next python3 runs no .pth the agent wrote in the user site" "$(diag)"
	# Absent at the start, a protected name can be created, and is moved aside at the end.
	{ grep -Eq '^aliases [12]$' "$OUT" ||
		{ ! grep -qs "$MARK" "$H/.bash_aliases" && [ -e "$H/.bash_aliases.cloister-blocked" ]; }; }
	tap_ok $? "$who: ~/.bash_aliases (sourced by the default ~/.bashrc) is read-only, or moved aside" \
		"$(diag)"
	tap_like "$(grep '^cargo' "$OUT")" '^cargo [12]$' \
		"$who: ~/.cargo/env (sourced by ~/.profile) is read-only" "$(diag)"
done
tap_done
