#!/bin/sh
# Attack on the IPC namespace, as root and as an unprivileged user: the sandbox has an IPC
# namespace and a /dev/shm of its own, but /dev/mqueue and /dev/hugepages (systemd mounts both
# on every boot) were the host's mounts, kept read-only.
#   - /dev/mqueue: mq_open() names only the sandbox's own POSIX message queues, but a queue's
#     file opened there for reading is a descriptor of the HOST's queue whatever namespace
#     opens it: mq_timedreceive() on it takes (and so removes) the messages a program of the
#     host left for another — a job queue's commands, a daemon's replies — with no allowed
#     exec or connection. Sending needs a write open, which the read-only mount refused.
#   - /dev/hugepages: the host's hugetlbfs, whose files are shared memory like /dev/shm's
#     (databases, DPDK, QEMU guests map them), open to read by the same uid.
# What must hold: the agent reads no message of a host's queue (and the message is still there
# for its reader after the run), cannot send into it, and has a /dev/mqueue of its own IPC
# namespace: its own queues work (mq_open creates them, Landlock allowing) and are listed
# there; no file of the host's hugetlbfs is in its view.
# The test runs in a mount namespace of its own, with an overlay over /dev that adds the two
# directories when this machine has none, and mounts both file systems there: the host's /dev
# is left as it was. Prints TAP.
set -u
if [ -z "${A6_MQ_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1; then
	A6_MQ_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare python3
grep -qw mqueue /proc/filesystems || run_skip_all $PLAN "the kernel has no mqueue file system"
grep -qw hugetlbfs /proc/filesystems || run_skip_all $PLAN "the kernel has no hugetlbfs"
grep -qw overlay /proc/filesystems || run_skip_all $PLAN "the kernel has no overlayfs"
[ -n "${A6_MQ_NS:-}" ] || run_skip_all $PLAN "no mount namespace of the test's own (unshare)"
OV=$TMP/devov
mkdir "$OV"
if ! mount -t tmpfs cloister-test-dev "$OV" ||
	! mkdir "$OV/u" "$OV/w" "$OV/u/mqueue" "$OV/u/hugepages" ||
	! mount -t overlay cloister-test-dev -o "lowerdir=/dev,upperdir=$OV/u,workdir=$OV/w" /dev; then
	run_skip_all $PLAN "cannot put an overlay over /dev in the test's mount namespace"
fi
on_exit "umount -l /dev; umount -l '$OV'"
mount -t mqueue cloister-test-mq /dev/mqueue ||
	run_skip_all $PLAN "cannot mount an mqueue file system on /dev/mqueue"
mount -t hugetlbfs -o mode=1777 cloister-test-huge /dev/hugepages ||
	run_skip_all $PLAN "cannot mount a hugetlbfs on /dev/hugepages"
tap_plan $PLAN

# Debian's python3, not a per-user shim on root's PATH that nobody cannot run.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
attack_setup
cat >"$U/mq.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
def err(what):
    return what + ": " + os.strerror(ctypes.get_errno())
def make(name):
    a = Attr(0, 4, 128, 0)
    q = libc.mq_open(("/" + name).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
    if q < 0:
        sys.exit(err("mq_open"))
    return q
def take(fd):
    buf = ctypes.create_string_buffer(128)
    n = libc.mq_receive(fd, buf, 128, None)
    return buf.raw[:n].decode() if n >= 0 else err("mq_receive")
cmd, name = sys.argv[1], sys.argv[2]
if cmd == "send":  # the host: queue /NAME holding one message
    q = make(name)
    m = sys.argv[3].encode()
    if libc.mq_send(q, m, len(m), 0) < 0:
        sys.exit(err("mq_send"))
elif cmd == "steal":  # the agent: the host's queue by its file, read
    try:
        fd = os.open("/dev/mqueue/" + name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        print("open: " + e.strerror)
        sys.exit(0)
    print("got: " + take(fd))
elif cmd == "inject":  # the agent: the host's queue by its file, written
    try:
        fd = os.open("/dev/mqueue/" + name, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        print("open: " + e.strerror)
        sys.exit(0)
    m = b"injected"
    print("sent" if libc.mq_send(fd, m, len(m), 0) == 0 else err("mq_send"))
elif cmd == "own":  # the agent: a queue of its own, through mq_open and through its file
    q = make(name)
    m = b"mine"
    if libc.mq_send(q, m, len(m), 0) < 0:
        sys.exit(err("mq_send"))
    print("own: " + take(q) + (" listed" if os.path.exists("/dev/mqueue/" + name) else ""))
elif cmd == "huge":  # the agent: the names in /dev/hugepages
    names = sorted(os.listdir("/dev/hugepages")) if os.path.isdir("/dev/hugepages") else []
    print("names: " + " ".join(names))
elif cmd == "size":  # the host: messages waiting, from the queue's file
    with open("/dev/mqueue/" + name) as f:
        print(f.read().split()[0])
EOF
chown "$NOBODY:$NOBODY" "$U/mq.py"
chmod 644 "$U/mq.py"
on_exit "rm -f /dev/mqueue/a6-*-$$ /dev/hugepages/a6-*-$$"

# agent WHO ARGS…: mq.py ARGS in a sandbox of WHO; its output.
agent() {
	who=$1
	shift
	sv_as "$who" --ask none -- "$PY" "$U/mq.py" "$@"
	cat "$OUT"
}
host() {
	if [ "$1" = root ]; then
		shift
		"$PY" "$U/mq.py" "$@"
	else
		shift
		as_nobody "$PY" "$U/mq.py" "$@"
	fi
}
cp "$SUPERVISOR" "$U/cloister-supervisor"
chown "$NOBODY:$NOBODY" "$U/cloister-supervisor"

for who in root nobody; do
	q=a6-$who-$$
	host "$who" send "$q" "secret-for-the-host-$$"
	got=$(agent "$who" steal "$q")
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who: the agent ran" "$(diag)"
	case $got in *secret-for-the-host*) st=1 ;; *) st=0 ;; esac
	tap_ok $st "$who: the agent receives no message of the host's queue ($got)"
	tap_is "$(host "$who" size "$q")" "QSIZE:$(printf 'secret-for-the-host-%s' "$$" | wc -c)" \
		"$who: the message is still there for the host's reader"
	got=$(agent "$who" inject "$q")
	tap_ok "$(test "$got" != sent && echo 0 || echo 1)" \
		"$who: the agent cannot send into the host's queue ($got)"
	got=$(agent "$who" own "a6-own-$who-$$")
	tap_is "$got" "own: mine listed" "$who: a queue of the agent's own works, in its own /dev/mqueue"
	if [ "$who" = root ]; then
		: >"/dev/hugepages/a6-$who-$$"
	else
		as_nobody sh -c ": >/dev/hugepages/a6-$who-$$"
	fi
	got=$(agent "$who" huge -)
	case $got in names:*a6-$who-$$* | "") st=1 ;; names:*) st=0 ;; *) st=1 ;; esac
	tap_ok $st "$who: no file of the host's hugetlbfs in the agent's view ($got)" "$(diag)"
done

tap_done
