#!/bin/sh
# Attack: read what other agents did. The audit log is read-only in the sandbox, not hidden,
# and it holds every exec (full arguments), connection and decision of every run of the user
# — the other sandboxes', earlier sessions' — the very stream the approval API refuses to
# show without the token (README: reading needs the API token, because it carries "the full
# argv of every exec of every agent"). An agent reads another sandbox's command line, with
# whatever secret it carried, as root and as an unprivileged user. What must hold: the agent
# can neither change nor read the audit log (hidden, its parents pinned). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

attack_setup
SECRET="token-of-another-sandbox-$$"
# The agent looks for it without naming it (its own command line goes to the log too).
cat >"$TMP/read.sh" <<'EOF'
grep -ho 'Bearer token-of-another-sandbox-[0-9][0-9]*' "$1" | sort -u
EOF
chmod 644 "$TMP/read.sh"

for who in root nobody; do
	if [ "$who" = root ]; then
		log=$AUDIT
		sv --ask none --name other -- /usr/bin/echo "--header=Authorization: Bearer $SECRET"
	else
		log=$U/state/cloister/audit.log
		sv_nobody --ask none --name other -- /usr/bin/echo "--header=Authorization: Bearer $SECRET"
	fi
	tap_is "$(grep -c "$SECRET" "$log" 2>&1)" 1 \
		"$who: another sandbox's command is in the user's audit log" "$(diag)"
	if [ "$who" = root ]; then
		sv --ask none --name agent -- sh "$TMP/read.sh" "$log"
	else
		sv_nobody --ask none --name agent -- sh "$TMP/read.sh" "$log"
	fi
	tap_is "$rc" 0 "$who: the agent ran" "$(diag)"
	tap_is "$(cat "$OUT")" "" "$who: the agent cannot read the audit log (another sandbox's secret)" \
		"$(diag)"
done

tap_done
