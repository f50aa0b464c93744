#!/bin/sh
# The file system's confinement under the built-in fs: section, as root and as nobody: the
# agent writes its project and a private /tmp, builds with make, installs with npm (a local
# tarball, npm's cache writable) and pip --target (a local wheel) into the project; it cannot
# write ~/.bashrc, ~/.gitconfig, a systemd user unit, the project's .git/hooks or .git/config,
# nor rename .git away; it sees ~/.ssh and the other hidden credentials as absent or empty.
# With --test-no-fs-mounts (the mount layer left out), Landlock alone refuses the writes
# outside the project (EACCES where the mount layer says EROFS: the message tells which layer
# refused), and on the host's network a host service's abstract unix socket stays out of reach
# (Landlock's scope: the network namespace is shared there, no mount is involved).
# --require-fs-confinement refuses to start without both layers. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=64
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git make cc npm node /usr/bin/python3
# Landlock's ABI (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION): 2 at least.
abi=$(/usr/bin/python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null)
[ "${abi:-0}" -ge 2 ] 2>/dev/null ||
	run_skip_all $PLAN "Landlock ABI >= 2 is not available on this kernel (got ${abi:-none})"
tap_plan $PLAN
SV_TIMEOUT=90
PY=/usr/bin/python3

write_config <<'EOF'
exec:
  security: full
EOF
nobody_setup unixsock

# A local npm package and a local wheel: nothing comes from the network.
mkdir -p "$TMP/src/npmpkg" "$TMP/src/wheel"
cat >"$TMP/src/npmpkg/package.json" <<'EOF'
{"name": "cloister-fs-test-pkg", "version": "1.0.0", "main": "index.js"}
EOF
echo 'module.exports = "npm-ok";' >"$TMP/src/npmpkg/index.js"
(cd "$TMP/src" && npm pack --silent ./npmpkg >/dev/null 2>&1)
"$PY" - "$TMP/src/wheel/cloister_fs_test-1.0-py3-none-any.whl" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("cloister_fs_test.py", "OK = 'pip-ok'\n")
    d = "cloister_fs_test-1.0.dist-info/"
    z.writestr(d + "METADATA", "Metadata-Version: 2.1\nName: cloister-fs-test\nVersion: 1.0\n")
    z.writestr(d + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(d + "RECORD", "")
EOF
chmod -R a+rX "$TMP/src"

# The agent: each probe on a line of its own, "NAME: ok" or "NAME: <error>".
cat >"$TMP/agent.sh" <<'EOF'
proj=$1 src=$2 full=$3
# The error's last line: the kernel's message, after Cloister's reason line (run_fs_reason.sh).
probe() { n=$1; shift; if out=$("$@" 2>&1); then echo "$n: ok"; else echo "$n: $(echo "$out" | tail -n 1)"; fi; }
w() { echo planted >>"$1"; }
probe worktree w "$proj/notes.txt"
probe tmp w /tmp/x
probe bashrc w "$HOME/.bashrc"
probe gitconfig w "$HOME/.gitconfig"
probe systemd sh -c 'mkdir -p "$HOME/.config/systemd/user" && echo x >"$HOME/.config/systemd/user/x.service"'
probe hook w "$proj/.git/hooks/pre-commit"
probe gitcfg w "$proj/.git/config"
probe renamegit mv "$proj/.git" "$proj/.git-moved"
probe envrc w "$proj/.envrc"
probe vscode sh -c "mkdir '$proj/.vscode' && echo '{}' >'$proj/.vscode/tasks.json'"
probe claudestate sh -c 'mkdir -p "$HOME/.claude/projects" && echo x >"$HOME/.claude/projects/s.jsonl"'
probe claudesettings w "$HOME/.claude/settings.json"
probe sshkey cat "$HOME/.ssh/id_ed25519"
echo "sshdir: $(ls -A "$HOME/.ssh" 2>&1 | tr '\n' ' ')"
echo "netrc: [$(cat "$HOME/.netrc" 2>&1)]"
probe aws cat "$HOME/.aws/credentials"
probe gh cat "$HOME/.config/gh/hosts.yml"
[ "$full" = full ] || exit 0
cd "$proj" || exit 1
probe make make -s
echo "hello: $(./hello 2>&1)"
probe npm npm install --no-audit --no-fund --no-update-notifier --loglevel=error "$src/cloister-fs-test-pkg-1.0.0.tgz"
echo "npmuse: $(node -e 'process.stdout.write(require("cloister-fs-test-pkg"))' 2>&1)"
probe pip /usr/bin/python3 -m pip install --no-index --disable-pip-version-check -q --target "$proj/pylib" "$src/wheel/cloister_fs_test-1.0-py3-none-any.whl"
echo "pipuse: $(PYTHONPATH="$proj/pylib" /usr/bin/python3 -c 'import cloister_fs_test; print(cloister_fs_test.OK)' 2>&1)"
EOF
chmod 644 "$TMP/agent.sh"

# setup WHO: a home with start-up files and credentials, a git project that builds.
setup() {
	if [ "$1" = root ]; then home=$TMP/home proj=$TMP/proj; else home=$U/home proj=$U/proj; fi
	rm -rf "$proj" "$home/.ssh" "$home/.aws" "$home/.config" "$home/.npm" "$home/.claude"
	git init -q "$proj"
	printf 'hello: hello.c\n\tcc -o hello hello.c\n' >"$proj/Makefile"
	printf '#include <stdio.h>\nint main(void) { puts("built"); return 0; }\n' >"$proj/hello.c"
	mkdir -p "$home/.ssh" "$home/.aws" "$home/.config/gh"
	echo "PRIVATE KEY" >"$home/.ssh/id_ed25519"
	echo "[default]" >"$home/.aws/credentials"
	echo "machine example.com password hunter2" >"$home/.netrc"
	echo "oauth_token: gho_x" >"$home/.config/gh/hosts.yml"
	echo "# the user's" >"$home/.bashrc"
	cp "$home/.bashrc" "$home/.gitconfig"
	cp "$proj/.git/config" "$TMP/gitconfig.$1"
	[ "$1" = root ] || chown -R "$NOBODY:$NOBODY" "$proj" "$home"
}

# agent WHO [RUN OPTIONS]: run the agent in WHO's project; $mode "full" adds the builds.
mode=short
agent() {
	who=$1
	shift
	if [ "$who" = root ]; then
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" env HOME="$home" "$SUPERVISOR" run \
			--config-dir "$CFG" --ask none "$@" -- sh "$TMP/agent.sh" "$proj" "$TMP/src" "$mode") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$home" XDG_CONFIG_HOME="$home/.config" \
			XDG_STATE_HOME="$U/state" "$UB/cloister-supervisor" run --config-dir "$U/cfg" \
			--ask none "$@" -- sh "$TMP/agent.sh" "$proj" "$TMP/src" "$mode") </dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
}

