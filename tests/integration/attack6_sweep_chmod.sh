#!/bin/sh
# Attack on the end-of-run sweep ("moved aside"), as an unprivileged user (and as root, where it
# holds, for coverage). What the layers cannot hold during the run — a protected name that did
# not exist at the start (.envrc, rust-toolchain.toml), a .git made in a subdirectory — is
# renamed aside when the agent is gone. A rename needs write and search permission on the
# directory, and the walk for .git directories needs to read each directory; the project is
# the agent's uid's: the agent takes the permissions off (chmod 555) the project's top and a
# subdirectory, and makes another unreadable (chmod 000) above a .git. A supervisor that is not
# root then failed each rename with EACCES, and skipped the unreadable directory, and only
# warned; .envrc, the toolchain file and both .git stayed for the host's direnv, shell prompt
# (which chmod u+rx before cd) and git.
# What must hold: each is moved aside all the same (the directories are the supervisor's uid's:
# each gets its permissions back for the walk and the rename), and the directories keep the
# modes the agent gave them. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=10
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

attack_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
chown "$NOBODY:$NOBODY" "$U/cloister-supervisor"
cat >"$U/agent.sh" <<'EOF'
printf 'echo from-the-agent\n' >.envrc
printf '[toolchain]\npath = "%s/tc"\n' "$PWD" >rust-toolchain.toml
mkdir -p sub/.git/hooks hidden/deeper/.git
printf '[core]\n\tfsmonitor = echo\n' >sub/.git/config
printf '[core]\n\tfsmonitor = echo\n' >hidden/deeper/.git/config
chmod 000 hidden
chmod 555 sub .
EOF
chmod 644 "$U/agent.sh"

for who in root nobody; do
	chmod 755 "$U" "$U/sub" "$U/hidden" 2>/dev/null
	rm -rf "$U/.envrc"* "$U/rust-toolchain.toml"* "$U/sub" "$U/hidden"
	sv_as "$who" --ask none -- /bin/sh "$U/agent.sh"
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who: the agent ran" "$(diag)"
	tap_ok "$([ ! -e "$U/.envrc" ] && [ ! -e "$U/rust-toolchain.toml" ] &&
		[ -f "$U/.envrc.cloister-blocked" ] && [ -f "$U/rust-toolchain.toml.cloister-blocked" ] &&
		echo 0 || echo 1)" "$who: the protected names made at the top are moved aside" "$(diag)"
	tap_ok "$([ ! -e "$U/sub/.git" ] && [ -d "$U/sub/.git.cloister-blocked" ] && echo 0 || echo 1)" \
		"$who: the .git made in the subdirectory is moved aside" "$(diag)"
	modes=$(stat -c %a "$U" "$U/sub" "$U/hidden" | tr '\n' ' ')
	chmod 700 "$U/hidden"
	tap_ok "$([ ! -e "$U/hidden/deeper/.git" ] && [ -d "$U/hidden/deeper/.git.cloister-blocked" ] &&
		echo 0 || echo 1)" "$who: the .git below an unreadable directory is moved aside" "$(diag)"
	tap_is "$modes" "555 555 0 " "$who: the directories keep the modes the agent gave them"
done
chmod 755 "$U" "$U/sub" "$U/hidden" 2>/dev/null

tap_done
