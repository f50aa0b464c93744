#!/bin/sh
# Attack: switch the audit log off. The agent cannot write the audit log, but it can fill the
# file system the log is on (the home directory's, often) through any directory it may write.
# The next line the supervisor writes fails with ENOSPC, and the supervisor then closes the
# log for the rest of the run ("further lines are lost"): the agent frees the space again and
# everything it does from then on — execs, connections, the decisions a person makes — leaves
# no trace. As root and as an unprivileged user, on a small tmpfs holding the home and state
# directories. What must hold: once there is room again, the log goes on (with a record of
# what was lost). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
nobody_setup
SMALL=$TMP/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=2m,mode=0755 cloister-test-small "$SMALL" || {
	echo "# cannot mount a tmpfs"
	exit 1
}
on_exit "umount -l '$SMALL'"

# The agent: fill the file system of $HOME, exec enough for the log to need a new block (its
# lines cannot be written), free the space, exec the marker command.
cat >"$TMP/fill.sh" <<'EOF'
dd if=/dev/zero of="$HOME/fill" bs=4k 2>/dev/null
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /usr/bin/true; done
rm -f "$HOME/fill"
/usr/bin/echo "after-the-disk-was-full-$1"
EOF
chmod 644 "$TMP/fill.sh"

for who in root nobody; do
	home=$SMALL/$who/home
	state=$SMALL/$who/state
	mkdir -p "$home" "$state"
	log=$state/cloister/audit.log
	if [ "$who" = root ]; then
		(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" env HOME="$home" \
			XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$state" \
			"$SUPERVISOR" run --config-dir "$CFG" --ask none -- sh "$TMP/fill.sh" "$who") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		chown -R "$NOBODY:$NOBODY" "$SMALL/$who"
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY \
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
	tap_todo "one failed write closes the audit log for the rest of the run"
	tap_is "$(grep -c "after-the-disk-was-full-$who" "$log" 2>&1)" 1 \
		"$who: once there is room again, the agent's next exec is in the audit log" \
		"$(diag)"
	tap_todo ""
	rm -rf "${SMALL:?}/$who"
done

tap_done
