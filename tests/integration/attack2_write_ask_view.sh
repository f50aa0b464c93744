#!/bin/sh
# Attack on the write ask (fs.ask: on-write), as root and as an unprivileged user: the
# supervisor decides and opens the path in the HOST's view, while the agent named it in the
# sandbox's. Where the two differ — the sandbox's private runtime directory, and the places the
# mount layer alone hides or keeps read-only (the dashboard secret, the audit log, the config
# directory), none of which fs.write/fs.protect/fs.hide name — an ordinary-looking "file" card
# hands the agent an fd of the host's file:
#   - the agent's own runtime directory ($XDG_RUNTIME_DIR, an empty tmpfs of its own, where
#     Landlock lets it write) is asked about, and an approval writes the HOST's runtime
#     directory instead;
#   - `exec 3<>$XDG_RUNTIME_DIR/cloister/secret` (a write open, O_RDWR) asks "file:
#     …/cloister/secret"; approved, the agent reads the dashboard secret it cannot even see;
#   - a hidden path that is a symlink (~/.aws -> ~/dotfiles/aws, as stow makes): the mount
#     layer hides its target, but fs.hide names the link, so a write open of the target by
#     its own name is an ordinary ask, and an approval reads the credentials;
#   - the audit log (hidden from the agent) and the config directory (read-only for the next
#     run's sake) are asked like any file, where fs.protect/fs.hide are refused at once.
# And the ways to reach a shielded file by another name, each refused at once (never asked):
#   - a bind mount of the config directory elsewhere (made on the host before the run);
#   - a hard link, made by the user in a visible place, to the hidden credentials;
#   - a relative path through ".." from the process's cwd;
#   - a directory fd's magic link (/proc/self/fd/N/…);
#   - the supervisor's own executable.
# The card shows the file the agent will write: a relative symlink from its cwd, resolved in
# its view; approved, the write lands there.
# Fixed: the path is resolved in the agent's view; the supervisor opens only where the host's
# directory is the very one that view shows (else the kernel layers decide), and a shielded
# identity (fs.hide, fs.protect, Cloister's own files) or a file with several names is refused.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=48
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

setup() { # WHO: a home, a worktree, a config and a runtime directory of its own
	user_tree "$1"
	mkdir -p "$H/sub" "$W/dotfiles/aws" "$W/cfgbind"
	# Dotfiles kept elsewhere and linked in (stow, chezmoi, home-manager): ~/.aws is hidden.
	echo "aws-secret-$$" >"$W/dotfiles/aws/credentials"
	ln -s "$W/dotfiles/aws" "$H/.aws"
	# A copy kept by hard link where the agent can see it.
	ln "$W/dotfiles/aws/credentials" "$H/creds.bak"
	ln -s sub/target "$H/lnk"
	cat >"$W/cfg/config.yaml" <<YAML
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
fs:
  ask: on-write
YAML
	user_tree_own
}

start() { # AGENT-SCRIPT: the supervisor in the background (pid in $SV)
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 40 $AS $USER_ENV "$BIN" run \
		--config-dir "$W/cfg" --name "a2v$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off --ask web --ask-timeout 20s \
		-- sh -c "$1") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
}
asked() { [ -n "$id" ] && echo 1 || echo 0; }

