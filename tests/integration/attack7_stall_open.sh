#!/bin/sh
# A write open outside fs.write (fs.ask: on-write) is resolved by the supervisor itself, in the
# agent's view, before it is asked about (supervisor/files/write_ask.h): the path and the
# process's command line are read from the agent's memory, and the path's lookups are made in
# the agent's file systems. An agent that makes those wait (a FUSE server of its own that never
# answers; its mm's lock held by threads that map and unmap) held the loop's one lock while it
# waited: no dashboard, no CLI, no proxy, no other sandbox of `serve` was served. The read is
# now made by the receiving thread before it takes the lock; only the sandbox that asked waits.
#
# The sandbox keeps every FUSE device out of reach (attack6_stall_fuse.sh); a run weakened for
# the test (--test-no-fs-mounts: no nodev) lets the agent use a FUSE device node the test made
# in its project, mount FUSE on a directory outside fs.write in a user and mount namespace of
# its own (--allow-nested-sandbox) and open a file below it for writing. While the supervisor's
# lookup waits there, the CLI's status must be answered; the run ends once the agent's FUSE
# server is gone (killed by the agent, or with the sandbox at its end or on SIGTERM while the
# read still waits on it), and the thread that waited stops with it. As root and as nobody.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=9
run_needs_root $PLAN
grep -qw fuse /proc/filesystems || run_skip_all $PLAN "no FUSE in this kernel"
run_needs_tools $PLAN setpriv
tap_plan $PLAN

# The agent found nothing to mount, or the supervisor is in its lookup.
fuse_settled() { grep -qE "^done|^(lookup|request [0-9]+) by pid|^open: " "$WT/fuse.out" 2>/dev/null; }

# How the run ends: the agent kills its FUSE server (root), leaves it to the sandbox's end,
# which kills it while the supervisor's read still waits on it (nobody), or the supervisor
# gets SIGTERM meanwhile (root again).
for how in root:kill nobody:leave root:term; do
	who=${how%%:*}
	user_tree "$who"
	rm -rf "$WT/gofifo" "$WT/fuse.out" "$W/rt/cloister"
	printf 'exec:\n  security: full\n  ask: off\nfs:\n  ask: on-write\n' >"$W/cfg/config.yaml"
	mkdir -p "$W/fm" "$WT/fdev"
	mount -t tmpfs -o mode=0755 "cloister-test-$$" "$WT/fdev" &&
		on_exit "umount -l '$WT/fdev'"
	mknod -m 0666 "$WT/fdev/fuse" c 10 229
	mkfifo "$WT/gofifo"
	user_tree_own
	XDG_RUNTIME_DIR=$W/rt
	# shellcheck disable=SC2016 # the agent's shell expands these; `read`, not an exec, waits
	AGENT='"$1/stall_fuse" --open "$2/fm" "$3/fdev/fuse" >"$3/fuse.out" 2>&1 &
		p=$!
		read -r go <"$3/gofifo"
		[ "$go" = kill ] && kill $p
		:'
	# shellcheck disable=SC2086 # $AS and $USER_ENV are words on purpose
	(cd "$WT" && exec timeout -k 5 60 $AS $USER_ENV "$BIN" run --config-dir "$W/cfg" \
		--ask none --allow-nested-sandbox --test-no-fs-mounts --name "a7o$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- sh -c "$AGENT" sh "$HELPERS" "$W" "$WT") \
		</dev/null >"$W/sv.out" 2>"$W/sv.err" &
	SV=$!
	on_exit "stop_pid $SV"
	wait_until 20 fuse_settled
	res=$(cat "$WT/fuse.out" 2>/dev/null)
	tap_like "$res" "by pid 0" \
		"$how: the agent mounts FUSE outside fs.write and the supervisor's lookup of its write waits there" \
		"$res$(cat "$W/sv.err")"
	wait_until 10 test -s "$XDG_RUNTIME_DIR/cloister/api/$SV.json"
	cli status
	tap_is "$st" 0 "$how: the CLI's status is answered while the lookup waits" "$out"
	if [ "${how#*:}" = term ]; then
		kill -TERM "$SV"
		want=143
	else
		# shellcheck disable=SC2016 # that shell expands it
		timeout 10 sh -c 'echo "$2" >"$1"' sh "$WT/gofifo" "${how#*:}"
		want=0
	fi
	finish
	# Its receiving thread, which waited in the read, stopped with it (not left behind).
	tap_is "$rc/$(grep -c 'left to end by itself' "$W/sv.err")" "$want/0" \
		"$how: the run ends once the agent's FUSE server is gone, its thread stopped" \
		"$(cat "$W/sv.err")"
done

tap_done
