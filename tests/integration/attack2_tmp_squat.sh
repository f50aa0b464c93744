#!/bin/sh
# Attack by another local user on a user whose session has no XDG_RUNTIME_DIR (su, an ssh
# login without pam_systemd, a container): the supervisor then keeps its dashboard secret and
# API files in /tmp/cloister-UID, a name anyone can take first. It refuses a directory that is
# not its own — rightly — and so `run` does not start at all: the other user (here root,
# standing for any uid) stops every run of the victim with one mkdir.
# Expected once fixed: a directory of a fixed name in a shared /tmp is never needed (fall back
# to a directory under ~ or $XDG_STATE_HOME, 0700), or a taken name is passed over for
# another one of the user's (mkdtemp) and the API files found through a place only the user
# can write.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=2
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

# A uid of this run's own, so that no other test's /tmp/cloister-UID is touched.
VICTIM=$((20000 + $$ % 10000))
SQUAT=/tmp/cloister-$VICTIM
if [ -e "$SQUAT" ]; then
	tap_skip "squat" "$SQUAT exists already"
	tap_skip "squat" "$SQUAT exists already"
	exit 0
fi
W=$TMP/victim
mkdir -p "$W/cfg" "$W/home" "$W/wt"
printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
chown -R "$VICTIM:$VICTIM" "$W"
chmod 711 "$TMP"
cp "$SUPERVISOR" "$TMP/cloister-supervisor"
chmod 755 "$TMP/cloister-supervisor"

victim_run() {
	(cd "$W/wt" && exec timeout -k 5 30 setpriv --reuid="$VICTIM" --regid="$VICTIM" \
		--clear-groups env -u XDG_RUNTIME_DIR HOME="$W/home" XDG_STATE_HOME="$W/state" \
		"$TMP/cloister-supervisor" run --config-dir "$W/cfg" --name "a2q$$" --ask none \
		-- sh -c 'echo agent ran') </dev/null >"$OUT" 2>"$ERR"
	rc=$?
}

on_exit "rm -rf '$SQUAT'"
victim_run
tap_is "$(cat "$OUT")" "agent ran" "without XDG_RUNTIME_DIR, the victim's run starts ($SQUAT)" \
	"$(diag)"
rm -rf "$SQUAT"

# Another user takes the name first.
mkdir -m 0755 "$SQUAT"
victim_run
tap_is "$(cat "$OUT")" "agent ran" "the victim's run still starts when another user made $SQUAT" \
	"$(diag)"
tap_done