for who in root nobody; do
	setup "$who"

	# ---- the agent's own runtime directory: its writes go to the host's ----
	start "echo x >\"\$XDG_RUNTIME_DIR/agent.lock\"; echo \"rc \$?\""
	wait_pending "$W/rt/agent.lock"
	tap_is "$(asked)" 0 "$who: a write in the agent's own runtime directory is not asked" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$([ ! -e "$W/rt/agent.lock" ] && echo 0 || echo 1)" \
		"$who: ... and never lands in the host's runtime directory" "$(diag)"

	# ---- the dashboard secret, through a read-write open of a file the agent cannot see ----
	start "exec 3<>\"\$XDG_RUNTIME_DIR/cloister/secret\" && echo \"got \$(cat <&3)\""
	wait_pending "$W/rt/cloister/secret"
	tap_is "$(asked)" 0 "$who: a write open of the host's dashboard secret is refused at once, not asked" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	secret=$(cat "$W/rt/cloister/secret" 2>/dev/null)
	tap_ok "$(grep -qF "got $secret" "$OUT" && [ -n "$secret" ] && echo 1 || echo 0)" \
		"$who: ... and the agent never reads the dashboard secret" "$(diag)"

	# ---- the audit log, hidden from the agent ----
	start "exec 3<>'$AUD' && echo \"got \$(head -n 1 <&3)\""
	wait_pending "$AUD"
	tap_is "$(asked)" 0 "$who: a write open of the hidden audit log is refused at once, not asked" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$(grep -q "^got {" "$OUT" && echo 1 || echo 0)" \
		"$who: ... and the agent never reads the audit log" "$(diag)"

	# ---- a hidden directory that is a symlink: its target, by its own name ----
	start "cat '$W/dotfiles/aws/credentials' 2>/dev/null; exec 3<>'$W/dotfiles/aws/credentials' && echo \"got \$(cat <&3)\""
	wait_pending "$W/dotfiles/aws/credentials"
	tap_is "$(asked)" 0 "$who: a write open of hidden ~/.aws's target (a symlink to dotfiles/) is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$(grep -q "aws-secret-$$" "$OUT" && echo 1 || echo 0)" \
		"$who: ... and the agent never reads the hidden credentials" "$(diag)"

	# ---- the config directory (read-only for the next run's sake): asked like any file ----
	start "echo 'exec: {security: full}' >>'$W/cfg/config.yaml'; echo \"rc \$?\""
	wait_pending "$W/cfg/config.yaml"
	tap_is "$(asked)" 0 "$who: a write to the config directory is refused at once, as fs.protect is" "$out"
	[ -n "$id" ] && cli deny "$id"
	finish
	tap_ok "$(grep -q "security: full" "$W/cfg/config.yaml" && echo 1 || echo 0)" \
		"$who: ... and the config is unchanged" "$(diag)"

	# ---- the config directory bound elsewhere on the host ----
	mount --bind "$W/cfg" "$W/cfgbind"
	on_exit "umount '$W/cfgbind' 2>/dev/null"
	start "(echo 'exec: {security: full}' >>'$W/cfgbind/config.yaml') 2>&1; echo \"rc \$?\""
	wait_pending "$W/cfgbind/config.yaml"
	tap_is "$(asked)" 0 "$who: the config directory through a bind mount elsewhere is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$(grep -q "security: full" "$W/cfg/config.yaml" && echo 1 || echo 0)" \
		"$who: ... and the config is unchanged" "$(diag)"
	tap_like "$(cat "$OUT")" "cloister: write to $W/cfgbind/config.yaml refused: it is below Cloister's config directory" \
		"$who: ... and the process reads why" "$(diag)"
	umount "$W/cfgbind"

	# ---- a hard link to the hidden credentials ----
	start "(exec 3<>'$H/creds.bak' && echo \"got \$(cat <&3)\") 2>&1; echo \"rc \$?\""
	wait_pending "$H/creds.bak"
	tap_is "$(asked)" 0 "$who: a hard link to hidden credentials is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$(grep -q "got aws-secret" "$OUT" && echo 1 || echo 0)" \
		"$who: ... and the agent never reads them through it" "$(diag)"
	tap_like "$(cat "$OUT")" "refused: it has 2 names \\(hard links\\)" "$who: ... and the process reads why" "$(diag)"

	# ---- ".." from the process's cwd ----
	start "cd '$H/sub' && (echo x >>../../cfg/config.yaml) 2>&1; echo \"rc \$?\""
	wait_pending "config.yaml"
	tap_is "$(asked)" 0 "$who: the config through a relative path with .. is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_like "$(cat "$OUT")" "cloister: write to $W/cfg/config.yaml refused: it is below Cloister's config directory" \
		"$who: ... named as it resolves" "$(diag)"

	# ---- a directory fd's magic link ----
	start "exec 4<'$W/cfg'; (echo x >>/proc/self/fd/4/config.yaml) 2>&1; echo \"rc \$?\""
	wait_pending "config.yaml"
	tap_is "$(asked)" 0 "$who: the config through /proc/self/fd/N of its directory is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_ok "$(grep -qx "x" "$W/cfg/config.yaml" && echo 1 || echo 0)" \
		"$who: ... and the config is unchanged" "$(diag)"

	# ---- the supervisor's own executable ----
	start "(exec 3<>'$TMP/cloister-supervisor') 2>&1; echo \"rc \$?\""
	wait_pending "$TMP/cloister-supervisor"
	tap_is "$(asked)" 0 "$who: the supervisor's executable is refused at once" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_like "$(cat "$OUT")" "refused: it is the supervisor's executable" "$who: ... and the process reads why" "$(diag)"

	# ---- the card shows where the write lands: a relative symlink from the cwd ----
	start "cd '$H' && echo hello >lnk; echo \"rc \$?\""
	wait_pending "$H/sub/target"
	tap_is "$(asked)" 1 "$who: a write through a relative symlink asks about its target ($H/sub/target)" "$out"
	[ -n "$id" ] && cli approve "$id"
	finish
	tap_is "$(cat "$OUT"):$(cat "$H/sub/target" 2>&1)" "rc 0:hello" \
		"$who: ... approved, it lands there" "$(diag)"
done
tap_done
