#!/bin/sh
# Attack on the sandbox's /dev, as root and as an unprivileged user: every device but a few is
# covered, every socket too, but a FIFO in /dev was left as it was — and neither the read-only
# mount (a FIFO is opened past it, as a device is) nor Landlock (which lets /dev's nodes be
# written as files) stops writing to it. /dev/initctl is one on a sysvinit host (a runlevel
# request written there as root powers the machine off), /dev/xconsole another (rsyslog's
# messages); a program's own FIFO there is a command channel. The agent writes into a FIFO of
# the host's /dev and reads away what a host program left in it for its reader.
# What must hold: a FIFO of the host's /dev is not there in the sandbox (/dev/null is bound
# over it, as over a socket); nothing the agent writes reaches its reader, nothing it held is
# taken. The test makes the FIFO
# /dev/cloister-test-PID (removed at the end). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3 mkfifo
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
nobody_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
# The host program: FIFO held open for reading, holding a message for it, while COMMAND runs;
# then what is in the FIFO.
cat >"$U/reader.py" <<'EOF'
import os, subprocess, sys
fifo = sys.argv[1]
r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
os.write(w, b"for-the-reader\n")
subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL)
try:
    got = os.read(r, 4096)
except BlockingIOError:
    got = b""
print("fifo: %s, %s" % ("message left" if b"for-the-reader" in got else "message taken",
      "the agent's text" if b"runlevel" in got else "nothing else"), file=sys.stderr)
EOF
# The agent: the FIFO read, then written.
cat >"$U/agent.py" <<'EOF'
import os, stat, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
except OSError as e:
    print("open: " + e.strerror)
    sys.exit(0)
if not stat.S_ISFIFO(os.fstat(fd).st_mode):
    print("not a FIFO there")
    sys.exit(0)
try:
    got = os.read(fd, 4096)
except BlockingIOError:
    got = b""
os.write(fd, b"runlevel 0\n")
print("opened, read %d bytes, wrote" % len(got))
EOF
chown -R "$NOBODY:$NOBODY" "$U"
chmod 644 "$U/reader.py" "$U/agent.py"

for who in root nobody; do
	fifo=/dev/cloister-test-$who-$$
	mkfifo -m 600 "$fifo"
	on_exit "rm -f '$fifo'"
	if [ "$who" = root ]; then
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" "$PY" "$U/reader.py" "$fifo" "$SUPERVISOR" run \
			--config-dir "$CFG" --ask none -- "$PY" "$U/agent.py" "$fifo") >"$OUT" 2>"$ERR"
	else
		chown "$NOBODY:$NOBODY" "$fifo"
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U/home" XDG_STATE_HOME="$U/state" "$PY" \
			"$U/reader.py" "$fifo" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
			--ask none -- "$PY" "$U/agent.py" "$fifo") >"$OUT" 2>"$ERR"
	fi
	rc=$?
	out=$(cat "$OUT")
	seen=$(grep '^fifo: ' "$ERR")
	tap_ok "$(test "$rc" -eq 0 && test -n "$seen" && echo 0 || echo 1)" "$who: the run ended" \
		"$(diag)"
	case $out in "open: "* | "not a FIFO there") st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who: the host's FIFO in /dev is not there in the sandbox ($out)"
	tap_is "$seen" "fifo: message left, nothing else" \
		"$who: its reader gets what was meant for it, and nothing of the agent's"
	rm -f "$fifo"
done

tap_done
