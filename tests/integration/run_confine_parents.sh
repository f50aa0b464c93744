#!/bin/sh
# The policy and the audit trail of the next run are out of the agent's reach (issue 12, "the
# next run's policy"), as root and as an unprivileged user: it renames the parents of the config
# directory (~/.config) and of the audit log (~/.local/share, ~/.local, ~ itself), plants
# ~/.config/cloister/config.yaml with `security: full`, and the next run must still load the
# user's own policy and audit log. Every parent is a mount point in the sandbox (EBUSY), also in
# a user and mount namespace of the agent's own (--allow-nested-sandbox).
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=14
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare
tap_plan $PLAN

POLICY='exec:
  security: full
  deny:
    - path: "/usr/bin/curl"
'
write_config <<EOF
$POLICY
EOF

# attack_script HOME RESULTS [PREFIX]: the attack, run directly or under PREFIX (a nested
# namespace).
attack_script() {
	cat <<EOF
H=$1
R=$2
for d in .config .config/cloister .local/share .local; do
	$3 mv "\$H/\$d" "\$H/\$d.moved" >>\$R/mv 2>&1; echo "\$d rc=\$?" >>\$R/mv
done
$3 mv "\$H" "\$H.moved" >>\$R/mv 2>&1; echo "home rc=\$?" >>\$R/mv
# Whatever moved: plant the next run's policy and a forged audit history.
mkdir -p "\$H/.config/cloister" "\$H/.local/share/cloister" 2>/dev/null
printf 'exec:\\n  security: full\\n' >"\$H/.config/cloister/config.yaml" 2>/dev/null
echo forged >"\$H/.local/share/cloister/audit.log" 2>/dev/null
exit 0
EOF
}

# home_run HOME COMMAND… [RUN OPTIONS] -- AGENT: a run with the default config and audit
# directories under HOME.
home_run() {
	h=$1
	shift
	env -u XDG_STATE_HOME HOME="$h" XDG_CONFIG_HOME="$h/.config" "$@"
}

# check WHO HOME RESULTS STATUS
check() {
	tap_is "$4" 0 "$1: the attacking run ends normally" "$(diag)"
	tap_is "$(grep -c 'rc=0' "$3/mv")" 0 "$1: no parent of the config or audit directory moves" \
		"$(cat "$3/mv")"
	tap_like "$(cat "$3/mv")" 'Device or resource busy' "$1: ... they are mount points (EBUSY)"
	tap_is "$(cat "$2/.config/cloister/config.yaml")" "$(printf '%s' "$POLICY")" \
		"$1: the user's config is what it was"
	tap_ok "$(grep -q '^forged$' "$2/.local/share/cloister/audit.log" && echo 1 || echo 0)" \
		"$1: the audit log holds no forged line"
}

# ---- root ----
H=$TMP/home
R=$TMP/r
mkdir -p "$H/.config/cloister" "$H/.local/share/cloister" "$R"
printf '%s\n' "$POLICY" >"$H/.config/cloister/config.yaml"
attack_script "$H" "$R" >"$TMP/attack.sh"
(cd "$TMP" && home_run "$H" timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --ask none \
	-- sh "$TMP/attack.sh") </dev/null >"$OUT" 2>"$ERR"
check root "$H" "$R" "$?"
home_run "$H" "$SUPERVISOR" policy check -- /usr/bin/curl >/dev/null 2>&1
tap_is "$?" 1 "root: the next run's policy still denies curl"

# ---- nobody ----
nobody_setup
UH=$U/home
UR=$U/r
mkdir -p "$UH/.config/cloister" "$UH/.local/share/cloister" "$UR"
printf '%s\n' "$POLICY" >"$UH/.config/cloister/config.yaml"
attack_script "$UH" "$UR" >"$U/attack.sh"
attack_script "$UH" "$UR" "unshare -Urm" >"$U/attack-nested.sh"
chown -R $NOBODY:$NOBODY "$U"
nobody_run() {
	(cd "$U" && home_run "$UH" timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY \
		--regid=$NOBODY --clear-groups "$UB/cloister-supervisor" run --ask none "$@") \
		</dev/null >"$OUT" 2>"$ERR"
}
nobody_run -- sh "$U/attack.sh"
check non-root "$UH" "$UR" "$?"
home_run "$UH" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	"$UB/cloister-supervisor" policy check -- /usr/bin/curl >/dev/null 2>&1
tap_is "$?" 1 "non-root: the next run's policy still denies curl"

# In a user and mount namespace of its own the parents are still mount points, locked there.
rm -f "$UR/mv"
nobody_run --allow-nested-sandbox -- sh "$U/attack-nested.sh"
st=$?
tap_is "$(grep -c 'rc=0' "$UR/mv")" 0 \
	"non-root, --allow-nested-sandbox: nothing moves from a nested namespace either" \
	"$(cat "$UR/mv") status $st"
tap_is "$(cat "$UH/.config/cloister/config.yaml")" "$(printf '%s' "$POLICY")" \
	"non-root, --allow-nested-sandbox: the user's config is what it was"

tap_done
