#!/bin/sh
# Attack on Cloister's own config directory when it is kept in a dotfiles repository, as stow
# and friends do: ~/.config/cloister/config.yaml a symlink into the repository, decisions/ a
# symlink to a directory of it (the person shares decisions between machines), projects/
# reached through a chain of two links, the second in the repository. The person runs an agent
# in that repository. The config directory is read-only in the sandbox, but that mount does not
# reach a link's target: the agent appended an exec allow to config.yaml, wrote a global
# decisions file (which the decisions watch reads within a second, and the next run holds) and
# re-pointed the chain's link to a projects/ of its own: the next run ran what nobody allowed.
# Held now: the targets of the symlinks in the config directory are protected as fs.protect
# paths are (read-only, not renamable, the links on the way held), as root and as nobody; the
# rest of the repository stays writable, and the next run refuses the program.
# The same links with the repository outside the project (~/dotfiles) and fs.ask: on-write:
# the agent's write to a link's target was asked like any file (the person could allow it, even
# for every run); now it is refused at once as Cloister's own, and another file there is asked.
# A directory the person allowed for every run (a remembered `fs: allow: ~/dotfiles/`) does not
# cover the config file that a link made later leads to there.
# A link that leads nowhere yet, into the repository: the agent could make its target, which
# the decisions watch reads within a second (the sweep at the end comes too late): the run
# refuses to start and says how to fix it. One that leads nowhere the agent can write is fine.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=40
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	D=$W/dotfiles # the repository, where the agent works
	C=$W/cfg      # the config directory, made of links into it
	mkdir -p "$C" "$D/cloister/decisions/projects" "$D/cloister/projects" "$W/home"
	cat >"$D/cloister/config.yaml" <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/rm"
    - path: "/usr/bin/mv"
    - path: "/usr/bin/mkdir"
    - path: "/usr/bin/sleep"
EOF
	cp "$D/cloister/config.yaml" "$W/config.orig"
	ln -s ../dotfiles/cloister/config.yaml "$C/config.yaml"
	ln -s ../dotfiles/cloister/decisions "$C/decisions"
	ln -s "$D/plink" "$C/projects"
	ln -s cloister/projects "$D/plink"
	cat >"$W/agent.sh" <<EOF
(echo '    - path: "/usr/bin/id"' >>'$D/cloister/config.yaml') 2>/dev/null; echo "config \$?"
mv '$D/cloister/config.yaml' '$D/cloister/config.old' 2>/dev/null; echo "rename \$?"
(printf 'exec:\n  allow:\n    - path: "/usr/bin/id"\n' >'$D/cloister/decisions/global.yaml') \
	2>/dev/null; echo "decisions \$?"
mv '$D/cloister/decisions' '$D/cloister/decisions.old' 2>/dev/null; echo "swap \$?"
mv '$D/cloister' '$D/cloister.old' 2>/dev/null; echo "parent \$?"
(rm '$D/plink' && mkdir '$D/plink' &&
	printf 'exec:\n  allow:\n    - path: "/usr/bin/id"\n' >'$D/plink/p$$.yaml') 2>/dev/null
echo "chain \$?"
echo notes >'$D/notes'; echo "project \$?"
EOF
	chmod 644 "$W/agent.sh"
	# The second set: the repository in the home, the agent in a project of its own.
	C2=$W/cfg2
	R=$W/home/dotfiles
	mkdir -p "$C2" "$R/decisions" "$W/proj"
	cat >"$R/config.yaml" <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/dash"
fs:
  ask: on-write
