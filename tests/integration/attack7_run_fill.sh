#!/bin/sh
# Attack by another local user on the walk for the host's FIFOs in /run. At start the supervisor
# looks below /run (same file system, 8 levels, at most 100000 entries) for FIFOs to cover with
# /dev/null, and refuses to start past the bound. /run has directories anyone may fill: /run/lock
# is 1777 on Debian, and on a host where it is not a mount of its own (a container, sysvinit)
# it is walked. A local user (nobody) who made 100001 entries there kept every run of every
# user from starting: "more than 100000 entries in /run".
# What must hold: a directory of /run that someone but root can fill is not walked but
# replaced in the sandbox by a private tmpfs of the agent's own: the run starts, as root (with
# and without --allow-nested-sandbox, which drops Landlock's file rules) and as nobody; the
# FIFO that user left there is not in the sandbox; what the agent writes there stays in the
# sandbox. The directory is /run/cloister-a7-PID (1777, removed at the end). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=9
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
if [ ! -d /run ] || [ ! -w /run ]; then run_skip_all $PLAN "no writable /run"; fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || run_skip_all $PLAN "no python3"
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  ask: off
EOF
nobody_setup

D=/run/cloister-a7-$$
mkdir -m 1777 "$D"
on_exit "rm -rf '$D'"
# The other user: 100001 entries (symlinks: the cheapest to make), and a FIFO of its own.
# shellcheck disable=SC2016 # python's text
as_nobody "$PY" -c '
import os, sys
d = sys.argv[1]
for i in range(100001):
    os.symlink("x", "%s/%d" % (d, i))
os.mkfifo(d + "/fifo")
' "$D"

# Builtins only: sh is the one exec. The directory is named inside the script, not as an
# argument of its own: a path on the agent's command line is kept visible (and so walked).
AGENT="if test -p $D/fifo; then echo fifo-there; else echo no-fifo; fi
	echo from-the-agent >$D/agent-file && echo wrote"

check() {
	who=$1
	shift
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" \
		"$who${*:+ $*}: the run starts though another user filled a directory of /run" \
		"$(diag)"
	tap_like "$(cat "$OUT")" "no-fifo" \
		"$who${*:+ $*}: that user's FIFO there is not in the sandbox" "$(diag)"
	tap_ok "$(test ! -e "$D/agent-file" && echo 0 || echo 1)" \
		"$who${*:+ $*}: what the agent writes there stays in the sandbox" "$(diag)"
	rm -f "$D/agent-file"
}

sv --ask none -- sh -c "$AGENT"
check root
sv --ask none --allow-nested-sandbox -- sh -c "$AGENT"
check root --allow-nested-sandbox
sv_nobody --ask none -- sh -c "$AGENT"
check nobody

tap_done
