#!/bin/sh
# Attack on the host's FIFOs, as root and as an unprivileged user. Neither the read-only mount
# (a FIFO is opened past it, as a device is) nor, in /dev, Landlock (which lets /dev's nodes be
# written as files) stops writing to a FIFO, and a run with --allow-nested-sandbox has no
# Landlock file rules at all (they would refuse the agent's own mounts):
#   - /dev: every device but a few is covered, every socket too, but a FIFO was left as it
#     was: /dev/initctl on a sysvinit host (a runlevel request written there as root powers the
#     machine off), /dev/xconsole (rsyslog's messages), a program's own command channel;
#   - /run, with --allow-nested-sandbox (bubblewrap in the agent): systemd's /run/initctl,
#     the same runlevel requests, on every systemd host.
# The agent writes into such a FIFO and reads away what a host program left in it for its
# reader. What must hold: the host's FIFO is not there in the sandbox (/dev/null is bound over
# it, as over a socket); nothing the agent writes reaches its reader, nothing it held is
# taken. The test makes the FIFOs /dev/cloister-test-WHO-PID and /run/cloister-test-WHO-PID
# (removed at the end). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3 mkfifo
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
attack_setup
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

# case WHO FIFO [RUN OPTIONS]: the agent of WHO at FIFO, held by a reader of WHO on the host.
case_of() {
	who=$1
	fifo=$2
	shift 2
	mkfifo -m 600 "$fifo"
	on_exit "rm -f '$fifo'"
	if [ "$who" = root ]; then
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" "$PY" "$U/reader.py" "$fifo" "$SUPERVISOR" run \
			--config-dir "$CFG" --ask none "$@" -- "$PY" "$U/agent.py" "$fifo") >"$OUT" 2>"$ERR"
	else
		chown "$NOBODY:$NOBODY" "$fifo"
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U/home" XDG_STATE_HOME="$U/state" "$PY" \
			"$U/reader.py" "$fifo" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
			--ask none "$@" -- "$PY" "$U/agent.py" "$fifo") >"$OUT" 2>"$ERR"
	fi
	rc=$?
	out=$(cat "$OUT")
	seen=$(grep '^fifo: ' "$ERR")
	tap_ok "$(test "$rc" -eq 0 && test -n "$seen" && echo 0 || echo 1)" \
		"$who, $fifo${*:+ $*}: the run ended" "$(diag)"
	case $out in "open: "* | "not a FIFO there") st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who, $fifo${*:+ $*}: the host's FIFO is not there in the sandbox ($out)"
	tap_is "$seen" "fifo: message left, nothing else" \
		"$who, $fifo${*:+ $*}: its reader gets what was meant for it, and nothing of the agent's"
	rm -f "$fifo"
}

for who in root nobody; do
	case_of "$who" "/dev/cloister-test-$who-$$"
	case_of "$who" "/run/cloister-test-$who-$$" --allow-nested-sandbox
done

tap_done
