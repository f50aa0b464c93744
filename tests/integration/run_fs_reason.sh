#!/bin/sh
# The agent learns why a write was refused under the built-in default (fs.ask: off), as root
# and as nobody: the kernel layers refuse `echo x >> ~/.bashrc` and a write to the project's
# .git/hooks/pre-commit (EROFS), and the refused process's own stderr carries one line,
# "cloister: write to PATH refused: fs.protect[…] "…" (<built-in>…) — ask the user to allow it";
# a write outside fs.write names that; a write inside the project says nothing; a protected
# name absent at the start (created, moved aside at the end) says nothing; --quiet-to-agent
# says nothing; a flood of refused writes yields a bounded number of lines (one per process
# and path, at most 10 a second). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=20
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
abi=$(/usr/bin/python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null)
[ "${abi:-0}" -ge 2 ] 2>/dev/null ||
	run_skip_all $PLAN "Landlock ABI >= 2 is not available on this kernel (got ${abi:-none})"
tap_plan $PLAN
SV_TIMEOUT=90

write_config <<'EOF'
exec:
  security: full
EOF
nobody_setup

# The agent: each probe's stderr in a file of its own in the project (writable), so that the
# reason line is seen where the agent sees it.
cat >"$TMP/agent.sh" <<'EOF'
proj=$1
e=$proj/err
mkdir -p "$e"
echo x 2>"$e/bashrc" >>"$HOME/.bashrc"
echo x 2>"$e/hook" >"$proj/.git/hooks/pre-commit"
echo x 2>"$e/outside" >"$HOME/new-file"
echo x 2>"$e/inside" >"$proj/notes.txt"
echo x 2>"$e/envrc" >"$proj/.envrc"
echo x 2>>"$e/envrc" >>"$proj/.envrc"
# The same path again and again from one process: one line.
sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo x >>"$HOME/.bashrc"; done' 2>"$e/same"
# A flood of paths: bounded per second.
start=$(date +%s)
sh -c 'i=0; while [ $i -lt 300 ]; do echo x >"$HOME/flood$i"; i=$((i + 1)); done' 2>"$e/flood"
# The monotonic seconds it may span: one more than the wall clock's, and one for the cut.
echo $(($(date +%s) - start + 2)) >"$e/seconds"
EOF
chmod 644 "$TMP/agent.sh"

setup() {
	if [ "$1" = root ]; then home=$TMP/home proj=$TMP/proj; else home=$U/home proj=$U/proj; fi
	rm -rf "$proj"
	mkdir -p "$home"
	git init -q "$proj"
	echo "# the user's" >"$home/.bashrc"
	[ "$1" = root ] || chown -R "$NOBODY:$NOBODY" "$proj" "$home"
}

agent() {
	who=$1
	shift
	if [ "$who" = root ]; then
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" env HOME="$home" "$SUPERVISOR" run \
			--config-dir "$CFG" --ask none "$@" -- sh "$TMP/agent.sh" "$proj") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$home" XDG_CONFIG_HOME="$home/.config" \
			XDG_STATE_HOME="$U/state" "$UB/cloister-supervisor" run --config-dir "$U/cfg" \
			--ask none "$@" -- sh "$TMP/agent.sh" "$proj") </dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
}

notes() { grep -c '^cloister: ' "$proj/err/$1"; }

for who in root nobody; do
	setup "$who"
	agent "$who"
	tap_is "$rc" 0 "$who: the agent ran" "$(diag)"
	e=$proj/err
	tap_ok "$(grep -q 'Read-only file system' "$e/bashrc" &&
		grep -qF "cloister: write to $home/.bashrc refused: fs.protect[" "$e/bashrc" &&
		grep -qF '"~/.bashrc" (<built-in>' "$e/bashrc" &&
		grep -qF 'ask the user to allow it' "$e/bashrc" && echo 0 || echo 1)" \
		"$who: echo x >> ~/.bashrc fails with EROFS and the reason line" "$(cat "$e/bashrc")"
	tap_ok "$(grep -q 'Read-only file system' "$e/hook" &&
		grep -qF "cloister: write to $proj/.git/hooks/pre-commit refused: fs.protect[" "$e/hook" &&
		grep -qF '"{worktree}/.git/hooks"' "$e/hook" && echo 0 || echo 1)" \
		"$who: .git/hooks/pre-commit fails with EROFS and the reason line" "$(cat "$e/hook")"
	tap_ok "$(grep -q 'Read-only file system' "$e/outside" &&
		grep -qF "cloister: write to $home/new-file refused: not in fs.write" "$e/outside" &&
		echo 0 || echo 1)" "$who: a write outside fs.write names that" "$(cat "$e/outside")"
	tap_is "$(cat "$e/inside")" "" "$who: a write in the project says nothing"
	tap_is "$(cat "$e/envrc")" "" "$who: a protected name absent at the start is created and appended to, no line"
	tap_is "$(notes same)" 1 "$who: one process writing one path ten times: one line" "$(cat "$e/same")"
	n=$(notes flood) s=$(cat "$e/seconds")
	tap_ok "$([ "$n" -ge 1 ] && [ "$n" -le $((10 * s)) ] && echo 0 || echo 1)" \
		"$who: 300 refused writes in $s s: $n lines (at most 10 a second)"
	tap_ok "$([ ! -e "$home/flood0" ] && ! grep -q '^x' "$home/.bashrc" && echo 0 || echo 1)" \
		"$who: nothing was written on the host"

	setup "$who"
	agent "$who" --quiet-to-agent
	tap_ok "$(grep -q 'Read-only file system' "$proj/err/bashrc" &&
		! grep -q '^cloister:' "$proj/err/bashrc" "$proj/err/hook" "$proj/err/flood" &&
		echo 0 || echo 1)" "$who: --quiet-to-agent: the refusal without a line" "$(cat "$proj/err/bashrc")"
done
