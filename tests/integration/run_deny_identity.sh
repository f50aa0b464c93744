#!/bin/sh
# `path:` deny rules hold for the file, not only its name: a hard link of a denied program, in a
# directory an allow rule covers, is denied by that deny rule (as root, and as a user who owns
# the program); after the denied file is replaced by a new one (a package upgrade: a new inode
# renamed over it) a hard link of the new file is denied too, and so still is one of the old
# file. What is not covered: a copy is a new file, and only its name decides. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=14
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/bin" "$U/work"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/marker" "$U/bin/denied"
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
    - path: "$U/work/*/*"
  deny:
    - path: "$U/bin/den*"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"

as_bg() { # USER RUN-ARGS…: start the supervisor in the background; $bg its pid
	who=$1
	shift
	if [ "$who" = root ]; then
		# From $U, so the agent's files stay visible in its private /tmp.
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$CFG" "$@") \
			</dev/null >"$OUT" 2>"$ERR" &
		AUD=$AUDIT
	else
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U" XDG_STATE_HOME="$U/state" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" "$@") </dev/null >"$OUT" 2>"$ERR" &
		AUD=$U/state/cloister/audit.log
	fi
	bg=$!
}
wait_file() { # FILE: bounded wait (10 s)
	i=0
	while [ ! -e "$1" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ -e "$1" ]
}
aud_count() { if [ -f "$AUD" ]; then grep -cE -- "$1" "$AUD"; else echo 0; fi; }

for who in root nobody; do
	W=$U/work/$who
	mkdir -p "$W"
	chown "$NOBODY:$NOBODY" "$W"
	cp "$HELPERS/marker" "$U/bin/denied"
	chown "$NOBODY:$NOBODY" "$U/bin/denied"
	rm -f "$AUDIT" "$U/state/cloister/audit.log"
	# The agent links the denied program into an allowed directory and runs it; then waits for
	# the file to be replaced (a package upgrade) and tries the new file and the old link.
	SV_TIMEOUT=40 as_bg "$who" --ask none -- sh -c "
		ln $U/bin/denied $W/old && $W/old $W/m-old; echo \"old \$?\"
		cp $U/bin/denied $W/copy && $W/copy $W/m-copy; echo \"copy \$?\"
		touch $W/ready
		while [ ! -e $W/replaced ]; do sleep 0.05; done
		ln $U/bin/denied $W/new && $W/new $W/m-new; echo \"new \$?\"
		$W/old $W/m-old2; echo \"old again \$?\""
	if wait_file "$W/ready"; then
		cp "$HELPERS/marker" "$U/bin/denied.tmp"
		chown "$NOBODY:$NOBODY" "$U/bin/denied.tmp"
		mv "$U/bin/denied.tmp" "$U/bin/denied"
	fi
	touch "$W/replaced"
	wait $bg
	rc=$?
	tap_is "$(grep '^old ' "$OUT" | head -n 1)$(test -e "$W/m-old" && echo ' RAN')" "old 126" \
		"$who: a hard link of a denied program in an allowed directory is denied" "$(diag)"
	tap_like "$(cat "$ERR")" "exec $W/old denied: exec\\.deny\\[0\\] path \"$U/bin/den\\*\"" \
		"$who: by the deny rule of the program it is" "$(diag)"
	tap_is "$(aud_count "\"exe\":\"$W/old\".*\"verdict\":\"deny\".*under another name \\(a hard link\\)")" 2 \
		"$who: the audit lines say it is the denied program under another name"
	tap_is "$(grep '^new ' "$OUT")$(test -e "$W/m-new" && echo ' RAN')" "new 126" \
		"$who: after the file was replaced, a hard link of the new one is denied too" "$(diag)"
	tap_is "$(grep '^old again ' "$OUT")$(test -e "$W/m-old2" && echo ' RAN')" "old again 126" \
		"$who: and a link to the replaced file still is" "$(diag)"
	tap_is "$(grep '^copy ' "$OUT")$(test -e "$W/m-copy" && echo ' RAN')" "copy 0 RAN" \
		"$who: not covered: a copy is a new file, allowed by its name (documented limit)" "$(diag)"
	tap_is "$rc" 0 "$who: the run ends normally" "$(diag)"
done

tap_done
