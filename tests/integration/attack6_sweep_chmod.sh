#!/bin/sh
# Attack on the end-of-run sweep ("moved aside"), as an unprivileged user (and as root, where it
# holds, for coverage). What the layers cannot hold during the run — a protected name that did
# not exist at the start (.envrc, rust-toolchain.toml), a .git made in a subdirectory — is
# renamed aside when the agent is gone. A rename needs write and search permission on the
# directory, and the project is the agent's uid's: the agent takes them off (chmod 555) the
# project's top and the subdirectory. A supervisor that is not root then failed each rename
# with EACCES and only warned; .envrc, the toolchain file and sub/.git stayed for the host's
# direnv, shell prompt and git.
# What must hold: each is moved aside all the same (the directory is the supervisor's uid's: it
# gets its permission back for the rename), and the directory keeps the mode the agent gave
# it. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
nobody_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
chown "$NOBODY:$NOBODY" "$U/cloister-supervisor"
cat >"$U/agent.sh" <<'EOF'
printf 'echo from-the-agent\n' >.envrc
printf '[toolchain]\npath = "%s/tc"\n' "$PWD" >rust-toolchain.toml
mkdir -p sub/.git/hooks
printf '[core]\n\tfsmonitor = echo\n' >sub/.git/config
chmod 555 sub .
EOF
chmod 644 "$U/agent.sh"

for who in root nobody; do
	chmod 755 "$U" "$U/sub" 2>/dev/null
	rm -rf "$U/.envrc"* "$U/rust-toolchain.toml"* "$U/sub"
	sv_as "$who" --ask none -- /bin/sh "$U/agent.sh"
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who: the agent ran" "$(diag)"
	tap_ok "$([ ! -e "$U/.envrc" ] && [ ! -e "$U/rust-toolchain.toml" ] &&
		[ -f "$U/.envrc.cloister-blocked" ] && [ -f "$U/rust-toolchain.toml.cloister-blocked" ] &&
		echo 0 || echo 1)" "$who: the protected names made at the top are moved aside" "$(diag)"
	tap_ok "$([ ! -e "$U/sub/.git" ] && [ -d "$U/sub/.git.cloister-blocked" ] && echo 0 || echo 1)" \
		"$who: the .git made in the subdirectory is moved aside" "$(diag)"
	tap_is "$(stat -c %a "$U" "$U/sub" | tr '\n' ' ')" "555 555 " \
		"$who: the directories keep the mode the agent gave them"
done
chmod 755 "$U" "$U/sub" 2>/dev/null

tap_done
