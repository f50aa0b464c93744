#!/bin/sh
# Attack: make the supervisor approve one exec and the kernel run another. The exec backstop
# (eBPF as root, ptrace otherwise) checks only which file runs, by device and inode, against
# every file approved so far in the sandbox; so whatever an approval says beyond that does not
# hold, as root and as an unprivileged user:
#   - arguments: a thread rewrites an argument between the supervisor's read and the kernel's
#     copy (argv_race). A program allowed only as `marker .../ok` runs as `marker .../ev`
#     (and the audit log says `marker .../ok` was allowed);
#   - the same against a deny rule on the command: `marker .../ev` is denied by a command
#     rule, the program itself allowed by path: it runs as `marker .../ev`;
#   - the file's content: while a person looks at a card for an unlisted program, the agent
#     rewrites the file in place (same inode) and the person approves: what runs would be the
#     new content, which nobody saw. (A file renamed over it is killed: run_backstop_user.sh.)
#   - that very rename, laundered: after renaming another program over the name, the agent
#     execs the same command line again; were identical asks merged into the card (same name,
#     arguments, directory) whatever file each waiter saw, the person's one approval would
#     approve the new file too, and the first exec would run it instead of being killed.
# What must hold is that an approval covers the exec it was given for, with its arguments and
# the file's content as checked. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=20
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/dcfg" "$U/askcfg" "$U/rt" "$U/w"
for f in argv_race marker; do cp "$HELPERS/$f" "$U/$f"; done
cp "$SUPERVISOR" "$U/cloister-supervisor"
# marker runs only as `marker $U/w/ok`.
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "$U/argv_race"
    - path: "$U/marker"
      command: "^marker $U/w/ok\$"
  defaults: false
EOF
# marker runs with anything but a last argument ending in /ev.
cat >"$U/dcfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "$U/argv_race"
    - path: "$U/marker"
  deny:
    - command: "^marker .*/ev\$"
  defaults: false
EOF
cat >"$U/askcfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/*"
  defaults: false
EOF
chown -R "$NOBODY:$NOBODY" "$U"
chmod 700 "$U/rt"
# Root's API files of its own: the CLI must find this test's supervisors, no one else's.
XDG_RUNTIME_DIR=$TMP/xdg
export XDG_RUNTIME_DIR
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
chmod 777 "$U/w"

# as USER RUN-ARGS…: the supervisor as root or as nobody; $rc, $OUT, $ERR as sv's, $AUD.
as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		(cd "$TMP" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run "$@") \
			</dev/null >"$OUT" 2>"$ERR"
		rc=$?
		AUD=$AUDIT
	else
		(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY \
			--regid=$NOBODY --clear-groups env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
			XDG_STATE_HOME="$U/state" XDG_RUNTIME_DIR="$U/rt" \
			"$U/cloister-supervisor" run "$@") </dev/null >"$OUT" 2>"$ERR"
		rc=$?
		AUD=$U/state/cloister/audit.log
	fi
}
aud_count() { if [ -f "$AUD" ]; then grep -cE -- "$1" "$AUD"; else echo 0; fi; }
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\\([0-9a-z]*\\).*/\\1/p"; }

for who in root nobody; do
	rm -f "$AUDIT" "$U/state/cloister/audit.log" "$U/w/ok" "$U/w/ev"
	SV_TIMEOUT=40 as "$who" --config-dir "$U/cfg" --ask none -- \
		"$U/argv_race" 10 "$U/marker" "$U/w/ok" "$U/w/ev"
	result=$(grep '^argv_race:' "$OUT")
	echo "# $who: $result"
	tap_is "$(field "$result" tries | grep -c '^[1-9]')" 1 \
		"$who: the argument race ran (marker allowed with .../ok only)" "$(diag)"
	tap_ok "$([ ! -e "$U/w/ev" ] && echo 0 || echo 1)" \
		"$who: in 10 s of racing, marker never ran with an argument nobody allowed" \
		"$result: $U/w/ev was created by marker $U/w/ev"

	rm -f "$AUDIT" "$U/state/cloister/audit.log" "$U/w/ok" "$U/w/ev"
	SV_TIMEOUT=40 as "$who" --config-dir "$U/dcfg" --ask none -- \
		"$U/argv_race" 10 "$U/marker" "$U/w/ok" "$U/w/ev"
	result=$(grep '^argv_race:' "$OUT")
	echo "# $who, deny rule: $result"
	tap_ok "$([ ! -e "$U/w/ev" ] && echo 0 || echo 1)" \
		"$who: a command deny rule holds against the argument race" \
		"$result: marker ran as \`marker $U/w/ev\`, which exec.deny[0] denies"
done

