#!/bin/sh
# The supervisor resolves an exec's path itself, in the agent's own mount namespace, with the
# loop's one lock held (docs/ARCHITECTURE.md, "who receives the notifications"). An agent that
# mounts FUSE there (--allow-nested-sandbox lets it make a user and mount namespace of its own)
# and execs a path below the mount, without ever answering the lookup, would freeze the whole
# supervisor: no other exec of any sandbox answered, no dashboard, no CLI, no proxy. Mounting
# FUSE takes the FUSE device. The sandbox's /dev has none (a /dev/null in its place), but a
# devtmpfs of the host mounted elsewhere (a chroot's /dev, a build root's) had it, and every
# other device: the agent opened the real one through it. Here the host has two such mounts,
# one in the read-only tree and one under the agent's writable project; the agent
# (stall_fuse) tries /dev/fuse and both, mounts FUSE if it can and execs below it. While it
# holds, the CLI's status and another exec of the sandbox must be answered. As root and as
# nobody (whom this machine's /dev/fuse, mode 0600, refuses anyway; Debian's is 0666). The
# other ways to a fault or an open that waits on the agent are tried too, before and in its
# namespaces: userfaultfd (the call, /dev/userfaultfd's ioctl), fanotify permission events.
#
# Second layer: the read happens before the lock is taken. A run weakened for the test
# (--test-no-fs-mounts: no nodev) lets root mount FUSE through the host's devtmpfs; while the
# supervisor's lookup waits there, its CLI's status is still answered, and the run ends once
# the agent's server is gone. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=13
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
grep -qw fuse /proc/filesystems || run_skip_all $PLAN "no FUSE in this kernel"
tap_plan $PLAN

# The agent found nothing to mount, or the supervisor is in its lookup.
fuse_settled() { grep -qE '^done|^lookup by pid' "$WT/fuse.out" 2>/dev/null; }

for who in root nobody; do
	user_tree "$who"
	cat >"$W/cfg/config.yaml" <<'EOF'
exec:
  security: full
  ask: off
EOF
	mkdir -p "$W/dev-ro" "$WT/dev-rw"
	user_tree_own
	for d in "$W/dev-ro" "$WT/dev-rw"; do
		mount -t devtmpfs "cloister-test-$$" "$d" && on_exit "umount -l '$d'"
	done
	XDG_RUNTIME_DIR=$W/rt
	# shellcheck disable=SC2016 # the agent's shell expands these
	AGENT='"$1/stall_fuse" /dev/fuse "$2/dev-ro/fuse" "$3/dev-rw/fuse" >"$3/fuse.out" 2>&1 &
		p=$!
		while [ ! -e "$3/go" ]; do sleep 0.05; done
		"$1/marker" "$3/after"
		kill $p 2>/dev/null || :'
	# shellcheck disable=SC2086 # $AS and $USER_ENV are words on purpose
	(cd "$WT" && exec timeout -k 5 60 $AS $USER_ENV "$BIN" run --config-dir "$W/cfg" \
		--ask none --allow-nested-sandbox --name "a6f$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off -- sh -c "$AGENT" sh "$HELPERS" "$W" "$WT") \
		</dev/null >"$W/sv.out" 2>"$W/sv.err" &
	SV=$!
	on_exit "stop_pid $SV"
	wait_until 20 fuse_settled
	res=$(cat "$WT/fuse.out" 2>/dev/null)
	tap_ok "$(printf '%s\n' "$res" | grep -q '^done$' && ! printf '%s\n' "$res" |
		grep -q 'mounted' && echo 0 || echo 1)" \
		"$who: no FUSE device for the agent to mount: not /dev/fuse, nor a host devtmpfs elsewhere" \
		"$res"
	tap_is "$(printf '%s\n' "$res" | grep -cE '^(userfaultfd|/dev/userfaultfd|fanotify): ')/$(
		printf '%s\n' "$res" | grep -c ': made$')" 6/0 \
		"$who: no userfaultfd (call or device) nor fanotify permission events, namespaces or not" \
		"$res"
	wait_until 10 test -s "$XDG_RUNTIME_DIR/cloister/api/$SV.json"
	cli status
	tap_is "$st" 0 "$who: the CLI's status is answered while the agent tries" "$out"
	touch "$WT/go"
	wait_exists 15 "$WT/after"
	tap_ok "$(test -e "$WT/after" && echo 0 || echo 1)" \
		"$who: another exec of the sandbox is answered while the agent tries" "$res"
	finish
	tap_is "$rc" 0 "$who: the run ends with the agent" \
		"$(cat "$W/sv.err")$(cat "$WT/fuse.out" 2>/dev/null)"
done

# ---- the read waits outside the lock (root: a weakened run reaches the host's /dev/fuse) ----
user_tree root
printf 'exec:\n  security: full\n  ask: off\n' >"$W/cfg/config.yaml"
rm -rf "$WT/fuse.out" "$W/rt/cloister" # the first root run's: one run to ask
mkfifo "$WT/gofifo"
XDG_RUNTIME_DIR=$W/rt
# shellcheck disable=SC2016 # the agent's shell expands these; `read`, not an exec, waits
AGENT='"$1/stall_fuse" "$2/dev-ro/fuse" >"$3/fuse.out" 2>&1 &
	p=$!
	read -r go <"$3/gofifo"
	kill $p'
# shellcheck disable=SC2086 # $USER_ENV is words on purpose
(cd "$WT" && exec timeout -k 5 60 $USER_ENV "$BIN" run --config-dir "$W/cfg" --ask none \
	--allow-nested-sandbox --test-no-fs-mounts --name "a6w$$" --listen-approval 127.0.0.1:0 \
	--listen-tokens off --listen-request off -- sh -c "$AGENT" sh "$HELPERS" "$W" "$WT") \
	</dev/null >"$W/sv.out" 2>"$W/sv.err" &
SV=$!
on_exit "stop_pid $SV"
wait_until 20 fuse_settled
res=$(cat "$WT/fuse.out" 2>/dev/null)
tap_like "$res" "lookup by pid 0" \
	"root, no nodev: the agent mounts FUSE and the supervisor's lookup waits there" "$res"
wait_until 10 test -s "$XDG_RUNTIME_DIR/cloister/api/$SV.json"
cli status
tap_is "$st" 0 "root, no nodev: the CLI's status is answered while the lookup waits" "$out"
# shellcheck disable=SC2016 # that shell expands it
timeout 10 sh -c 'echo go >"$1"' sh "$WT/gofifo"
finish
tap_is "$rc" 0 "root, no nodev: the run ends once the agent's FUSE server is gone" \
	"$(cat "$W/sv.err")"

tap_done
