#!/bin/sh
# File decisions of project scope (fs.ask: on-write), as root and as an unprivileged user:
#   - `approve ID --scope project` on a write ask writes an `fs: allow:` entry to the
#     project's decisions file (0600), and the write lands;
#   - `policy show` names it with its origin;
#   - a second run writes the file with no ask (nobody could answer one: --ask none, the
#     fallback denies);
#   - a remembered path is no way around the checks: made a symlink to the config file, the
#     write is refused at once;
#   - `decisions rm PATH` removes it: the third run asks again (and the fallback denies);
#   - on the terminal (a pseudo-terminal, run --ask tty), `g` allows a write everywhere: the
#     global decisions file has it, and a run of another project writes it with no ask; the
#     API refuses a file denial wider than once (the card offers only "deny once");
#   - a file that gains a second name (a hard link) while its card is up is never
#     remembered: project scope is refused, nothing decided, nothing written.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=52
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

PTY=$HELPERS/ptyanswer
PROJECT=wad$$

setup() { # WHO
	user_tree "$1"
	cat >"$W/cfg/config.yaml" <<YAML
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
fs:
  ask: on-write
YAML
	user_tree_own
	FILE=$W/cfg/decisions/projects/$PROJECT.yaml
}

start() { # ASK AGENT-SCRIPT: the supervisor in the background (pid in $SV)
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 30 $AS $USER_ENV "$BIN" run \
		--config-dir "$W/cfg" --project "$PROJECT" --name "wad$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		--ask "$1" --ask-timeout 20s -- sh -c "$2") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
}