# ---- the file is rewritten in place while a person looks at the card ------------------------
for who in root nobody; do
	P=$U/card-$who
	mkdir -p "$P"
	cp /usr/bin/true "$P/prog" # unlisted: asks
	chown -R "$NOBODY:$NOBODY" "$P"
	rm -f "$AUDIT" "$U/state/cloister/audit.log"
	web="--config-dir $U/askcfg --ask web --ask-timeout 30s --listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0"
	# shellcheck disable=SC2086 # $web is a list of options
	SV_TIMEOUT=40 as "$who" $web -- sh -c "$P/prog $P/mark; echo \"status \$?\" >$P/out" &
	bg=$!
	pending_as "$who" "prog $P/mark"
	tap_like "$id" '^[0-9a-f]{12}$' "$who: the exec of an unlisted program waits for a person" "$out"
	# The person looks at "prog" (true); the agent's side writes marker into the same inode.
	ino_before=$(stat -c %i "$P/prog")
	cat "$HELPERS/marker" >"$P/prog"
	ino_after=$(stat -c %i "$P/prog")
	cli_as "$who" approve "$id"
	approved=$st
	i=0
	while [ ! -s "$P/out" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	wait $bg
	tap_is "$approved:$ino_after" "0:$ino_before" \
		"$who: approved from the CLI; the file was rewritten in place (same inode)" "$out"
	tap_ok "$([ ! -e "$P/mark" ] && echo 0 || echo 1)" \
		"$who: the content nobody saw does not run" \
		"status: $(cat "$P/out" 2>&1); the rewritten program created $P/mark"
	# Seen at the approval already: refused (EACCES: 126) with the reason, not left to the kill.
	# (as ran in the background: its audit log is set here.)
	if [ "$who" = root ]; then AUD=$AUDIT; else AUD=$U/state/cloister/audit.log; fi
	tap_is "$(cat "$P/out" 2>&1):$(aud_count 'changed while its card waited')" "status 126:1" \
		"$who: refused at the approval, and the audit log says the file changed" "$(diag)"
done

# ---- the same rename, laundered through a merged ask -------------------------------------------
# api USER PATH: GET PATH of the approval API of USER's supervisor (its API file: URL, token).
api() {
	if [ "$1" = root ]; then dir=$XDG_RUNTIME_DIR; else dir=$U/rt; fi
	f=
	for g in "$dir"/cloister/api/*.json; do [ -f "$g" ] && f=$g; done
	[ -n "$f" ] || return 1
	url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$f")
	token=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$f")
	curl -s -m 5 -H "Authorization: Bearer $token" "$url$2"
}
cards_two() { [ "$(api "$1" /pending | grep -o '"kind":"exec"' | wc -l)" -eq 2 ]; }
for who in root nobody; do
	P=$U/merge-$who
	mkdir -p "$P"
	cp /usr/bin/true "$P/prog" # unlisted: asks
	cat >"$P/agent.sh" <<EOF
$P/prog $P/mark &
while [ ! -e $P/swapped ]; do sleep 0.05; done
$P/prog $P/mark &
wait
echo done >$P/out
EOF
	chown -R "$NOBODY:$NOBODY" "$P"
	rm -f "$AUDIT" "$U/state/cloister/audit.log"
	web="--config-dir $U/askcfg --ask web --ask-timeout 30s --listen-approval 127.0.0.1:0 --listen-tokens 127.0.0.1:0 --listen-request 127.0.0.1:0"
	# shellcheck disable=SC2086 # $web is a list of options
	SV_TIMEOUT=40 as "$who" $web -- sh "$P/agent.sh" &
	bg=$!
	pending_as "$who" "prog $P/mark"
	tap_like "$id" '^[0-9a-f]{12}$' "$who, merged: the exec of an unlisted program waits" "$out"
	# The agent's side renames another program over the name, and asks the same again.
	cp "$HELPERS/marker" "$P/prog.new" && chmod 755 "$P/prog.new" && mv "$P/prog.new" "$P/prog"
	touch "$P/swapped"
	wait_until 10 cards_two "$who"
	tap_ok $? "$who, merged: the second exec, naming another file, is a card of its own" \
		"$(api "$who" /pending)"
	cli_as "$who" approve "$id"
	# The second card (the renamed file) is refused: the person never approved it.
	cli_as "$who" pending
	id2=$(printf '%s\n' "$out" | grep -F -- "prog $P/mark" | awk '{ print $1 }' | grep -v "$id" |
		head -n 1)
	[ -z "$id2" ] || cli_as "$who" deny "$id2"
	wait_until 10 test -s "$P/out"
	wait $bg
	tap_ok "$([ ! -e "$P/mark" ] && echo 0 || echo 1)" \
		"$who, merged: the program renamed over the card's file does not run" \
		"$(diag); $P/mark was created by the program renamed over $P/prog"
done

tap_done
