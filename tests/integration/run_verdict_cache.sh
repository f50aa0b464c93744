#!/bin/sh
# The allows the exec guard keeps for the same exec again (verdict_cache.h) rest on the file as
# it was read, not on its name: the same command run again is allowed again; a file replaced
# under the same name by a hard link of a denied program is decided again, and denied; a
# script rewritten in place (same inode, same size, a new ctime) to name a denied interpreter
# is denied. A kept allow's audit line names the file by its real name, not by the symlinked
# path it was run by. The same path, a symlink on it turned to a new hard link of the allowed
# file under a denied name, is decided again and denied (attack5_cache_names.sh: the same with a
# hard link made before the first run). As root and as a user. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=18
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/bin" "$U/work" "$U/home"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/marker" "$U/bin/denied"
cp "$HELPERS/marker" "$U/bin/okokok" # as long a name as the denied one
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
    - path: "$U/bin/okokok"
    - path: "$U/work/*/*"
  deny:
    - path: "$U/bin/den*"
    - path: "$U/work/*-deny/*"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"

for who in root nobody; do
	W=$U/work/$who
	mkdir -p "$W"
	cp "$HELPERS/marker" "$W/tool"
	cp "$HELPERS/marker" "$W/tool2"
	cp "$HELPERS/marker" "$W/tool3"
	mkdir -p "$U/work/$who-deny"
	printf '#!%s\n' "$U/bin/okokok" >"$W/script"
	chmod 755 "$W/script"
	ln -s "$who" "$U/work/$who-link"
	chown -R "$NOBODY:$NOBODY" "$W"
	chown -h "$NOBODY:$NOBODY" "$U/work/$who-link"
	chown "$NOBODY:$NOBODY" "$U/work/$who-deny"
	ln -s "$who" "$U/work/$who-to"
	chown -h "$NOBODY:$NOBODY" "$U/work/$who-to"
	G=$U/work/$who-to/tool3
	L=$U/work/$who-link/tool2
	# Each exec twice before the change, with the same arguments (they are in the key): the
	# second is the kept allow. Whether the image ran is the marker M it creates.
	SV_TIMEOUT=40 sv_as "$who" --ask none -- sh -c "
		$W/tool $W/m && rm $W/m && $W/tool $W/m && rm $W/m; echo \"tool \$?\"
		rm $W/tool && ln $U/bin/denied $W/tool && $W/tool $W/m; echo \"replaced \$?\"
		test -e $W/m && mv $W/m $W/m-replaced
		$W/script $W/m && rm $W/m && $W/script $W/m && rm $W/m; echo \"script \$?\"
		printf '#!%s\n' $U/bin/denied >$W/script && $W/script $W/m; echo \"rewritten \$?\"
		test -e $W/m && mv $W/m $W/m-rewritten
		$W/script $W/m; echo \"again \$?\"
		$L $W/linked && rm $W/linked && $L $W/linked; echo \"linked \$?\"
		$G $W/g && rm $W/g && $G $W/g && rm $W/g; echo \"given \$?\"
		ln $W/tool3 $U/work/$who-deny/tool3 && ln -sfn $who-deny $U/work/$who-to &&
			$G $W/g; echo \"relinked \$?\""
	tap_is "$(grep '^tool ' "$OUT")" "tool 0" "$who: an allowed program runs, and again" "$(diag)"
	tap_is "$(grep '^replaced ' "$OUT")$(test -e "$W/m-replaced" && echo ' RAN')" "replaced 126" \
		"$who: replaced under its name by a hard link of a denied program, it is denied" "$(diag)"
	tap_like "$(cat "$ERR")" "exec $W/tool denied: exec\\.deny\\[0\\] path \"$U/bin/den\\*\"" \
		"$who: by the deny rule of the program it now is" "$(diag)"
	tap_is "$(grep '^script ' "$OUT")" "script 0" \
		"$who: a script with an allowed interpreter runs, and again" "$(diag)"
	tap_is "$(grep '^rewritten ' "$OUT")$(test -e "$W/m-rewritten" && echo ' RAN')" "rewritten 126" \
		"$who: rewritten in place to name a denied interpreter, it is denied" "$(diag)"
	tap_is "$(grep '^again ' "$OUT")$(test -e "$W/m" && echo ' RAN')" "again 126" \
		"$who: and again (a denial is never kept as an allow)" "$(diag)"
	tap_is "$(grep '^given ' "$OUT")" "given 0" "$who: a program run by a symlinked path runs, and again" "$(diag)"
	tap_is "$(grep '^relinked ' "$OUT")$(test -e "$W/g" && echo ' RAN')" "relinked 126" \
		"$who: the same path, its symlink turned to a new hard link under a denied name: decided again, denied" \
		"$(diag)"
	log=$AUDIT
	[ "$who" = root ] || log=$U/state/cloister/audit.log
	named=$(grep -F "$W/linked" "$log" 2>/dev/null | grep -cF "\"exe\":\"$W/tool2\"")
	tap_is "$(grep '^linked ' "$OUT") $named" "linked 0 2" \
		"$who: run by a symlinked path twice (the second a kept allow), both audit lines name the file by its real name" \
		"$(diag; grep -F "$W/linked" "$log" 2>/dev/null)"
done

tap_done
