#!/bin/sh
# The supervisor looks at every exec's file itself, with the loop's one lock held: a file whose
# open or read waits would freeze it whole. The agent names files that wait: a FIFO with no
# writer as the program and as a script's interpreter, a socket, a symlink loop, a pipe
# through /proc/self/fd; the exec must fail as the kernel fails it (EACCES, ELOOP) at once, and
# the next exec must be answered. Only a file the kernel would run is read at all (its "#!"
# line): a script that is not executable is refused unread (its access time stays: /proc/kmsg
# would give the host's kernel log away, a FIFO or a slow file would wait). As root and as
# nobody. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/home"
cp "$SUPERVISOR" "$U/cloister-supervisor"
printf 'exec:\n  security: full\n  ask: off\n' >"$U/cfg/config.yaml"
cp "$U/cfg/config.yaml" "$CFG/config.yaml"

# Does reading a file here move its access time (relatime: one older than its mtime)?
: >"$U/probe"
touch -a -d @946684800 "$U/probe"
cat "$U/probe" >/dev/null
atime_moves=$([ "$(stat -c %X "$U/probe")" != 946684800 ] && echo yes || echo no)

for who in root nobody; do
	D=$U/$who
	mkdir -p "$D"
	mkfifo "$D/fifo" "$D/ififo"
	chmod 755 "$D/fifo" "$D/ififo"
	printf '#!%s/ififo\n' "$D" >"$D/script"
	chmod 755 "$D/script"
	python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$D/sock"
	chmod 755 "$D/sock"
	ln -s loop2 "$D/loop1"
	ln -s loop1 "$D/loop2"
	printf '#!/bin/sh\necho ran\n' >"$D/noexec"
	chmod 644 "$D/noexec"
	chown -R "$NOBODY:$NOBODY" "$U"
	touch -a -d @946684800 "$D/noexec"
	# shellcheck disable=SC2016 # the agent's shell expands these
	SV_TIMEOUT=40 sv_as "$who" --ask none -- sh -c '
		for f in fifo script sock loop1 noexec; do "./$1/$f"; echo "$f $?"; done
		exec 3<>"$1/fifo"; /proc/self/fd/3; echo "pipe $?"
		"$2/marker" "$1/after"; echo "after $?"' sh "$who" "$HELPERS"
	tap_is "$(grep -E '^[a-z0-9]+ [0-9]+$' "$OUT" | tr '\n' ' ')" \
		"fifo 126 script 126 sock 126 loop1 127 noexec 126 pipe 126 after 0 " \
		"$who: a FIFO, a script of a FIFO, a socket, a loop, a pipe: refused, then the next exec runs" \
		"$(diag)"
	if [ "$atime_moves" = no ]; then
		tap_skip "$who: a script that is not executable is refused unread" \
			"reading a file does not move its access time here"
	else
		tap_is "$(stat -c %X "$D/noexec")" 946684800 \
			"$who: a script that is not executable is refused unread" "$(diag)"
	fi
	tap_is "$rc" 0 "$who: the run ends with the agent" "$(diag)"
done

tap_done
