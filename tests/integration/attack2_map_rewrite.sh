#!/bin/sh
# Attack on a person's answer kept by a file's identity, as root and as an unprivileged user.
# An exec a person allowed is remembered by the file as it was read (device, inode, ctime, size:
# the session's answers, the verdict cache, the backstop), and a decision wider than once is
# pinned to its content's SHA-256, itself cached by that identity. A write through a shared
# writable mapping can change the content and leave the identity:
#   - on tmpfs (the sandbox's own /tmp) such a write never sets a ctime: allow `p.sh` for the
#     session, rewrite it through a mapping, run the other content on that answer;
#   - on a disk file system, a write to a page already dirty and mapped writable sets none:
#     keep a mapping open and dirty while `p.sh` is asked (the exec fails with ETXTBSY, the
#     answer is kept), write the other content through it, unmap, run it on that answer.
# What holds (file_digest.h): a digest is taken only after the file's dirty pages are written
# back (so the next write through a mapping faults and sets a ctime), and tmpfs files get none,
# so a person's answer on one is never wider than once. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=10
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/u
chmod 711 "$TMP"
mkdir -p "$U/cfg"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/mapwrite" "$U/mapwrite"
cat >"$U/cfg/config.yaml" <<EOF
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
    - path: "/usr/bin/chmod"
    - path: "/usr/bin/stat"
    - path: "/usr/bin/grep"
    - path: "$U/mapwrite"
EOF
chown -R "$NOBODY:$NOBODY" "$U"

# as WHO COMMAND…: COMMAND as root or as nobody, with the user's environment.
as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state-root" \
			XDG_RUNTIME_DIR="$U/rt-root" "$@"
	else
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME="$U" \
			XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state-nobody" \
			XDG_RUNTIME_DIR="$U/rt-nobody" "$@"
	fi
}
cli() {
	out=$(as "$who" timeout 20 "$U/cloister-supervisor" "$@" 2>&1)
	st=$?
}
wait_pending() { # TEXT: the id of the pending ask showing TEXT, in $id (10 s)
	id=
	i=0
	while [ -z "$id" ] && [ $i -lt 200 ]; do
		cli pending
		id=$(printf '%s\n' "$out" | grep -F -- "$1" | awk '{ print $1 }' | head -n 1)
		[ -n "$id" ] || sleep 0.05
		i=$((i + 1))
	done
}
step() { printf '%s\n' "$2" >"$W/cmd$1.tmp" && mv "$W/cmd$1.tmp" "$W/cmd$1"; }
done_within() { # N SECONDS: step N finished; its output in $res
	i=0
	while ! grep -q '^status' "$W/out$1" 2>/dev/null && [ $i -lt $(($2 * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	res=$(cat "$W/out$1" 2>/dev/null)
	grep -q '^status' "$W/out$1" 2>/dev/null
}

# The agent runs step files as they appear in $W (the test's side), one after the other.
# shellcheck disable=SC2016 # the agent's shell expands these
AGENT='n=1; while :; do while [ ! -e "$1/cmd$n" ]; do sleep 0.05; done
	sh "$1/cmd$n" >"$1/out$n" 2>&1; echo "status $?" >>"$1/out$n"; n=$((n + 1)); done'
# The program on the sandbox's /tmp (a tmpfs): "safe" at byte 12 becomes "evil" in place.
# shellcheck disable=SC2016
PROG='#!/bin/sh\nX=safe; : >"$1.$X"\n'

# ask_once_more ID-TEXT STEP: the step's exec is asked (not run on an earlier answer): deny it.
# $asked says whether it was.
ask_once_more() {
	asked=no
	i=0
	while [ $i -lt 200 ] && ! grep -q '^status' "$W/out$2" 2>/dev/null; do
		cli pending
		id=$(printf '%s\n' "$out" | grep -F -- "$1" | awk '{ print $1 }' | head -n 1)
		if [ -n "$id" ]; then
			asked=yes
			cli deny "$id"
		fi
		sleep 0.05
		i=$((i + 1))
	done
	done_within "$2" 10
}

for who in root nobody; do
	W=$U/w-$who
	mkdir -m 0700 "$W" "$U/rt-$who"
	[ "$who" = nobody ] && chown "$NOBODY:$NOBODY" "$W" "$U/rt-$who"
	(cd "$W" && as "$who" timeout -k 5 60 "$U/cloister-supervisor" run --config-dir "$U/cfg" \
		--ask web --ask-timeout 60s --name "a2m$who$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off -- sh -c "$AGENT" sh "$W") \
		</dev/null >"$OUT" 2>"$ERR" &
	SV=$!
	on_exit "kill $SV 2>/dev/null"

	# ---- tmpfs: no content to keep, so no answer wider than once ----
	P=/tmp/a2m$$.sh
	step 1 "printf '$PROG' >$P && chmod 755 $P && stat -f -c 'fs %T' $P && $P $W/m1; echo rc \$?"
	wait_pending "a2m$$.sh"
	cli approve "$id" --scope session
	tap_ok "$([ "$st" != 0 ] && printf '%s' "$out" | grep -q 'allow it once' && echo 0 || echo 1)" \
		"$who: a session answer on a tmpfs file is refused (its content cannot be kept)" "$out"
	cli approve "$id"
	done_within 1 20
	tap_ok "$([ -e "$W/m1.safe" ] && grep -q 'fs tmpfs' "$W/out1" && echo 0 || echo 1)" \
		"$who: allowed once, the program on tmpfs ran" "$res"
	step 2 "stat -c 'before %i %s %Z.%z' $P; $U/mapwrite $P 12 evil &&
		stat -c 'after %i %s %Z.%z' $P && $P $W/m1; echo rc \$?"
	ask_once_more "a2m$$.sh" 2
	tap_ok "$([ ! -e "$W/m1.evil" ] && [ $asked = yes ] && echo 0 || echo 1)" \
		"$who: tmpfs: rewritten through a mapping, it is asked again, not run" "$res"

	# ---- a disk file system: a dirty page kept mapped writable across the ask ----
	P=$W/p.sh
	step 3 "printf '$PROG' >$P && chmod 755 $P && stat -f -c 'fs %T' $P &&
		$U/mapwrite $P 12 safe $W/go evil >$W/mapped &
		while ! grep -q mapped $W/mapped 2>/dev/null; do sleep 0.05; done;
		stat -c 'before %i %s %Z.%z' $P; $P $W/m3; echo rc \$?"
	wait_pending "p.sh $W/m3"
	cli approve "$id" --scope session
	tap_is "$st" 0 "$who: the person allows $P for the session (its content kept)" "$out"
	done_within 3 20
	: >"$W/go"
	step 4 "wait; while ! grep -q X=evil $P; do sleep 0.05; done;
		stat -c 'after %i %s %Z.%z' $P; $P $W/m3; echo rc \$?"
	ask_once_more "p.sh $W/m3" 4
	tap_ok "$([ ! -e "$W/m3.evil" ] && [ $asked = yes ] && echo 0 || echo 1)" \
		"$who: disk: rewritten through the mapping, it is asked again, not run" "$(cat "$W/out3"; echo "$res")"

	kill "$SV" 2>/dev/null
	wait "$SV" 2>/dev/null
done
tap_done