for who in root nobody; do
	setup "$who"

	# ---- run 1: approved with the scope project ----
	start web "echo one >>'$H/.toolrc'; echo \"rc \$?\""
	wait_pending "$H/.toolrc"
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "$who: the first write to ~/.toolrc asks" "$out"
	cli approve "$id" --scope project
	tap_is "$st:$out" "0:approved $id (project)" "$who: approve --scope project: 0"
	finish
	tap_is "$(cat "$OUT"):$(cat "$H/.toolrc" 2>&1)" "rc 0:one" "$who: ... and the write lands" "$(diag)"
	tap_like "$(cat "$FILE" 2>&1)" "fs:
  allow:
    - \"$H/.toolrc\"" "$who: the project's decisions file has the fs: entry" "$(cat "$FILE" 2>&1)"
	tap_is "$(stat -c %a "$FILE" 2>&1)" 600 "$who: ... written 0600"

	cli policy show --config-dir "$W/cfg" --project "$PROJECT"
	tap_like "$out" "#   - \"$H/.toolrc\"  # $FILE:[0-9]*:[0-9]* \\(project decisions\\)" \
		"$who: policy show names it and its origin" "$out"

	# ---- run 2: nobody can answer, and nothing is asked ----
	rm -f "$AUD"
	start none "echo two >>'$H/.toolrc'; echo \"rc \$?\""
	finish
	tap_is "$(cat "$OUT"):$(tail -n 1 "$H/.toolrc" 2>&1)" "rc 0:two" \
		"$who: the second run writes with no ask" "$(diag)"
	tap_is "$(grep -c '"kind":"file".*"verdict":"ask"' "$AUD" 2>/dev/null)" 0 "$who: ... none in the audit log"

	# ---- the remembered path now leads to Cloister's config: refused at once ----
	# shellcheck disable=SC2086 # words on purpose
	$AS sh -c "mv '$H/.toolrc' '$H/.toolrc.keep' && ln -s '$W/cfg/config.yaml' '$H/.toolrc'"
	start none "(echo 'exec: {security: full}' >>'$H/.toolrc') 2>&1; echo \"rc \$?\""
	finish
	tap_like "$(cat "$OUT")" "refused: it is below Cloister's config directory" \
		"$who: a remembered path made a symlink to the config is refused" "$(diag)"
	tap_ok "$(grep -q "security: full" "$W/cfg/config.yaml" && echo 1 || echo 0)" \
		"$who: ... and the config is unchanged" "$(diag)"
	# shellcheck disable=SC2086
	$AS sh -c "rm '$H/.toolrc' && mv '$H/.toolrc.keep' '$H/.toolrc'"

	# ---- decisions rm, then run 3 asks again ----
	cli decisions rm "$H/.toolrc" --config-dir "$W/cfg" --project "$PROJECT"
	tap_like "$st:$out" "^0:removed [0-9a-f]{12}  project $PROJECT +allow  file +$H/.toolrc" \
		"$who: decisions rm PATH removes it" "$out"
	start none "(echo three >>'$H/.toolrc') 2>/dev/null; echo \"rc \$?\""
	finish
	tap_is "$(cat "$OUT"):$(tail -n 1 "$H/.toolrc" 2>&1)" "rc 2:two" \
		"$who: the third run asks again (the fallback denies)" "$(diag)"

	# ---- the terminal: g allows the write everywhere ----
	GFILE=$W/cfg/decisions/global.yaml
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 30 $AS $USER_ENV "$PTY" --ctty g -- \
		timeout --foreground -k 5 25 "$BIN" run --config-dir "$W/cfg" \
		--project "$PROJECT" --name "wad$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off --ask tty -- \
		sh -c "echo g >>'$H/.gtoolrc'; echo \"rc \$?\"") </dev/null >"$OUT" 2>"$W/terminal"
	rc=$?
	screen=$(screen_text <"$W/terminal" | tail -n 15)
	tap_is "$rc:$(cat "$H/.gtoolrc" 2>&1)" "0:g" "$who: terminal: g allows the write, which lands" "$screen"
	tap_like "$(cat "$W/terminal")" "allow: \\[a\\] once  \\[A\\] session  \\[p\\] project  \\[g\\] global" \
		"$who: ... the file card offers the exec cards' allow keys" "$screen"
	tap_like "$(cat "$W/terminal")" "deny:  \\[d\\] once \\(the next write asks again\\)" \
		"$who: ... and denies once only" "$screen"
	tap_like "$(cat "$W/terminal")" "rc 0" "$who: ... the agent's write succeeded" "$screen"
	tap_like "$(cat "$GFILE" 2>&1)" "fs:
  allow:
    - \"$H/.gtoolrc\"" "$who: the global decisions file has the fs: entry" "$(cat "$GFILE" 2>&1)"
	rm -f "$AUD"
	# shellcheck disable=SC2086
	(cd "$WT" && exec timeout -k 5 30 $AS $USER_ENV "$BIN" run \
		--config-dir "$W/cfg" --project "other$$" --name "wad$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		--ask none -- sh -c "echo g2 >>'$H/.gtoolrc'; echo \"rc \$?\"") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	tap_is "$(cat "$OUT"):$(tail -n 1 "$H/.gtoolrc" 2>&1)" "rc 0:g2" \
		"$who: a run of another project writes it with no ask" "$(diag)"
	tap_is "$(grep -c '"kind":"file".*"verdict":"ask"' "$AUD" 2>/dev/null)" 0 "$who: ... none in the audit log"

	# ---- a denial is for this write only: the API refuses a wider one ----
	start web "echo d >>'$H/.dtoolrc'; echo \"rc \$?\""
	wait_pending "$H/.dtoolrc"
	cli deny "$id" --scope session
	tap_like "$st:$out" "^[1-9][0-9]*:.*a write is denied once only" \
		"$who: deny --scope session on a file ask is refused" "$out"
	cli pending
	tap_like "$out" "$id" "$who: ... and the ask is still pending" "$out"
	cli deny "$id"
	tap_is "$st" 0 "$who: deny (once): 0" "$out"
	finish
	tap_like "$(cat "$OUT")" "^rc [12]\$" "$who: ... and the write fails" "$(diag)"

	# ---- what the file became while the card was up is never remembered ----
	# shellcheck disable=SC2086
	$AS sh -c "echo 0 >'$H/.htoolrc'"
	start web "echo h >>'$H/.htoolrc'; echo \"rc \$?\""
	wait_pending "$H/.htoolrc"
	# shellcheck disable=SC2086
	$AS ln "$H/.htoolrc" "$H/.htoolrc.link"
	cli approve "$id" --scope project
	tap_like "$st:$out" "^[1-9][0-9]*:.*$H/.htoolrc can never be remembered: it has 2 names" \
		"$who: a file hard-linked while its card is up: approve --scope project is refused" "$out"
	cli pending
	tap_like "$out" "$id" "$who: ... nothing is decided" "$out"
	tap_ok "$(grep -q htoolrc "$FILE" 2>/dev/null && echo 1 || echo 0)" \
		"$who: ... nor written to the decisions file" "$(cat "$FILE" 2>&1)"
	cli deny "$id"
	finish
	rm -f "$H/.htoolrc.link"
done
tap_done