EOF
	echo other >"$R/other"
	ln -s "$R/config.yaml" "$C2/config.yaml"
	ln -s "$R/decisions" "$C2/decisions"
	C5=$W/cfg5
	mkdir -p "$C5/decisions"
	printf 'fs:\n  allow:\n    - "%s/"\n' "$R" >"$C5/decisions/global.yaml"
	chmod 600 "$C5/decisions/global.yaml"
	ln -s "$R/config.yaml" "$C5/config.yaml"
	mkdir -p "$W/cfg3" "$W/cfg4"
	cp "$D/cloister/config.yaml" "$W/cfg3/config.yaml"
	cp "$D/cloister/config.yaml" "$W/cfg4/config.yaml"
	ln -s "$D/not-yet" "$W/cfg3/decisions"
	ln -s "/nonexistent$$/decisions" "$W/cfg4/decisions"
	sv_agent_who "$who"
	one() { # AGENT…: a run of project p$$ in the repository
		sv_agent "$D" --config-dir "$C" --project "p$$" --name "a3c$$" -- "$@"
	}
	one sh "$W/agent.sh"
	tap_like "$(grep '^config' "$OUT")" '^config [1-9]' \
		"$who: writing the config through its link (stow) fails" "$(diag)"
	tap_like "$(grep '^rename' "$OUT")" '^rename [1-9]' \
		"$who: the linked config file cannot be renamed away" "$(diag)"
	tap_like "$(grep '^decisions' "$OUT")" '^decisions [1-9]' \
		"$who: a decisions file cannot be written in the linked decisions/" "$(diag)"
	tap_like "$(grep '^swap' "$OUT")$(grep '^parent' "$OUT")" '^swap [1-9]parent [1-9]' \
		"$who: the linked decisions/ and its parent cannot be renamed away" "$(diag)"
	tap_like "$(grep '^chain' "$OUT")" '^chain [1-9]' \
		"$who: the second link of a chain to projects/ cannot be re-pointed" "$(diag)"
	tap_is "$(grep '^project' "$OUT")" "project 0" \
		"$who: the rest of the repository stays writable" "$(diag)"
	tap_ok "$(cmp -s "$W/config.orig" "$D/cloister/config.yaml" &&
		[ ! -e "$D/cloister/decisions/global.yaml" ] && [ -L "$D/plink" ] &&
		[ ! -e "$D/cloister/projects/p$$.yaml" ] && echo 0 || echo 1)" \
		"$who: after the run, the config, decisions and projects are the person's" \
		"$(ls -laR "$D"; diag)"
	one sh -c 'id -u >/dev/null 2>&1; echo "id $?"'
	tap_like "$(cat "$OUT")" '^id [1-9]' \
		"$who: the next run refuses the program nobody allowed" "$(diag)"
	tap_ok "$(grep -q 'cloister-supervisor:' "$ERR" && echo 1 || echo 0)" \
		"$who: the run starts without an error" "$(diag)"
	C_SAVED=$C
	C=$W/cfg3
	one sh -c "echo ran >'$D/ran3'"
	tap_ok "$([ "$rc" -ne 0 ] && [ ! -e "$D/ran3" ] && echo 0 || echo 1)" \
		"$who: a config link that leads to nothing in the repository: the run refuses" "$(diag)"
	tap_ok "$(grep -qF "$W/cfg3/decisions, in Cloister's config directory, leads to $D/not-yet, which does not exist and the agent could create" "$ERR" && echo 0 || echo 1)" \
		"$who: ... and says which link, where, and why" "$(diag)"
	C=$W/cfg4
	one sh -c "echo ran >'$D/ran4'"
	tap_is "$rc:$(cat "$D/ran4" 2>&1)" "0:ran" \
		"$who: one that leads to nothing the agent can write runs as usual" "$(diag)"
	C=$C_SAVED

	sv_agent "$W/proj" --config-dir "$C2" --name "a3d$$" -- \
		sh -c "(echo x >>'$R/config.yaml') 2>/dev/null; echo \"config \$?\"
			(echo x >'$R/decisions/global.yaml') 2>/dev/null; echo \"decisions \$?\"
			(echo x >>'$R/other') 2>/dev/null; echo \"other \$?\""
	tap_like "$(grep '^config' "$OUT")" '^config [1-9]' \
		"$who: write ask: the agent cannot write the linked config.yaml's target" "$(diag)"
	tap_ok "$(grep -qF "write to $R/config.yaml denied: it is Cloister's config directory" \
		"$ERR" && echo 0 || echo 1)" "$who: ... refused at once as Cloister's own, never asked" \
		"$(diag)"
	tap_ok "$(grep -qF "write to $R/decisions/global.yaml denied: it is below Cloister's config directory" \
		"$ERR" && echo 0 || echo 1)" \
		"$who: so is a decisions file in the linked decisions/" "$(diag)"
	tap_ok "$(grep -qF "write to $R/other denied: nobody can answer" "$ERR" && echo 0 ||
		echo 1)" "$who: another file of the repository is asked as before" "$(diag)"
	tap_ok "$(grep -q '^x$' "$R/config.yaml" || [ -e "$R/decisions/global.yaml" ] && echo 1 ||
		echo 0)" "$who: after the run, both are untouched" "$(diag)"
	tap_ok "$(grep -q 'cloister-supervisor:' "$ERR" && echo 1 || echo 0)" \
		"$who: that run starts without an error" "$(diag)"

	sv_agent "$W/proj" --config-dir "$C5" --name "a3e$$" -- \
		sh -c "(echo x >>'$R/config.yaml') 2>/dev/null; echo \"config \$?\"
			(echo remembered >>'$R/other') 2>/dev/null; echo \"other \$?\""
	tap_ok "$(grep -q '^config [1-9]' "$OUT" && ! grep -q '^x$' "$R/config.yaml" &&
		grep -qF "write to $R/config.yaml denied: it is Cloister's config directory" "$ERR" &&
		echo 0 || echo 1)" \
		"$who: a remembered allow of the directory does not cover the linked config" "$(diag)"
	tap_ok "$(grep -q '^other 0' "$OUT" && grep -q '^remembered$' "$R/other" && echo 0 ||
		echo 1)" "$who: ... which still allows another file there" "$(diag)"
done
tap_done
