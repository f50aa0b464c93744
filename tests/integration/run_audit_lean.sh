#!/bin/sh
# Over the audit rate an exec's line is not written, and its read skips what only the line
# needs (the cwd and the ids: notifier_read_exec_lean). An ask after that still shows them: the
# person's decision's line names the cwd and the user. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 5
tap_plan 5

PTY=$HELPERS/ptyanswer
TERMLOG=$TMP/terminal

write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/true"
  defaults: false
EOF

mkdir -p "$TMP/work.$$"
audit_reset
# One automatic line a second, one at once: sh's own exec takes it, the execs of true are over
# the rate (read lean), and so is the exec of id until it turns out to be an ask.
(cd "$TMP/work.$$" && exec timeout -k 5 "$SV_TIMEOUT" "$PTY" --ctty a -- \
	timeout --foreground -k 5 $((SV_TIMEOUT - 5)) \
	"$SUPERVISOR" run --config-dir "$CFG" --ask tty --audit-rate 1 --audit-burst 1 -- \
	sh -c '/usr/bin/true; /usr/bin/true; id -u; echo "status $?"') </dev/null >"$OUT" 2>"$TERMLOG"
rc=$?
screen_text <"$TERMLOG" >"$TERMLOG.txt"
tdiag() { printf 'status %s\nterminal: %s\naudit: %s' "$rc" "$(head -c 3000 "$TERMLOG.txt")" "$(head -c 3000 "$AUDIT" 2>/dev/null)"; }

tap_is "$rc" 0 "the run ends normally" "$(tdiag)"
tap_like "$(cat "$TERMLOG.txt")" '^status 0$' "the asked program ran on the answer" "$(tdiag)"
tap_is "$(audit_count '"exe":"/usr/bin/true"')" 0 \
	"the execs of true are over the rate: no line" "$(tdiag)"
tap_is "$(audit_count '"uid":0,.*"cwd":"'"$TMP/work.$$"'".*"verdict":"approved"')" 1 \
	"the decision's line names the user and the cwd, read for the ask" "$(tdiag)"
tap_like "$(cat "$TERMLOG.txt")" "$TMP/work.$$" "the card showed the cwd" "$(tdiag)"

tap_done
