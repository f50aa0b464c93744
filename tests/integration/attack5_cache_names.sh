#!/bin/sh
# A kept allow (verdict_cache.h) is keyed by the given path and the file's identity, not by the
# name the path resolves to. The agent makes, before anything runs, a second hard link of an
# allowed program in a directory no rule allows (so no deny rule's identity set knows it), runs
# the program twice by a path through a symlink of its own (the second run is the kept allow),
# turns the symlink to the other directory and runs the same path again: the same given path,
# the same inode, unchanged ctime. A fresh decision denies it (the name is outside the
# allowlist: the direct exec of that name is denied); the kept allow lets it run, and its audit
# line says "allow" for a name no rule allows. The same content could be run under the allowed
# name, so what the hole gives is the name: /proc/self/exe, $ORIGIN, a program's files found
# next to itself, and an audit log that contradicts the config. As root and as a user.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/ok" "$U/other" "$U/home"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
    - path: "$U/ok/*/*"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"

for who in root nobody; do
	W=$U/ok/$who
	O=$U/other/$who
	mkdir -p "$W" "$O"
	cp "$HELPERS/marker" "$W/tool"
	ln "$W/tool" "$O/tool"
	ln -s "ok/$who" "$U/cur-$who"
	chown -R "$NOBODY:$NOBODY" "$W" "$O"
	chown -h "$NOBODY:$NOBODY" "$U/cur-$who"
	P=$U/cur-$who/tool
	M=$U/home/m-$who
	SV_TIMEOUT=40 sv_as "$who" --ask none -- sh -c "
		$O/tool $M; echo \"direct \$?\"
		test -e $M && mv $M $M-direct
		$P $M && rm $M && $P $M && rm $M; echo \"allowed \$?\"
		ln -sfn other/$who $U/cur-$who && $P $M; echo \"swapped \$?\""
	tap_is "$(grep '^direct ' "$OUT")$(test -e "$M-direct" && echo ' RAN')" "direct 126" \
		"$who: the second name of the allowed program, run by that name, is denied" "$(diag)"
	tap_is "$(grep '^allowed ' "$OUT")" "allowed 0" \
		"$who: the allowed program run by a symlinked path runs, and again (a kept allow)" "$(diag)"
	tap_is "$(grep '^swapped ' "$OUT")$(test -e "$M" && echo ' RAN')" "swapped 126" \
		"$who: the same path, its symlink turned to the second name: decided again, denied" \
		"$(diag)"
	log=$AUDIT
	[ "$who" = root ] || log=$U/state/cloister/audit.log
	tap_is "$(grep -F "\"exe\":\"$O/tool\"" "$log" 2>/dev/null | grep -c '"verdict":"allow"')" 0 \
		"$who: no audit line says the name no rule allows was allowed" \
		"$(grep -F "\"exe\":\"$O/tool\"" "$log" 2>/dev/null)"
	rm -f "$M"
done

tap_done
