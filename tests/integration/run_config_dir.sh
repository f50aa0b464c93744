#!/bin/sh
# A relative --config-dir, as a first run types it: taken from the working directory, created
# when missing, without a spurious warning, and read-only for the agent like any other.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=4
run_needs_root $PLAN
tap_plan $PLAN

mkdir -p "$TMP/work"
(cd "$TMP/work" && timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir relcfg --ask none \
	-- sh -c 'touch relcfg/planted 2>/dev/null; echo "touch $?"') </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:touch 1" \
	"the agent cannot write a relative config directory" "$(cat "$ERR")"
tap_ok "$(grep -q 'cannot be created\|cannot create' "$ERR" && echo 1 || echo 0)" \
	"no warning that it cannot be created" "$(cat "$ERR")"
tap_is "$(stat -c %a "$TMP/work/relcfg" 2>&1)" 700 "it is created, private, where it was named"
tap_ok "$([ ! -e "$TMP/work/relcfg/planted" ] && echo 0 || echo 1)" "nothing was planted in it"

tap_done
