#!/bin/sh
# Attack: switch the audit log off. The agent cannot write the audit log, but it can fill the
# file system the log is on (the home directory's, often) through any directory it may write.
# The next line the supervisor writes fails with ENOSPC; were the log closed for the rest of
# the run then, the agent would free the space again and everything it did from then on —
# execs, connections, the decisions a person makes — would leave no trace. As root and as an
# unprivileged user, on a small tmpfs holding the home and state directories. What holds: the
# person is told; the automatic lines wait in memory (up to 64 KiB: the agent's shell, run
# before the disk filled, is not lost), and once there is room again the log goes on, with a
# record of how many lines did not fit, and the lines after it are whole. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3
tap_plan $PLAN

attack_setup
SMALL=$TMP/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=2m,mode=0755 cloister-test-small "$SMALL" || {
	echo "# cannot mount a tmpfs"
	exit 1
}
on_exit "umount -l '$SMALL'"

# The agent: fill the file system of $HOME through its project there (the rest of the home is
# read-only to it), exec more than the 64 KiB of lines memory keeps (300 lines of about 300
# bytes), free the space, exec the marker command.
cat >"$TMP/fill.sh" <<'EOF'
dd if=/dev/zero of="$PWD/fill" bs=4k 2>/dev/null
i=0
while [ $i -lt 300 ]; do /usr/bin/true; i=$((i + 1)); done
rm -f "$PWD/fill"
/usr/bin/echo "after-the-disk-was-full-$1"
EOF
chmod 644 "$TMP/fill.sh"

for who in root nobody; do
	home=$SMALL/$who/home
	state=$SMALL/$who/state
	proj=$home/proj
	mkdir -p "$home" "$state" "$proj"
	log=$state/cloister/audit.log
	if [ "$who" = root ]; then
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" env HOME="$home" \
			XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$state" \
			"$SUPERVISOR" run --config-dir "$CFG" --ask none -- sh "$TMP/fill.sh" "$who") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		chown -R "$NOBODY:$NOBODY" "$SMALL/$who"
		(cd "$proj" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY \
			--regid=$NOBODY --clear-groups env HOME="$home" \
			XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$state" \
			"$UB/cloister-supervisor" run --config-dir "$U/cfg" --ask none -- \
			sh "$TMP/fill.sh" "$who") </dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
	tap_is "$rc:$(cat "$OUT")" "0:after-the-disk-was-full-$who" "$who: the agent ran to its end" \
		"$(diag)"
	tap_is "$(grep -c '"exe":"/usr/bin/dash"' "$log" 2>&1)" 1 \
		"$who: the audit log was being written (the agent's shell is in it)"
	tap_is "$(grep -c "after-the-disk-was-full-$who" "$log" 2>&1)" 1 \
		"$who: once there is room again, the agent's next exec is in the audit log" \
		"$(diag)"
	tap_like "$(cat "$ERR")" "audit log .*: cannot write \\(No space left on device\\)" \
		"$who: the terminal says the audit log cannot be written"
	tap_like "$(grep '"verdict":"lost"' "$log")" '"kind":"audit".*"lost":[1-9][0-9]*}$' \
		"$who: the lines lost while the disk was full are counted in the log" "$(cat "$log")"
	# A line the full disk cut short stays (other runs may append to the file: it is not ours
	# to truncate), but what follows it starts on a line of its own.
	tap_ok "$(sed -n '/"verdict":"lost"/,$p' "$log" | python3 -c 'import json, sys
for l in sys.stdin:
    json.loads(l)' >/dev/null 2>&1 && echo 0 || echo 1)" \
		"$who: from the count of lost lines on, every line of the log is whole" "$(cat "$log")"
	rm -rf "${SMALL:?}/$who"
done

tap_done
