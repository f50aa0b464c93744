#!/bin/sh
# `cloister-supervisor run --allow-nested-sandbox`: an agent that makes a user and mount
# namespace of its own cannot change what an allowed name runs. It binds a program no rule
# allows over /usr/bin/cat (allowed by /usr/bin/*), puts a tmpfs over /usr/bin with its own
# "cat" in it, or carries an fd of such a mount back into the sandbox's namespace and
# fexecve()s it: each exec is refused with EACCES, the terminal line and the audit line say
# that the file is another file in the process's mount namespace, and the program never runs
# (its marker never appears). As root and as an unprivileged user. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=21
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare mount
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/m" "$U/tb"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/exectricks" "$U/exectricks"
cp "$HELPERS/marker" "$U/evil"          # no rule allows it
cp "$HELPERS/marker" "$U/tb/cat"        # the "cat" of a directory bound over /usr/bin
cp /usr/bin/busybox "$U/busybox" 2>/dev/null || cp /bin/busybox "$U/busybox"
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
    - path: "$U/exectricks"
    - path: "$U/busybox"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"
chmod 777 "$U/m"

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
other='/usr/bin/cat is another file in this process.s mount namespace'

for who in root nobody; do
	M=$U/m/$who
	rm -rf "$M" "$AUDIT" "$U/state/cloister/audit.log"
	mkdir -p "$M"
	chmod 777 "$M"

	# ---- a program bound over an allowed name ----
	as "$who" --ask none --allow-nested-sandbox -- unshare -Urm sh -c \
		"mount --bind $U/evil /usr/bin/cat || exit 99; /usr/bin/cat $M/bound; echo \"status \$?\""
	tap_is "$(cat "$OUT")$(test -e "$M/bound" && echo ' RAN')" "status 126" \
		"$who: a program bound over /usr/bin/cat in a namespace of its own: EACCES, never runs" "$(diag)"
	tap_like "$(cat "$ERR")" "cloister: exec /usr/bin/cat denied: $other" \
		"$who: the terminal line says it is another file in that mount namespace" "$(diag)"
	tap_is "$(aud_count "\"exe\":\"/usr/bin/cat\".*\"verdict\":\"deny\".*\"rule\":\"$other\"")" 1 \
		"$who: and so does the audit line"

	# ---- a tmpfs over /usr/bin: its own cat, and a name only it has ----
	rm -f "$AUDIT" "$U/state/cloister/audit.log"
	as "$who" --ask none --allow-nested-sandbox -- unshare -Urm sh -c \
		"mount -t tmpfs none /usr/bin || exit 99
		$U/busybox cp $U/evil /usr/bin/cat; $U/busybox cp $U/evil /usr/bin/onlyhere
		/usr/bin/cat $M/tmpfs; echo \"cat \$?\"; /usr/bin/onlyhere $M/only; echo \"onlyhere \$?\""
	tap_is "$(cat "$OUT")$(test -e "$M/tmpfs" && echo ' RAN')$(test -e "$M/only" && echo ' RAN')" \
		"cat 126
onlyhere 126" "$who: a tmpfs over /usr/bin: its cat and its own names are refused, never run" "$(diag)"
	tap_like "$(cat "$ERR")" "exec /usr/bin/cat denied: $other" \
		"$who: tmpfs: the cat on it is another file" "$(diag)"
	tap_like "$(cat "$ERR")" "exec /usr/bin/onlyhere denied: /usr/bin/onlyhere exists only in this process.s mount namespace" \
		"$who: tmpfs: a name the sandbox does not have exists only there" "$(diag)"
	tap_is "$(aud_count '"verdict":"deny".*"rule":"/usr/bin/(cat|onlyhere) ')" 2 \
		"$who: tmpfs: both refusals are in the audit log"

	# ---- a directory bound over /usr/bin ----
	as "$who" --ask none --allow-nested-sandbox -- unshare -Urm sh -c \
		"mount --bind $U/tb /usr/bin || exit 99; /usr/bin/cat $M/dir; echo \"status \$?\""
	tap_is "$(cat "$OUT")$(test -e "$M/dir" && echo ' RAN')" "status 126" \
		"$who: a directory bound over /usr/bin: its cat is refused" "$(diag)"

	# ---- an fd of such a mount carried back into the sandbox's own namespace ----
	rm -f "$AUDIT" "$U/state/cloister/audit.log"
	as "$who" --ask none --allow-nested-sandbox -- "$U/exectricks" nsfd "$U/evil" /usr/bin/cat "$M/fd"
	tap_is "$rc$(test -e "$M/fd" && echo ' RAN')" 126 \
		"$who: fexecve of an fd opened in another mount namespace: EACCES, never runs" "$(diag)"
	tap_is "$(aud_count "\"exe\":\"/usr/bin/cat\".*\"verdict\":\"deny\".*\"rule\":\"$other\"")" 1 \
		"$who: fd carried back: the audit line says why"
done

# The same file under its own name in another namespace is not refused: a read-only bind of
# /usr (what bubblewrap does) runs what the sandbox runs. Every mount of the sandbox but /dev
# is nodev, which a user namespace locks: the remount keeps it, as bubblewrap's does.
as nobody --ask none --allow-nested-sandbox -- unshare -Urm sh -c \
	'mount --bind -o ro,nodev /usr /usr && /usr/bin/echo same-file'
tap_is "$rc:$(cat "$OUT")" "0:same-file" \
	"nobody: a program reached through a bind of /usr in another namespace is the same file: it runs" "$(diag)"

tap_done
