#!/bin/sh
# Attack on the end-of-run sweep's chmod-back, racing it. The sweep walks the project for .git
# directories; a directory of ours the agent made unreadable (chmod 333) gets u+rx for the walk
# and its mode back after. It was done by name: fstatat (a directory? ours?), then fchmodat and
# open by the same name, and the mode put back by name when the open failed. A process of the
# same uid that is still running when the sweep runs (the agent of a second run in the same
# project, whose file rules do not reach the victim) swaps the directory's name with a
# symlink between those calls (renameat2 RENAME_EXCHANGE, in a loop): fchmodat follows it, and
# a file outside the project (here $TMP/victim, standing for ~/.bashrc) got the directory's
# mode: 733 or 333, writable by every local user.
# What must hold: the victim keeps its mode (600). As nobody only: root reads every directory (no chmod is ever tried). The racer
# is a process of nobody's on the host, in place of that second agent. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=3
N=1000
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || run_skip_all $PLAN "no python3"
tap_plan $PLAN

attack_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
chown "$NOBODY:$NOBODY" "$U/cloister-supervisor"
VICTIM=$TMP/victim
echo 'the user s own file' >"$VICTIM"
chown "$NOBODY:$NOBODY" "$VICTIM"
chmod 600 "$VICTIM"
STOP=$TMP/stop-race
# The agent: N unreadable directories (three execs); it ends once the racer races.
cat >"$U/agent.sh" <<EOF
mkdir race
i=0
set --
while [ \$i -lt $N ]; do
	set -- "\$@" race/d\$i
	i=\$((i + 1))
done
mkdir "\$@"
chmod 333 "\$@"
: >race/ready
# Until the racer is at it (builtins only; bounded).
i=0
while [ ! -e race/racing ] && [ \$i -lt 2000000 ]; do i=\$((i + 1)); done
EOF
# The racer: a symlink to the victim beside each directory, then each pair's names exchanged
# over and over, until told to stop (or 120 s).
cat >"$U/racer.py" <<'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_renameat2, AT_FDCWD, RENAME_EXCHANGE = 316, -100, 2
race, n, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
end = time.monotonic() + 120
while not os.path.exists(race + "/ready"):
    if os.path.exists(stop) or time.monotonic() > end:
        sys.exit(0)
    time.sleep(0.01)
pairs = [((race + "/d%d" % i).encode(), (race + "/l%d" % i).encode()) for i in range(n)]
for a, b in pairs:
    os.symlink(sys.argv[4], b)
open(race + "/racing", "w").close()
while not os.path.exists(stop) and time.monotonic() < end:
    for a, b in pairs:
        libc.syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
EOF
chown "$NOBODY:$NOBODY" "$U/racer.py"
chmod 644 "$U/agent.sh" "$U/racer.py"

[ "$(uname -m)" = x86_64 ] || echo "# renameat2 is syscall 316 on x86_64 only: the racer does nothing here"
# A run's sweep meets the swap now and then, not every time: up to RUNS runs, until one does.
RUNS=8
run=0
mode=600
ran=0
raced=0
while [ "$run" -lt "$RUNS" ] && [ "$mode" = 600 ]; do
	run=$((run + 1))
	chmod -R u+rwx "$U/race" 2>/dev/null
	rm -rf "$U/race" "$STOP"
	as_nobody "$PY" "$U/racer.py" "$U/race" "$N" "$STOP" "$VICTIM" &
	RACER=$!
	on_exit "touch '$STOP'; kill $RACER 2>/dev/null"
	sv_as nobody --ask none -- /bin/sh "$U/agent.sh"
	touch "$STOP"
	wait $RACER
	[ "$rc" -eq 0 ] && ran=$((ran + 1))
	[ -e "$U/race/racing" ] && raced=$((raced + 1))
	mode=$(stat -c %a "$VICTIM")
done
echo "# $run run(s)"
tap_is "$ran" "$run" "nobody: the agent ran, each time" "$(diag)"
tap_is "$raced" "$run" "nobody: the racer raced the sweep, each time" "$(diag)"
tap_is "$mode" 600 \
	"nobody: a file outside the project keeps its mode, the sweep's chmod raced with a symlink"
chmod -R u+rwx "$U" 2>/dev/null

tap_done
