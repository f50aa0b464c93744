#!/bin/sh
# Automatic audit lines wait in memory (--audit-delay) and are written together; what a person
# or a reader needs is never left there. With a delay of a minute, so that only the other
# triggers can write: an auto-allowed exec's line is not in the file yet, but the dashboard's
# /logs shows it (and the file then holds it); an ask writes the lines before it, and a
# person's approval is in the file, in order, by the time the approved program has run; a
# SIGTERM to the supervisor writes what is still in memory at once, before the run ends.
# With the default delay: a line reaches the file with nothing more happening. With
# --audit-delay 0 each line is in the file before the agent's next exec is decided; a delay
# out of bounds is a usage error. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=17
run_needs_root $PLAN
run_needs_tools $PLAN curl
tap_plan $PLAN

# Our own runtime directory: the CLI client finds this supervisor and no other.
XDG_RUNTIME_DIR=$TMP/xdg
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"

write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/touch"
    - path: "/usr/bin/true"
  defaults: false
EOF

alive() { kill -0 "$1" 2>/dev/null; }
gone() { ! alive "$1"; }
# on_disk TEXT: a line of the audit log holds TEXT.
on_disk() { grep -qF -- "$1" "$AUDIT" 2>/dev/null; }
# line_of TEXT: the number of the first line of the audit log holding TEXT (0: none).
line_of() { grep -nF -- "$1" "$AUDIT" 2>/dev/null | head -n 1 | cut -d: -f1 | grep . || echo 0; }
M=auditdelay-$$

# ---- a minute's delay: only the other triggers write ----
# The agent ignores SIGTERM, so the supervisor outlives the signal by its grace (5 s).
# shellcheck disable=SC2016 # the agent's script expands its own $1 and $2
(cd "$TMP" && exec "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 30s \
	--audit-delay 60s --name auditdelay --listen-approval 127.0.0.1:0 \
	--listen-tokens 127.0.0.1:0 --listen-request off \
	-- sh -c 'trap "" TERM
		/usr/bin/true "$2-one"
		touch "$1/ready1"
		while [ ! -e "$1/go" ]; do sleep 0.05; done
		/usr/bin/true "$2-two"
		/usr/bin/id -u >"$1/id.out" 2>&1
		/usr/bin/true "$2-three"
		touch "$1/ready3"
		while :; do sleep 0.05; done' sh "$TMP" "$M" \
	) </dev/null >"$OUT" 2>"$ERR" &
SV=$!
stop_sv() {
	alive "$SV" || return 0
	kill -KILL "$SV" 2>/dev/null
	wait_until 10 gone "$SV"
}
on_exit 'stop_sv'
INFO=$XDG_RUNTIME_DIR/cloister/api/$SV.json
wait_file 20 "$INFO"
URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$INFO" 2>/dev/null)
TOKEN=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$INFO" 2>/dev/null)

wait_exists 20 "$TMP/ready1"
tap_ok "$([ -e "$TMP/ready1" ] && echo 0 || echo 1)" "the agent ran its first auto-allowed exec" "$(diag)"
tap_ok "$(on_disk "$M-one" && echo 1 || echo 0)" \
	"its audit line waits in memory (not in the file)" "$(cat "$AUDIT" 2>/dev/null)"

# The dashboard's /logs starts with the tail of the file: the line in memory is written
# first, so a new reader sees it.
curl -s -N --max-time 30 -H "Authorization: Bearer $TOKEN" "$URL/logs" >"$TMP/logs" 2>&1 &
CURL=$!
on_exit "kill $CURL 2>/dev/null"
wait_until 20 grep -qF -- "$M-one" "$TMP/logs"
tap_ok "$(grep -qF -- "$M-one" "$TMP/logs" && echo 0 || echo 1)" \
	"a new /logs reader sees the line that was in memory" "$(head -c 2000 "$TMP/logs")"
kill "$CURL" 2>/dev/null
tap_ok "$(on_disk "$M-one" && echo 0 || echo 1)" "and the file holds it since" \
	"$(cat "$AUDIT" 2>/dev/null)"

# An ask: the automatic lines before it are written first; the person's approval is in the
# file when the approved program has run.
touch "$TMP/go"
pending_id() {
	curl -s --max-time 10 -H "Authorization: Bearer $TOKEN" "$URL/pending" |
		sed 's/},{/}\n{/g' | grep -F '/usr/bin/id' | grep -o '"id":"[0-9a-f]*"' |
		head -n 1 | cut -d'"' -f4
}
has_pending() { ID=$(pending_id) && [ -n "$ID" ]; }
ID=
wait_until 20 has_pending
tap_like "$ID" '^[0-9a-f]{12}$' "the agent's /usr/bin/id is asked" "$(diag)"
two=$(line_of "$M-two")
ask=$(line_of "\"id\":\"$ID\",")
tap_ok "$([ "$two" -gt 0 ] && [ "$ask" -gt "$two" ] && echo 0 || echo 1)" \
	"the ask's line is written at once, after the automatic line before it" \
	"two at $two, ask at $ask: $(cat "$AUDIT" 2>/dev/null)"
out=$(timeout 20 "$SUPERVISOR" approve "$ID" 2>&1)
tap_is "$out" "approved $ID" "approved through the CLI client"
wait_exists 20 "$TMP/ready3"
approved=$(grep -nF "\"id\":\"$ID\"," "$AUDIT" 2>/dev/null | grep -F '"verdict":"approved"' |
	head -n 1 | cut -d: -f1)
tap_ok "$([ -e "$TMP/ready3" ] && [ "${approved:-0}" -gt "$ask" ] && echo 0 || echo 1)" \
	"the approval is in the file, after the ask, once the approved program has run" \
	"$(cat "$AUDIT" 2>/dev/null)"
tap_ok "$(on_disk "$M-three" && echo 1 || echo 0)" \
	"the automatic line after it waits in memory again" "$(cat "$AUDIT" 2>/dev/null)"

# SIGTERM: written at once, while the supervisor still waits for the agent to end.
kill -TERM "$SV"
wait_until 4 on_disk "$M-three"
written=$?
alive "$SV"
still=$?
tap_ok "$([ $written -eq 0 ] && [ $still -eq 0 ] && echo 0 || echo 1)" \
	"a SIGTERM to the supervisor writes it at once, before the run ends" \
	"written $written, supervisor alive $still: $(diag)"
wait_until 20 gone "$SV"
tap_ok "$(gone "$SV" && echo 0 || echo 1)" "the run ends after the agent's grace" "$(diag)"
tap_ok "$([ "$(line_of "$M-one")" -lt "$two" ] &&
	[ "$(line_of "$M-three")" -gt "$approved" ] && echo 0 || echo 1)" \
	"the file keeps the order the lines came in across every trigger" "$(cat "$AUDIT" 2>/dev/null)"

