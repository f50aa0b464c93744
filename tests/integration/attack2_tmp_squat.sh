#!/bin/sh
# Attack by another local user on a user whose session has no XDG_RUNTIME_DIR (su, an ssh
# login without pam_systemd, a container): the supervisor then keeps its dashboard secret and
# API files in /tmp/cloister-UID, a name anyone can take first. It refuses a directory that is
# not its own — rightly — and so `run` did not start at all: the other user (here root,
# standing for any uid) stopped every run of the victim with one mkdir.
# Held now: a taken name is passed over for a fresh private directory of the user's
# (/tmp/cloister-UID.XXXXXX, mkdtemp), said once; the CLI and the next supervisors find it
# (the first private one of the user's by name); it is hidden from the agent like the usual
# one; a symlink at the name is refused as well.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

# A uid of this run's own, so that no other test's /tmp/cloister-UID is touched.
VICTIM=$((20000 + $$ % 10000))
SQUAT=/tmp/cloister-$VICTIM
if [ -e "$SQUAT" ] || [ -L "$SQUAT" ] || ls -d "$SQUAT".* >/dev/null 2>&1; then
	i=0
	while [ $i -lt $PLAN ]; do
		tap_skip "squat" "$SQUAT exists already"
		i=$((i + 1))
	done
	exit 0
fi
W=$TMP/victim
mkdir -p "$W/cfg" "$W/home" "$W/wt"
# The host's /tmp in the sandbox: the fallback directory is there, and must stay hidden.
printf 'exec:\n  security: full\n  defaults: false\nfs:\n  tmp: host\n' >"$W/cfg/config.yaml"
chown -R "$VICTIM:$VICTIM" "$W"
chmod 711 "$TMP"
cp "$SUPERVISOR" "$TMP/cloister-supervisor"
chmod 755 "$TMP/cloister-supervisor"

as_victim() {
	setpriv --reuid="$VICTIM" --regid="$VICTIM" --clear-groups \
		env -u XDG_RUNTIME_DIR HOME="$W/home" XDG_STATE_HOME="$W/state" "$@"
}
victim_run() { # [AGENT ARGS…]
	[ $# -gt 0 ] || set -- sh -c 'echo agent ran'
	(cd "$W/wt" && exec timeout -k 5 30 setpriv --reuid="$VICTIM" --regid="$VICTIM" \
		--clear-groups env -u XDG_RUNTIME_DIR HOME="$W/home" XDG_STATE_HOME="$W/state" \
		"$TMP/cloister-supervisor" run --config-dir "$W/cfg" --name "a2q$$" --ask none \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- "$@") </dev/null >"$OUT" 2>"$ERR"
	rc=$?
}
fallbacks() { ls -d "$SQUAT".* 2>/dev/null; }

on_exit "rm -rf '$SQUAT' '$SQUAT'.*"
victim_run
tap_is "$(cat "$OUT")" "agent ran" "without XDG_RUNTIME_DIR, the victim's run starts ($SQUAT)" \
	"$(diag)"
rm -rf "$SQUAT"

# Another user takes the name first.
mkdir -m 0755 "$SQUAT"
victim_run
tap_is "$(cat "$OUT")" "agent ran" "the victim's run still starts when another user made $SQUAT" \
	"$(diag)"
FB=$(fallbacks)
tap_ok "$([ "$(echo "$FB" | wc -w)" = 1 ] && [ "$(stat -c %u:%a "$FB")" = "$VICTIM:700" ] &&
	[ "$(grep -c "/tmp/cloister-$VICTIM is another user's" "$ERR")" = 1 ] && echo 0 || echo 1)" \
	"it uses a fresh private directory of its own (mkdtemp) and says so once" "$(diag)"

# The next run finds the same one. While its agent waits, the victim's CLI sees the
# supervisor; the agent, with the host's /tmp, cannot read the secret kept there.
cat >"$W/agent.sh" <<EOF
(cat '$FB/secret') >/dev/null 2>&1; echo "secret \$?"
: >'$W/wt/ready'
i=0; while [ ! -e '$W/wt/go' ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
EOF
chmod 644 "$W/agent.sh"
victim_run sh "$W/agent.sh" &
BG=$!
i=0
while [ ! -e "$W/wt/ready" ] && [ $i -lt 400 ]; do
	sleep 0.05
	i=$((i + 1))
done
status=$(cd / && as_victim "$TMP/cloister-supervisor" status 2>&1)
: >"$W/wt/go"
wait $BG
tap_like "$status" "^supervisor pid [0-9]+ at http" \
	"the victim's \`status\` finds the running supervisor through the fallback" "$status"
tap_is "$(grep '^secret' "$OUT")" "secret 1" "the agent cannot read the dashboard secret there" \
	"$(diag)"
tap_is "$(fallbacks)" "$FB" "no second fallback directory is made" "$(fallbacks)"

# A symlink at the name, to a directory the victim owns: refused too (looked at through a
# descriptor opened without following it).
rm -rf "$SQUAT" "$FB"
ln -s "$W/home" "$SQUAT"
victim_run
tap_is "$(cat "$OUT")" "agent ran" "the victim's run starts when $SQUAT is a symlink to its home" \
	"$(diag)"
tap_ok "$([ ! -e "$W/home/api" ] && [ -n "$(fallbacks)" ] && echo 0 || echo 1)" \
	"nothing is written through the symlink" "$(ls -la "$W/home"; diag)"
tap_done
