#!/bin/sh
# `cloister-supervisor run` under load and attack: 50 concurrent execs (allowed, denied, asked)
# are all decided and none hangs; the TOCTOU race (a thread flips the exec path between an
# allowed and a denied binary) never gets the denied binary to run an instruction, thanks to the
# eBPF backstop. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 12
tap_plan 12

LOOP=$HELPERS/execloop
cp "$HELPERS/marker" "$TMP/denied-marker"
write_config <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "$HELPERS/execloop"
    - path: "$HELPERS/exec_race"
    - path: "/usr/bin/true"
  deny:
    - path: "/usr/bin/false"
    - path: "$TMP/denied-marker"
  defaults: false
EOF

# ---- 50 at once ----
audit_reset
start=$(date +%s)
sv --ask none -- "$LOOP" 50 -j 50 /usr/bin/true
took=$(($(date +%s) - start))
tap_is "$rc" 0 "50 concurrent allowed execs all run (execloop 50 -j 50)" "$(diag)"
tap_is "$(audit_count '"exe":"/usr/bin/true".*"verdict":"allow"')" 50 "each of the 50 was decided (audit log)"
tap_ok "$([ "$took" -le 10 ] && echo 0 || echo 1)" "none hangs (took ${took}s)"

audit_reset
sv --ask none -- "$LOOP" 50 -j 50 /usr/bin/false
tap_is "$rc:$(grep -c 'execloop: 50 of 50 runs failed' "$ERR")" "1:1" \
	"50 concurrent denied execs all fail" "$(diag)"
tap_is "$(audit_count '"exe":"/usr/bin/false".*"verdict":"deny"')" 50 "each of the 50 was denied by the rule (audit log)"

audit_reset
sv --ask none -- "$LOOP" 300 -j 50 /usr/bin/true
tap_is "$rc:$(audit_count '"exe":"/usr/bin/true".*"verdict":"allow"')" "0:300" \
	"300 execs, 50 at a time: all run, all decided" "$(diag)"

# 50 concurrent asks for the same exec: identical asks merge, one person's "always" answers all.
audit_reset
timeout -k 5 "$SV_TIMEOUT" "$HELPERS/ptyanswer" A -- \
	timeout -k 5 $((SV_TIMEOUT - 5)) "$SUPERVISOR" run --config-dir "$CFG" --ask-tty @TTY@ \
	-- "$LOOP" 50 -j 50 /usr/bin/id -u </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(grep -c '^0$' "$OUT")" "0:50" "50 concurrent asks: all 50 run after one answer" "$(diag)"
tap_is "$(grep -c 'approval needed' "$ERR")" 1 "50 concurrent asks: one prompt"

# ---- TOCTOU: the exec path flips between allowed and denied ----
rm -f "$TMP/mark"
timeout 10 "$HELPERS/exec_race" 0.5 /usr/bin/true "$TMP/denied-marker" "$TMP/mark" >"$OUT" 2>&1
tap_like "$(cat "$OUT")" 'marker=yes' "without the supervisor the racer runs the denied binary (the test can see it)" \
	"$(cat "$OUT")"
rm -f "$TMP/mark"

audit_reset
SV_TIMEOUT=30 sv -v --ask none -- "$HELPERS/exec_race" 5 /usr/bin/true "$TMP/denied-marker" "$TMP/mark"
result=$(grep '^exec_race:' "$OUT")
echo "# $result"
echo "# $(grep -m1 'backstop:' "$ERR")"
tap_ok "$([ "$rc" -eq 0 ] && [ ! -e "$TMP/mark" ] && echo 0 || echo 1)" \
	"TOCTOU: in 5 s of racing, the denied binary never ran an instruction (no marker)" "$(diag)"
tap_like "$result" 'tries=[1-9][0-9]* .*marker=no' "TOCTOU: the racer ran and reported" "$(diag)"
if grep -q 'backstop: off' "$ERR"; then
	tap_skip "TOCTOU kills" "no eBPF backstop on this machine: $(grep -m1 'backstop' "$ERR")"
else
	killed=$(printf '%s\n' "$result" | sed -n 's/.* killed=\([0-9]*\) .*/\1/p')
	tap_ok "$([ "${killed:-0}" -gt 0 ] && [ "$(audit_count '"decided_by":"backstop"')" -eq "$killed" ] && echo 0 || echo 1)" \
		"TOCTOU: the race was won ${killed:-0} times and each time the backstop killed the process (audit log)" \
		"$result; backstop audit lines: $(audit_count '"decided_by":"backstop"')"
fi

tap_done
