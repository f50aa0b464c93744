#!/bin/sh
# Attack: plant something that runs outside the sandbox later, with no allowed exec or
# connection, as root and as an unprivileged user. What holds:
#   - its own executable, when it lives where the agent's uid may write (a root agent: any
#     directory; a user's: ~/.local/bin, where this test installs it, or a build tree): were it
#     renamed over, the next `cloister-supervisor run` would run the agent's code unconfined
#     (read-only, parents pinned);
#   - the default config directory (~/.config/cloister) when this run uses --config-dir: a
#     config.yaml with `security: full` planted there would be the next plain `run`'s;
#   - files that other programs run without the user running the agent's code: the project's
#     .git/hooks/pre-commit and .git/config (core.fsmonitor runs at every `git status`), and
#     the shell's start-up files (~/.bashrc, ~/.profile).
# The file system's confinement (the fs: section's built-in default) closes the third and holds
# the first two as well: outside
# the worktree and the caches everything is read-only, and .git/hooks and .git/config stay
# read-only inside the worktree.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git cmp
tap_plan $PLAN

attack_setup

# The agent: every plant, each reported on its own line.
cat >"$TMP/plant.sh" <<'EOF'
bin=$HOME/.local/bin/cloister-supervisor proj=$1
printf '#!/bin/sh\necho agent code, unconfined >&2\n' >"$bin.new" && chmod 755 "$bin.new" &&
	mv "$bin.new" "$bin" && echo "planted: the supervisor"
# … or rewritten in place, or removed for a program of the same name found later on PATH.
cat "$bin.new" >"$bin" && echo "planted: the supervisor, in place"
rm -f "$bin" && echo "removed: the supervisor"
mkdir -p "$HOME/.config/cloister" &&
	printf 'exec:\n  security: full\n' >"$HOME/.config/cloister/config.yaml" &&
	echo "planted: the default config"
printf '#!/bin/sh\necho agent code\n' >"$proj/.git/hooks/pre-commit" &&
	chmod 755 "$proj/.git/hooks/pre-commit" && echo "planted: a git hook"
printf '[core]\n\tfsmonitor = echo agent code\n' >>"$proj/.git/config" &&
	echo "planted: git's config"
echo 'echo agent code' >>"$HOME/.bashrc" && echo 'echo agent code' >>"$HOME/.profile" &&
	echo "planted: the shell's start-up files"
exit 0
EOF
chmod 644 "$TMP/plant.sh"

for who in root nobody; do
	# The supervisor installed in the user's ~/.local/bin (a copy: never the build's).
	if [ "$who" = root ]; then
		home=$HOME
		proj=$TMP/proj
	else
		home=$U/home
		proj=$U/proj
	fi
	bin=$home/.local/bin/cloister-supervisor
	mkdir -p "$home/.local/bin"
	cp "$SUPERVISOR" "$bin"
	rm -rf "$proj"
	git init -q "$proj"
	cp "$proj/.git/config" "$TMP/gitconfig-before"
	printf '# the user'"'"'s\n' >"$home/.bashrc"
	cp "$home/.bashrc" "$home/.profile"
	[ "$who" = root ] || chown -R "$NOBODY:$NOBODY" "$proj" "$home"
	if [ "$who" = root ]; then
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" "$bin" run --config-dir "$CFG" \
			--ask none -- sh "$TMP/plant.sh" "$proj") </dev/null >"$OUT" 2>"$ERR"
		rc=$?
	else
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY \
			--regid=$NOBODY --clear-groups env HOME="$home" \
			XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$U/state" \
			"$bin" run --config-dir "$U/cfg" --ask none -- sh "$TMP/plant.sh" "$proj") \
			</dev/null >"$OUT" 2>"$ERR"
		rc=$?
	fi
	echo "# $who: $(tr '\n' ';' <"$OUT")"
	tap_is "$rc" 0 "$who: the agent ran" "$(diag)"

	cmp -s "$bin" "$SUPERVISOR"
	tap_ok $? "$who: the supervisor's executable is the same file after the run" \
		"it now holds: $(head -c 200 "$bin" | tr -d '\000')"
	tap_ok "$(test -e "$home/.config/cloister/config.yaml" && echo 1 || echo 0)" \
		"$who: no config.yaml planted in the default config directory for the next plain run" \
		"$(cat "$home/.config/cloister/config.yaml" 2>&1)"
	tap_ok "$(test -e "$proj/.git/hooks/pre-commit" && echo 1 || echo 0)" \
		"$who: no git hook planted in the project"
	tap_ok "$(cmp -s "$proj/.git/config" "$TMP/gitconfig-before" && echo 0 || echo 1)" \
		"$who: the project's .git/config is unchanged" "$(cat "$proj/.git/config")"
	tap_ok "$(grep -c 'agent code' "$home/.bashrc" "$home/.profile" | grep -vc ':0$')" \
		"$who: the shell's start-up files are unchanged" "$(grep -H 'agent code' "$home/.bashrc" "$home/.profile")"
	rm -rf "$home/.config/cloister"
done

tap_done
