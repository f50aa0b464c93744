#!/bin/sh
# Exec decisions with scopes, as a person makes them and the agent meets them (issue 15):
#   - from the CLI (`approve|deny ID --scope S [--program | --pattern P]`) on a `run --ask web`:
#     session (exact and program), project (pattern), global (program), and a session denial
#     that answers a retrying agent at once, without a new ask;
#   - a bad pattern refused before anything is decided;
#   - the decisions files hold the project and global ones (exec: entries), a second run
#     honours them without asking (session ones are gone), `policy show` names their origin,
#     `decisions rm` undoes one;
#   - from the terminal (a test pty): `c` (what it covers) then `g` allows the program for
#     every project, and the file says so; `e` edits the pattern on the card.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=42
run_needs_root $PLAN
tap_plan $PLAN

# pending_count: how many asks wait now.
pending_count() {
	cli pending
	printf '%s\n' "$out" | grep -c '^[0-9a-f]\{12\} '
}

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
write_config <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
EOF
PROJECT=dec$$
GLOBAL_FILE=$CFG/decisions/global.yaml
PROJECT_FILE=$CFG/decisions/projects/$PROJECT.yaml

start_sv() { # NAME
	rm -f "$TMP"/cmd* "$TMP"/out*
	# In $TMP: the worktree, where the agent may write its outputs.
	(cd "$TMP" && exec "$SUPERVISOR" run --config-dir "$CFG" --project "$PROJECT" --ask web \
		--ask-timeout 60s --name "$1" --listen-approval 127.0.0.1:0 \
		--listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0 \
		-- sh -c "$STEP_AGENT" sh "$TMP") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
	i=0
	while [ ! -s "$XDG_RUNTIME_DIR/cloister/api/$SV.json" ] && alive "$SV" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
on_exit 'stop_sv'

# ---- run 1: decisions from the CLI -----------------------------------------------------
start_sv one$$
tap_ok "$([ -s "$XDG_RUNTIME_DIR/cloister/api/$SV.json" ] && echo 0 || echo 1)" \
	"the supervisor announced itself" "$(diag)"

# session, exact: the same command again runs without asking, another one asks.
step 1 '/usr/bin/id -u'
wait_pending 'id -u'
cli approve "$id" --scope session
tap_is "$st:$out" "0:approved $id (session)" "approve --scope session: 0"
done_within 1 10
tap_is "$res" "0
status 0" "the command runs"
step 2 '/usr/bin/id -u'
done_within 2 5
tap_is "$res" "0
status 0" "session, exact: the same command runs again without an ask"
step 3 '/usr/bin/id -g'
wait_pending 'id -g'
tap_like "$id" '^[0-9a-f]{12}$' "another command of the program still asks" "$out"
cli deny "$id"
done_within 3 10

# session, program: any arguments.
step 4 '/usr/bin/uname -s'
wait_pending 'uname -s'
cli approve "$id" --scope session --program
tap_is "$st:$out" "0:approved $id (session, program)" "approve --scope session --program: 0"
done_within 4 10
step 5 '/usr/bin/uname -r -m'
done_within 5 5
tap_like "$res" 'status 0' "session, program: other arguments run without an ask" "$res"

# project, pattern: a bad pattern is refused and decides nothing, a good one is kept.
step 6 '/usr/bin/seq 1 3'
wait_pending 'seq 1 3'
cli approve "$id" --scope project --pattern 'rm **'
tap_is "$st" 1 "a pattern that does not start with the program's name is refused: 1"
tap_like "$out" "must start with the program's name" "and says why" "$out"
cli pending
tap_like "$out" "$id" "the ask is still pending" "$out"
cli approve "$id" --scope project --pattern 'seq 1 *'
tap_is "$st:$out" "0:approved $id (project, pattern)" "approve --scope project --pattern: 0"
done_within 6 10
tap_like "$(cat "$PROJECT_FILE" 2>&1)" 'path: "/usr/bin/seq"' \
	"the project's decisions file has the exec entry" "$(cat "$PROJECT_FILE" 2>&1)"
tap_is "$(stat -c %a "$PROJECT_FILE" 2>&1)" 600 "written 0600"
step 7 '/usr/bin/seq 1 5'
done_within 7 5
tap_like "$res" 'status 0' "project, pattern: a command it covers runs without an ask" "$res"
step 8 '/usr/bin/seq 2 5'
wait_pending 'seq 2 5'
tap_like "$id" '^[0-9a-f]{12}$' "one it does not cover asks" "$out"
cli deny "$id"
done_within 8 10

# global, program.
step 9 '/usr/bin/nproc'
wait_pending 'nproc'
cli approve "$id" --scope global --program
tap_is "$st:$out" "0:approved $id (global, program)" "approve --scope global --program: 0"
done_within 9 10
tap_like "$(cat "$GLOBAL_FILE" 2>&1)" 'path: "/usr/bin/nproc"' \
	"the global decisions file has the exec entry" "$(cat "$GLOBAL_FILE" 2>&1)"

# A session denial answers a retrying agent at once, with no new ask.
step 10 '/usr/bin/basename x'
wait_pending 'basename x'
cli deny "$id" --scope session --program --reason 'no basename here'
tap_is "$st:$out" "0:denied $id (session, program)" "deny --scope session --program: 0"
done_within 10 10
# shellcheck disable=SC2016 # the agent's shell expands it
step 11 'for i in 1 2 3 4 5; do /usr/bin/basename y$i; done; exit 0'
done_within 11 5
tap_is "$(printf '%s\n' "$res" | grep -c 'Permission denied')" 5 \
	"a retrying agent is refused at once, every time" "$res"
tap_is "$(pending_count)" 0 "and no new ask appeared"
# The refusals are automatic lines: they may wait in memory for --audit-delay (20 ms).
wait_until 10 audit_has 5 '"verdict":"deny".*no basename here'
tap_ok "$(audit_has 5 '"verdict":"deny".*no basename here' && echo 0 || echo 1)" \
	"the audit log gives the person's reason for each refusal" "$(tail -n 3 "$AUDIT" 2>&1)"

# A decision answers the other waiting asks it covers, not only the one it was made on.
# shellcheck disable=SC2016 # the agent's shell expands it
step 12 '/usr/bin/printenv HOME >/dev/null & /usr/bin/printenv PATH >/dev/null; s=$?; wait $! && exit $s'
wait_pending 'printenv HOME'
first=$id
wait_pending 'printenv PATH'
tap_is "$(pending_count)" 2 "two different asks of one program wait"
cli approve "$first" --scope session --program
done_within 12 10
tap_is "$res" "status 0" "allowing the program for the session answers both" "$res"
stop_sv

# ---- run 2: project and global decisions hold, session ones are gone ------------------
start_sv two$$
step 1 '/usr/bin/seq 1 9; /usr/bin/nproc >/dev/null'
done_within 1 10
tap_like "$res" 'status 0' "a second run honours the project and global decisions without asking" \
	"$res"
step 2 '/usr/bin/id -u'
wait_pending 'id -u'
tap_like "$id" '^[0-9a-f]{12}$' "a session decision of the first run asks again" "$out"
cli deny "$id"
done_within 2 10
stop_sv

cli policy show --config-dir "$CFG" --project "$PROJECT"
tap_like "$out" "path: \"/usr/bin/nproc\"  # $GLOBAL_FILE:[0-9]+:[0-9]+ \\(global decisions\\)" \
	"policy show names the global decision's origin" "$out"
tap_like "$out" "path: \"/usr/bin/seq\"  # $PROJECT_FILE:[0-9]+:[0-9]+ \\(project decisions\\)" \
	"and the project one's" "$out"

# ---- decisions list / rm -----------------------------------------------------------------
cli decisions list --config-dir "$CFG"
tap_like "$out" "^[0-9a-f]{12}  global +allow  exec +/usr/bin/nproc  command " \
	"decisions list shows the global exec decision with an id" "$out"
tap_like "$out" "project $PROJECT +allow  exec +/usr/bin/seq" "and the project's" "$out"
rmid=$(printf '%s\n' "$out" | grep '/usr/bin/nproc' | awk '{ print $1 }')
cli policy check --config-dir "$CFG" -- /usr/bin/nproc
tap_is "$st" 0 "before rm: the decision allows nproc"
cli decisions rm "$rmid" --config-dir "$CFG"
tap_like "$st:$out" "^0:removed $rmid" "decisions rm ID: 0" "$out"
cli policy check --config-dir "$CFG" -- /usr/bin/nproc
tap_is "$st" 2 "after rm: nproc asks again"
cli decisions rm /usr/bin/seq --config-dir "$CFG"
tap_is "$st" 0 "decisions rm by the entry's path: 0"
tap_is "$(grep -c seq "$PROJECT_FILE" 2>&1)" 0 "the project file no longer has it"
cli decisions rm /usr/bin/seq --config-dir "$CFG"
tap_is "$st" 1 "removing it again: 1"

# ---- the terminal: c (what it covers) then g (global) ----------------------------------
PTY=$HELPERS/ptyanswer
(cd "$TMP" && timeout -k 5 "$SV_TIMEOUT" "$PTY" --ctty "c,c,g" -- \
	timeout --foreground -k 5 $((SV_TIMEOUT - 5)) \
	"$SUPERVISOR" run --config-dir "$CFG" --project "$PROJECT" -- /usr/bin/tty) \
	</dev/null >"$OUT" 2>"$TMP/terminal"
rc=$?
tap_is "$rc" 0 "terminal: c, c, g allows tty (the suggested pattern, every project)" \
	"$(screen_text <"$TMP/terminal" | tail -n 15)"
tap_like "$(cat "$GLOBAL_FILE" 2>&1)" 'path: "/usr/bin/tty"' \
	"the global decisions file has it" "$(cat "$GLOBAL_FILE" 2>&1)"

# ---- the terminal: e edits the pattern (prefilled from the command), then p (project) -----
# Typed at once: e, Ctrl-U, a pattern the card refuses (not the program's name), Enter,
# Ctrl-U, the pattern meant, Enter; then p at the prompt that comes back.
KEYS=$(printf 'e\025ls **\r\025expr 7 + *\r')
(cd "$TMP" && timeout -k 5 "$SV_TIMEOUT" "$PTY" --ctty "$KEYS,p" -- \
	timeout --foreground -k 5 $((SV_TIMEOUT - 5)) \
	"$SUPERVISOR" run --config-dir "$CFG" --project "$PROJECT" -- /usr/bin/expr 7 + 1) \
	</dev/null >"$OUT" 2>"$TMP/terminal2"
rc=$?
tap_is "$rc" 0 "terminal: e, an edited pattern, p allows expr 7 + 1 for the project" \
	"$(screen_text <"$TMP/terminal2" | tail -n 15)"
tap_like "$(cat "$TMP/terminal2")" 'pattern: expr 7 \+ 1' "the line is prefilled with the command" \
	"$(screen_text <"$TMP/terminal2" | tail -n 15)"
tap_like "$(cat "$TMP/terminal2")" "refused: the pattern must start with the program's name" \
	"a pattern that makes no rule is refused on the card, which stays open" \
	"$(screen_text <"$TMP/terminal2" | tail -n 15)"
cli policy check --config-dir "$CFG" --project "$PROJECT" -- /usr/bin/expr 7 + 9
tap_is "$st" 0 "the edited pattern covers expr 7 + 9" "$out"
cli policy check --config-dir "$CFG" --project "$PROJECT" -- /usr/bin/expr 8 + 9
tap_is "$st" 2 "and not expr 8 + 9" "$out"