line() { sed -n "s/^$1: //p" "$OUT" | head -n 1; }

for who in root nobody; do
	# ---- both layers, the built-in default ----
	setup "$who"
	mode=full
	agent "$who"
	mode=short
	tap_is "$rc" 0 "$who: the agent ran" "$(diag)"
	tap_is "$(line worktree) $(line tmp)" "ok ok" "$who: the project and the private /tmp are writable" "$(diag)"
	tap_like "$(line bashrc)" "Read-only file system" "$who: ~/.bashrc cannot be written" "$(diag)"
	tap_like "$(line gitconfig)" "Read-only file system" "$who: ~/.gitconfig cannot be written"
	tap_like "$(line systemd)" "Read-only file system" "$who: no systemd user unit can be planted"
	tap_like "$(line hook)" "Read-only file system" "$who: .git/hooks/pre-commit cannot be written inside the project"
	tap_like "$(line gitcfg)" "Read-only file system" "$who: .git/config cannot be written inside the project"
	tap_like "$(line renamegit)" "busy" "$who: .git cannot be renamed away to plant another"
	tap_ok "$(grep -q planted "$home/.bashrc" "$home/.gitconfig" "$proj/.git/config" 2>/dev/null && echo 1 || echo 0)" \
		"$who: none of those files changed on the host"
	tap_ok "$([ ! -e "$proj/.git/hooks/pre-commit" ] && [ -d "$proj/.git" ] && echo 0 || echo 1)" \
		"$who: no hook on the host, .git still in place"
	# Protected names absent at the start: created in the run, moved aside at its end.
	tap_is "$(line envrc) $(line vscode) $(line claudestate) $(line claudesettings)" "ok ok ok ok" \
		"$who: the agent could create .envrc, .vscode/, its state and ~/.claude/settings.json" "$(diag)"
	tap_ok "$([ ! -e "$proj/.envrc" ] && [ -f "$proj/.envrc.cloister-blocked" ] &&
		[ ! -e "$proj/.vscode" ] && [ -f "$proj/.vscode.cloister-blocked/tasks.json" ] &&
		[ ! -e "$home/.claude/settings.json" ] &&
		[ -f "$home/.claude/settings.json.cloister-blocked" ] && echo 0 || echo 1)" \
		"$who: when the run ended, they were moved aside" "$(ls -A "$proj" "$home/.claude")"
	tap_ok "$([ -f "$home/.claude/projects/s.jsonl" ] && echo 0 || echo 1)" \
		"$who: the agent's own state stays"
	tap_ok "$(grep -qF "created $proj/.envrc, which is protected (fs.protect): moved to $proj/.envrc.cloister-blocked" "$ERR" && echo 0 || echo 1)" \
		"$who: the run says what it moved" "$(cat "$ERR")"
	tap_like "$(line sshkey)" "No such file" "$who: ~/.ssh/id_ed25519 reads as absent"
	tap_is "$(line sshdir)" "" "$who: ~/.ssh is an empty directory"
	tap_is "$(line netrc)" "[]" "$who: ~/.netrc reads as empty"
	tap_like "$(line aws) $(line gh)" "No such file.*No such file" "$who: ~/.aws and ~/.config/gh read as absent"
	tap_is "$(line make) $(line hello)" "ok built" "$who: make builds in the project" "$(diag)"
	tap_is "$(line npm) $(line npmuse)" "ok npm-ok" "$who: npm install of a local package into the project" "$(diag)"
	tap_is "$(line pip) $(line pipuse)" "ok pip-ok" "$who: pip install --target into the project" "$(diag)"
	tap_ok "$([ -d "$home/.npm/_cacache" ] && echo 0 || echo 1)" "$who: npm's cache was written (~/.npm)"
	tap_is "$(cat "$home/.ssh/id_ed25519")" "PRIVATE KEY" "$who: the host's key is untouched"

	# ---- Landlock alone: the mount layer left out (test-only switch) ----
	setup "$who"
	agent "$who" --test-no-fs-mounts
	tap_is "$rc" 0 "$who, Landlock alone: the agent ran" "$(diag)"
	tap_is "$(line worktree) $(line tmp)" "ok ok" "$who, Landlock alone: the project and /tmp are writable"
	tap_like "$(line bashrc)" "Permission denied" "$who, Landlock alone: ~/.bashrc refused (EACCES: Landlock)" "$(diag)"
	tap_like "$(line gitconfig)" "Permission denied" "$who, Landlock alone: ~/.gitconfig refused"
	tap_like "$(line systemd)" "Permission denied" "$who, Landlock alone: no systemd user unit"
	tap_ok "$(grep -q planted "$home/.bashrc" "$home/.gitconfig" 2>/dev/null && echo 1 || echo 0)" \
		"$who, Landlock alone: the start-up files are unchanged on the host"
