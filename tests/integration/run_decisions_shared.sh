#!/bin/sh
# A project decision made in one run holds at once in the user's other running supervisors of
# that project (issue 15): each looks at the decisions files (a stat, every second and before
# an ask: issue 16) and reads them again under their lock. Two runs of one project ask for the
# same program; allowing it for the project in the first (the file replaced by rename) answers
# the second's waiting ask, and the second's next use of it runs without an ask; a program it
# does not cover still asks there. The file edited in place by hand is read again too.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=7
run_needs_root $PLAN
tap_plan $PLAN

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
write_config <<'EOF2'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
EOF2
PROJECT=shr$$
A=$TMP/a
B=$TMP/b
start_run one$$ "$A"
PA=$pid
start_run two$$ "$B"
PB=$pid
on_exit "stop_pid $PA; stop_pid $PB"

# Both ask for seq; the second run's ask waits first.
STEPS=$B
step 1 '/usr/bin/seq 1 3'
wait_pending " two$$ " 'seq 1 3'
idb=$id
STEPS=$A
step 1 '/usr/bin/seq 1 2'
wait_pending " one$$ " 'seq 1 2'
tap_ok "$([ -n "$idb" ] && [ -n "$id" ] && echo 0 || echo 1)" "both runs ask for seq" "$out"
cli approve "$id" --scope project --program
tap_is "$st" 0 "the first run's ask is allowed for the project, any arguments" "$out"
STEPS=$B # from here on, the second run's agent
done_within 1 10
tap_like "$res" '^3$' "the second run's waiting ask is answered by that decision" \
	"$res $(cat "$B.err")"
step 2 '/usr/bin/seq 4 5'
done_within 2 10
tap_like "$res" '^5$' "and its next seq runs without an ask" "$res"
step 3 '/usr/bin/nproc'
wait_pending " two$$ " 'nproc'
tap_like "$id" '^[0-9a-f]{12}$' "a program the decision does not cover still asks there" "$out"
[ -n "$id" ] && cli deny "$id"
done_within 3 10

# Edited in place by hand (truncated and written: the same inode): nproc allowed.
PROJECT_FILE=$CFG/decisions/projects/$PROJECT.yaml
ino=$(stat -c %i "$PROJECT_FILE")
{
	cat "$PROJECT_FILE"
	printf '%s\n' '    - path: "/usr/bin/nproc"'
} >"$TMP/edited"
cat "$TMP/edited" >"$PROJECT_FILE"
tap_is "$(stat -c %i "$PROJECT_FILE")" "$ino" "the decisions file is edited in place" \
	"$(cat "$PROJECT_FILE")"
step 4 '/usr/bin/nproc'
done_within 4 10
tap_like "$res" '^[0-9]+' "the second run runs what the edit allows without an ask" \
	"$res $(cat "$PROJECT_FILE")"
tap_done
