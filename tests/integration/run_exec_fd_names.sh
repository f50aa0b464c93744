#!/bin/sh
# `cloister-supervisor run`: an exec that names an open file — fexecve, /proc/self/fd/N,
# /dev/fd/N, /proc/thread-self/fd/N, /proc/<own pid>/fd/N — is decided like any other, as root
# and as an unprivileged user: a denied program fails with EACCES, the terminal line names the
# rule and the audit log has the denial. (Before, such a candidate looked like "not found" to
# the supervisor, which let the kernel go ahead: non-root ran the denied program unseen, root's
# eBPF backstop killed it.) And a name that resolves to nothing is failed by the supervisor
# itself (ENOENT), so execvp's PATH probing still works. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

MODES="fexecve procfd devfd threadfd pidfd"
PLAN=24
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/exectricks" "$U/exectricks"
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "$U/exectricks"
    - path: "/usr/bin/echo"
    - path: "/usr/bin/dash"
  deny:
    - path: "/usr/bin/id"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"

# as USER (root | nobody) RUN-ARGS…: run the supervisor; $rc, $OUT, $ERR, $AUD as sv's.
as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		sv "$@"
		AUD=$AUDIT
	else
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
			XDG_STATE_HOME="$U/state" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
			"$@") </dev/null >"$OUT" 2>"$ERR"
		rc=$?
		AUD=$U/state/cloister/audit.log
	fi
}
aud_count() { if [ -f "$AUD" ]; then grep -cE -- "$1" "$AUD"; else echo 0; fi; }

for who in root nobody; do
	for mode in $MODES; do
		rm -f "$AUDIT" "$U/state/cloister/audit.log"
		as "$who" --ask none -- "$U/exectricks" "$mode" /usr/bin/id
		tap_like "$rc $(cat "$ERR")" '^126 .*cloister: exec /usr/bin/id denied: exec\.deny\[0\]' \
			"$who, $mode of a denied program: EACCES, and the rule on the terminal" "$(diag)"
		tap_is "$(aud_count '"exe":"/usr/bin/id".*"verdict":"deny".*"rule":"exec\.deny\[0\]')" 1 \
			"$who, $mode: the denial is in the audit log"
	done
	as "$who" --ask none -- "$U/exectricks" devfd /usr/bin/echo "ran through /dev/fd"
	tap_is "$rc:$(cat "$OUT")" "0:ran through /dev/fd" \
		"$who: an allowed program named by /dev/fd/N runs" "$(diag)"
	# The shell looks for the command in every PATH entry; nothing there: 127, no line of ours.
	as "$who" --ask none -- sh -c 'PATH=/nonexistent:/usr/bin cloister-no-such-tool; echo "status $?"'
	tap_is "$(cat "$OUT"):$(grep -c 'cloister:' "$ERR")" "status 127:0" \
		"$who: PATH probing of a missing command: not found, silently" "$(diag)"
done

tap_done