done

# ---- a host service's abstract socket, on the host's network: Landlock's scope ----
unix_server "@cloister-fs-$$"
cat >"$TMP/abstract.sh" <<EOF
"$HELPERS/unixsock" connect @cloister-fs-$$ 2>&1 | tail -n 1
EOF
chmod 644 "$TMP/abstract.sh"
"$HELPERS/unixsock" connect "@cloister-fs-$$" >"$TMP/outside" 2>&1
tap_is "$(cat "$TMP/outside")" "hello" "the host service answers outside the sandbox"
(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" --ask none \
	--net host --test-no-fs-mounts -- sh "$TMP/abstract.sh") </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_like "$(cat "$OUT")" "connect: " \
	"root, --net host, no mount layer: the host's abstract socket is out of reach (Landlock scope)" "$(diag)"

# ---- --require-fs-confinement ----
(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" --ask none \
	--require-fs-confinement --test-no-fs-mounts -- true) </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_ok "$([ "$rc" != 0 ] && grep -q 'require-fs-confinement' "$ERR" && echo 0 || echo 1)" \
	"--require-fs-confinement refuses to start without the mount layer" "$(diag)"
(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run -v --config-dir "$CFG" --ask none \
	--require-fs-confinement -- true) </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 0 "--require-fs-confinement starts with both layers" "$(diag)"
tap_like "$(cat "$ERR")" "files, mount layer: on" "-v says the mount layer is on"
tap_like "$(cat "$ERR")" "files, Landlock: on" "-v says Landlock's file rules are on"

tap_done
