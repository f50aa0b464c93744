#!/bin/sh
# The built-in config fits real agent work: a scripted local session on a terminal — a Debian
# .bashrc with a pyenv-style version manager in the home, reading and searching, building
# with make and cc and running what was built, python3 and a venv, local git (commit, branch,
# stash, git's automatic maintenance), the everyday utilities — raises no ask; network tools,
# git's remote commands, installs, container and cloud CLIs and privilege changes still ask
# (or are denied); the agents installed from npm start (--version) without an ask. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 16
run_needs_tools 16 git make cc python3 bash
tap_plan 16
SV_TIMEOUT=120

# ---- a home with a version manager the way pyenv lays it out: shims that run the manager's
# own scripts, which pick a version and exec its interpreter ----
PY=$HOME/.pyenv
mkdir -p "$PY/bin" "$PY/libexec" "$PY/shims" "$PY/versions/3.99.0/bin"
cat >"$PY/libexec/pyenv" <<'PYENV'
#!/usr/bin/env bash
set -e
PYENV_ROOT=${PYENV_ROOT:-$(dirname "$(dirname "$(readlink -f "$0")")")}
export PYENV_ROOT
cmd=$1
shift
exec "$PYENV_ROOT/libexec/pyenv-$cmd" "$@"
PYENV
cat >"$PY/libexec/pyenv-init" <<'PYENV'
#!/usr/bin/env bash
echo "export PATH=\"$PYENV_ROOT/shims:\$PATH\""
echo "export PYENV_SHELL=$(basename "${SHELL:-bash}")"
PYENV
cat >"$PY/libexec/pyenv-exec" <<'PYENV'
#!/usr/bin/env bash
set -e
version=$(cat "$PYENV_ROOT/version" 2>/dev/null || echo 3.99.0)
program=$1
shift
exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"
PYENV
cat >"$PY/shims/python3" <<'PYENV'
#!/usr/bin/env bash
set -e
program="${0##*/}"
export PYENV_ROOT="$HOME/.pyenv"
exec "$PYENV_ROOT/libexec/pyenv" exec "$program" "$@"
PYENV
printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$PY/versions/3.99.0/bin/python3"
ln -s ../libexec/pyenv "$PY/bin/pyenv"
chmod 755 "$PY"/libexec/* "$PY"/shims/* "$PY"/versions/3.99.0/bin/*
{
	if [ -r /etc/skel/.bashrc ]; then cat /etc/skel/.bashrc; fi
	cat <<'RC'
export PYENV_ROOT="$HOME/.pyenv"
export PATH="$PYENV_ROOT/bin:$PATH"
eval "$(pyenv init -)"
RC
} >"$HOME/.bashrc"

# ---- the project and the session ----
W=$TMP/project
mkdir -p "$W"
cat >"$W/session.sh" <<'SESSION'
set -u
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.invalid
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.invalid
git init -q .
printf '#include <stdio.h>\nint main(void) { puts("built-and-ran"); return 0; }\n' >hello.c
printf 'hello: hello.c\n\tcc -O2 -o hello hello.c\n' >Makefile
cat hello.c | head -n 1 | tail -n 1 | wc -l | sort | uniq >/dev/null
ls -la >/dev/null; grep -rn main . >/dev/null; find . -name '*.c' | xargs cat >/dev/null
diff hello.c hello.c; sed -n 1p hello.c >/dev/null; awk 'NR==1' hello.c >/dev/null
cut -c1-3 hello.c >/dev/null; tr a b <hello.c >/dev/null; less -F hello.c </dev/null >/dev/null
make -s && ./hello
git status --short >/dev/null; git add -A; git commit -qm init
git commit -q --allow-empty -m again
git --no-pager log --oneline >/dev/null; git log -1 >/dev/null; git diff HEAD; git branch topic; git checkout -q topic
echo change >>hello.c; git stash -q; git stash list >/dev/null; git stash pop -q; git checkout -q -- hello.c
git checkout -q -; git maintenance run --auto; git gc --auto -q
t=$(mktemp); rm -f "$t"; d=$(mktemp -d); rmdir "$d"
ps aux >/dev/null; tar czf out.tgz hello.c; tar tzf out.tgz >/dev/null; clear; tput cols >/dev/null
nproc >/dev/null; echo hi | base64 | base64 -d >/dev/null; timeout 5 true; which ls >/dev/null
env >/dev/null; date >/dev/null; sleep 0; dirname /a/b >/dev/null; basename /a/b >/dev/null
realpath . >/dev/null; readlink -f . >/dev/null; id >/dev/null; uname -a >/dev/null
du -sh . >/dev/null; stat hello.c >/dev/null; file hello.c >/dev/null; touch x; chmod 644 x
chmod +x x; ln -s x y; cp x z; mv z w; rm -f x y w; mkdir -p a/b; rm -r a
python3 -c 'print("python-ran")'
python3 -m venv --without-pip venv && ./venv/bin/python3 -c 'print("venv-ran")'
echo session-done
SESSION

# The session on a terminal of its own, as a person starts an agent: bash -i reads .bashrc.
# --ask none: an ask is answered by exec.ask_fallback (deny) and says so, so asks are counted
# by those denials and the audit log's fallback lines.
audit_reset
(cd "$W" && timeout "$SV_TIMEOUT" "$HELPERS/ptyanswer" --ctty - -- "$SUPERVISOR" run \
	--config-dir "$CFG" --ask none -- bash -i -c '. ./session.sh' >"$OUT" 2>&1)
rc=$?
tap_is "$rc" 0 "the session on a terminal ends with status 0"
tap_like "$(cat "$OUT")" "built-and-ran" "the program built in the worktree ran"
tap_like "$(cat "$OUT")" "python-ran" "python3 through the pyenv-style shim ran"
tap_like "$(cat "$OUT")" "venv-ran" "python3 of a venv in the worktree ran"
tap_like "$(cat "$OUT")" "session-done" "the whole session ran"
asks=$(grep -c "nobody can answer" "$OUT")
fallbacks=$(audit_count '"decided_by":"fallback"')
[ "$asks:$fallbacks" = "0:0" ]
tap_ok $? "no ask in the whole session ($asks on the terminal, $fallbacks in the audit log)" \
	"$(grep -o '"decided_by":"fallback"' "$AUDIT" >/dev/null 2>&1 &&
		grep '"decided_by":"fallback"' "$AUDIT" | grep -o '"summary":"[^"]*"')"

# ---- what still asks, or is denied ----
audit_reset
sv --ask none -- sh -c '
	curl -s --max-time 1 http://127.0.0.1:9 ; wget -q -T 1 -O- http://127.0.0.1:9
	git init -q r && cd r && git push -q origin main 2>/dev/null; git fetch -q 2>/dev/null
	git config user.name x; cd ..
	apt-get --version; chmod u+s /bin/sh 2>/dev/null; chmod 4755 r
	command -v ssh >/dev/null && ssh -V; command -v kubectl >/dev/null && kubectl version
	exit 0' </dev/null
risky=$(audit_count '"decided_by":"fallback"')
want=8
command -v ssh >/dev/null 2>&1 && want=$((want + 1))
command -v kubectl >/dev/null 2>&1 && want=$((want + 1))
[ "$risky" = "$want" ]
tap_ok $? "network tools, git push/fetch/config, apt-get, set-user-ID chmod ask ($risky of $want)" \
	"$(grep -o '"summary":"[^"]*","verdict":"[^"]*"' "$AUDIT")"
audit_reset
sv --ask none -- sh -c 'sudo -n true; su -c true; exit 0'
denied=$(grep '"verdict":"deny","rule":"exec.deny' "$AUDIT" | grep -c '"summary":"su -c true"')
if command -v sudo >/dev/null 2>&1; then
	denied=$((denied + $(grep '"verdict":"deny","rule":"exec.deny' "$AUDIT" |
		grep -c '"summary":"sudo -n true"')))
fi
[ "$denied" -ge 1 ]
tap_ok $? "sudo and su are denied by rule" \
	"$(grep -o '"summary":"[^"]*","verdict":"[^"]*","rule":"[^"]*"' "$AUDIT")"

# ---- the agents themselves ----
for agent in claude codex; do
	if ! command -v "$agent" >/dev/null 2>&1; then
		tap_skip "$agent --version under run" "$agent is not installed (scripts/install-deps)"
		tap_skip "... without an ask" "$agent is not installed"
		continue
	fi
	audit_reset
	sv --ask none -- "$agent" --version
	tap_is "$rc" 0 "$agent --version under run: status 0" "$(cat "$ERR")"
	[ "$(audit_count '"decided_by":"fallback"')" = 0 ]
	tap_ok $? "... without an ask" "$(grep -o '"exe":"[^"]*"' "$AUDIT" | sort | uniq -c)"
done

# ---- the worktree's programs: allowed with the built-in list, not with `defaults: false`,
# nor in a worktree that holds $HOME ($TMP here) ----
printf '#!/bin/sh\necho worktree-program\n' >"$W/prog"
chmod 755 "$W/prog"
cp "$W/prog" "$TMP/prog"
# sv_in DIR [RUN OPTIONS] -- AGENT: sv, started in DIR.
sv_in() {
	dir=$1
	shift
	(cd "$dir" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" "$@") \
		</dev/null >"$OUT" 2>"$ERR"
	rc=$?
}
audit_reset
sv_in "$W" -v --ask none -- sh -c './prog'
tap_is "$rc:$(cat "$OUT")" "0:worktree-program" "built-in list: a program in the worktree runs"
tap_like "$(cat "$ERR")" "allowed for this run: programs under $W" "-v says so"
audit_reset
sv_in "$TMP" --ask none -- sh -c './prog'
tap_is "$rc:$(audit_count '"decided_by":"fallback"')" "126:1" \
	"a worktree that holds \$HOME: its program asks"
write_config <<'YAML'
exec:
  defaults: false
  allow:
    - path: "/usr/bin/dash"
    - path: "/bin/dash"
YAML
audit_reset
sv_in "$W" --ask none -- sh -c './prog'
tap_is "$rc:$(audit_count '"decided_by":"fallback"')" "126:1" \
	"exec.defaults false: the worktree's program asks"
tap_done
