#!/bin/sh
# Attack on the session's remembered answers (exec_verdict.h): an exec allowed for the session
# is remembered under a key, "EXE\nCOMMAND", and any later ask with the same key is allowed
# without asking. The COMMAND is the policy's display subject:
#   - cut to 1020 bytes and "..." (policy_result.subject is 1024 bytes): a command allowed for
#     the session covers every command that shares its first 1020 bytes — `rm -f -f … junk`
#     allowed, `rm -f -f … precious` runs without an ask;
#   - written with the file's name as its first word (cmds.by_path): argv[0] is not in the
#     key, and a multi-call program obeys argv[0] — `busybox echo FILE` allowed, then
#     execve("/usr/bin/busybox", ["rm", "echo", FILE]) (bash's `exec -a rm`) runs rm.
#   - a "program" decision (this program, any arguments) on busybox run as `ls` is the rule
#     \A(?:busybox|ls) …: `busybox rm FILE` matches it under both names and runs.
# Fixed: the key is the file as it was read and a digest of the whole argv, argv[0] included;
# a decision keeps the name argv[0] had (an `argv0:` pin), so one applet covers no other.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN bash
tap_plan $PLAN

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
    - path: "/usr/bin/bash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
EOF
(cd "$TMP" && exec "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 60s \
	--name "a2k$$" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	-- sh -c "$STEP_AGENT" sh "$TMP") </dev/null >"$OUT" 2>"$ERR" &
SV=$!
on_exit "kill $SV 2>/dev/null"

# ---- a long command allowed for the session covers another with the same first 1020 bytes ----
PAD=$(i=0; while [ $i -lt 600 ]; do printf -- '-f '; i=$((i + 1)); done)
: >"$TMP/junk"
: >"$TMP/precious"
step 1 "/usr/bin/rm $PAD $TMP/junk; echo rc \$?"
wait_pending "rm -f -f"
cli approve "$id" --scope session
tap_is "$st" 0 "the person allows \`rm -f -f … $TMP/junk\` for the session (exact)" "$out"
done_within 1 20
tap_ok "$([ ! -e "$TMP/junk" ] && echo 0 || echo 1)" "the allowed command ran" "$res"

step 2 "/usr/bin/rm $PAD $TMP/precious; echo rc \$?"
done_within 2 5
cli pending
[ -n "$(printf '%s\n' "$out" | grep -F 'rm -f -f' | awk '{ print $1 }')" ] &&
	cli deny "$(printf '%s\n' "$out" | grep -F 'rm -f -f' | awk '{ print $1 }' | head -n 1)"
done_within 2 10
tap_ok "$([ -e "$TMP/precious" ] && echo 0 || echo 1)" \
	"another command with the same first 1020 bytes is asked, not run on that answer" "$res"

# ---- a multi-call program allowed under one argv[0] runs under another ----
if [ -x /usr/bin/busybox ]; then
	: >"$TMP/precious2"
	step 3 "/usr/bin/busybox echo $TMP/precious2"
	wait_pending "busybox echo"
	cli approve "$id" --scope session
	tap_is "$st" 0 "the person allows \`busybox echo $TMP/precious2\` for the session (exact)" "$out"
	step 4 "bash -c 'exec -a rm /usr/bin/busybox echo $TMP/precious2'; echo rc \$?"
	done_within 4 5
	cli pending
	[ -n "$(printf '%s\n' "$out" | grep -F 'echo' | awk '{ print $1 }')" ] &&
		cli deny "$(printf '%s\n' "$out" | grep -F 'echo' | awk '{ print $1 }' | head -n 1)"
	done_within 4 10
	tap_ok "$([ -e "$TMP/precious2" ] && echo 0 || echo 1)" \
		"busybox run as rm with the same arguments is asked, not run on that answer" "$res"
	
	# ---- "this program with any arguments" on a multi-call program's applet ----
	: >"$TMP/precious3"
	step 5 "bash -c 'exec -a ls /usr/bin/busybox $TMP'"
	# (the ask's summary writes the file's name first: "busybox DIR"; its argv says "ls DIR")
	wait_pending "busybox $TMP"
	cli approve "$id" --scope session --program
	tap_is "$st" 0 "the person allows busybox run as \`ls\` for the session, any arguments" "$out"
	step 6 "/usr/bin/busybox rm $TMP/precious3; echo rc \$?"
	done_within 6 5
	cli pending
	[ -n "$(printf '%s\n' "$out" | grep -F 'busybox rm' | awk '{ print $1 }')" ] &&
		cli deny "$(printf '%s\n' "$out" | grep -F 'busybox rm' | awk '{ print $1 }' | head -n 1)"
	done_within 6 10
	tap_ok "$([ -e "$TMP/precious3" ] && echo 0 || echo 1)" \
		"\`busybox rm FILE\` is asked, not run on the decision about \`ls\`" "$res"
	else
	for _ in 1 2 3 4; do tap_skip "busybox" "no /usr/bin/busybox"; done
fi
kill "$SV" 2>/dev/null
wait "$SV" 2>/dev/null
tap_ok 0 "the run is stopped"
tap_done
