#!/bin/sh
# Attacks on the processes around the sandbox that hold today, kept as coverage, as root and as
# an unprivileged user. The agent runs with the caller's uid (a root agent keeps CAP_KILL), so
# a process it could name, it could signal, trace or read:
#   - a program of the person on the host, by its pid (given to the agent): kill -9, a pidfd
#     of it, its /proc entry (command line, environment, open files);
#   - the sandbox's own init (pid 1: the supervisor's binary, started with the caller's whole
#     environment, credentials included, that the agent's was stripped of): its environment,
#     its open files (the sandbox's sockets to the supervisor), its memory, ptrace.
# What holds: the sandbox's pid namespace (no host pid is there to name) and the init being
# non-dumpable (PR_SET_DUMPABLE 0: only a ptrace-capable caller reads its /proc files).
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
attack_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
SECRET="a6-credential-$$"
cat >"$U/agent.py" <<'EOF'
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
host, secret = int(sys.argv[1]), sys.argv[2]
got = []
def attempt(what, f):
    try:
        f()
        got.append(what)
    except OSError:
        pass
# The host's program, by its host pid.
attempt("kill", lambda: os.kill(host, signal.SIGKILL))
if libc.syscall(434, host, 0) >= 0:  # pidfd_open
    got.append("pidfd")
attempt("proc", lambda: os.stat("/proc/%d/cmdline" % host))
# Every process in sight, the init first: environment, open files, memory.
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == os.getpid():
        continue
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            if secret.encode() in f.read():
                got.append("environ of %d" % pid)
    except OSError:
        pass
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            os.readlink("/proc/%d/fd/%s" % (pid, fd))
            got.append("fds of %d" % pid)
            break
    except OSError:
        pass
    attempt("mem of %d" % pid, lambda: open("/proc/%d/mem" % pid, "rb").close())
# PTRACE_ATTACH to the init.
if libc.ptrace(16, 1, None, None) == 0:
    got.append("ptrace of 1")
print("reached: " + (", ".join(got) or "nothing"))
EOF
chown -R "$NOBODY:$NOBODY" "$U"
chmod 644 "$U/agent.py"

for who in root nobody; do
	if [ "$who" = root ]; then
		sleep 600 &
	else
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups sleep 600 &
	fi
	victim=$!
	on_exit "kill $victim 2>/dev/null"
	# A credential in the caller's environment: the init has it, the agent must not.
	A6_TOKEN=$SECRET
	export A6_TOKEN
	sv_as "$who" --ask none -- "$PY" "$U/agent.py" "$victim" "$SECRET"
	unset A6_TOKEN
	out=$(cat "$OUT")
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who: the agent ran" "$(diag)"
	tap_is "$out" "reached: nothing" \
		"$who: no host process signalled or opened, no process's environment, files or memory read"
	kill -0 "$victim" 2>/dev/null
	tap_ok $? "$who: the person's program is still running"
	case $(cat "$ERR") in *"$SECRET"*) st=1 ;; *) st=0 ;; esac
	tap_ok $st "$who: the credential stripped from the agent's environment shows nowhere"
	kill "$victim" 2>/dev/null
done

tap_done