# ---- the default delay: written by itself ----
# The agent's last exec is a long sleep: nothing more happens until the test ends it.
audit_reset
# shellcheck disable=SC2016 # the agent's script expands its own $1
(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask none \
	--listen-approval off --listen-tokens off --listen-request off \
	-- sh -c '/usr/bin/true "$1-four"; exec sleep 60' sh "$M" \
	) </dev/null >"$OUT" 2>"$ERR" &
SV=$!
wait_until 10 on_disk "$M-four"
tap_ok "$(on_disk "$M-four" && echo 0 || echo 1)" \
	"with the default delay an automatic line reaches the file with nothing more happening" \
	"$(diag)"
tap_ok "$(alive "$SV" && echo 0 || echo 1)" "while the run goes on" "$(diag)"
kill -TERM "$SV" 2>/dev/null
wait_until 20 gone "$SV"

# ---- --audit-delay 0: every line at once ----
audit_reset
# shellcheck disable=SC2016 # the agent's script expands its own $1 and $2
(cd "$TMP" && exec timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask none \
	--audit-delay 0 --listen-approval off --listen-tokens off --listen-request off \
	-- sh -c '/usr/bin/true "$2-five"; touch "$1/ready5"; exec sleep 60' sh "$TMP" "$M" \
	) </dev/null >"$OUT" 2>"$ERR" &
SV=$!
wait_exists 20 "$TMP/ready5"
# The supervisor decided touch after it wrote true's line: no wait needed.
tap_ok "$([ -e "$TMP/ready5" ] && on_disk "$M-five" && echo 0 || echo 1)" \
	"--audit-delay 0: the line is in the file before the agent's next exec runs" "$(diag)"
kill -TERM "$SV" 2>/dev/null
wait_until 20 gone "$SV"

sv --audit-delay 2m -- true
tap_is "$rc" 64 "--audit-delay beyond 60s: a usage error (64)"
tap_like "$(cat "$ERR")" 'audit-delay: "2m" is not a duration from 0 to 60s' "... that says why" \
	"$(diag)"
