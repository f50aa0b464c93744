#!/bin/sh
# The exec backstop for every run: races that swap what an approved exec runs fail as an
# unprivileged user (ptrace backstop) as they do as root (eBPF backstop):
#   - a thread flips the exec path between an allowed and a denied program (exec_race);
#   - a file appears between the check and the exec (exec_appear);
#   - the file is swapped while a person looks at the card, then approved from the CLI.
# Without any backstop `run` refuses to start (here: something else already traces the agent),
# unless --no-backstop; with the ptrace backstop, a debugger inside the sandbox fails cleanly.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=20
run_needs_root $PLAN
run_needs_tools $PLAN setpriv strace
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/app"
for f in exec_race exec_appear marker; do cp "$HELPERS/$f" "$U/$f"; done
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/marker" "$U/denied"
cp "$HELPERS/marker" "$U/evil" # unlisted: denied by ask: off
cat >"$U/cfg/config.yaml" <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "$U/exec_race"
    - path: "$U/exec_appear"
    - path: "/usr/bin/*"
  deny:
    - path: "$U/denied"
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
# For the card: anything unlisted is asked about.
mkdir -p "$U/askcfg"
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
chmod 777 "$U/app"

as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		sv "$@"
		AUD=$AUDIT
	else
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
			XDG_STATE_HOME="$U/state" XDG_RUNTIME_DIR="$U/rt" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" "$@") \
			</dev/null >"$OUT" 2>"$ERR"
		rc=$?
		AUD=$U/state/cloister/audit.log
	fi
}
aud_count() { if [ -f "$AUD" ]; then grep -cE -- "$1" "$AUD"; else echo 0; fi; }
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\\([0-9a-z]*\\).*/\\1/p"; }
mkdir -p "$U/rt"
chown "$NOBODY:$NOBODY" "$U/rt"
chmod 700 "$U/rt"

for who in root nobody; do
	rm -f "$AUDIT" "$U/state/cloister/audit.log" "$U/mark"
	# ---- the path flips between an allowed and a denied program ----
	SV_TIMEOUT=30 as "$who" -v --ask none -- "$U/exec_race" 4 /usr/bin/true "$U/denied" "$U/mark"
	result=$(grep '^exec_race:' "$OUT")
	echo "# $who: $result; $(grep -m1 -o 'backstop: [^;]*' "$ERR")"
	killed=$(field "$result" killed)
	tap_ok "$([ "$rc" -eq 0 ] && [ ! -e "$U/mark" ] && [ "$(field "$result" tries)" -gt 0 ] && echo 0 || echo 1)" \
		"$who: path swap: in 4 s of racing the denied program never ran" "$(diag)"
	tap_ok "$([ "${killed:-0}" -gt 0 ] && [ "$(aud_count '"decided_by":"backstop"')" -eq "$killed" ] && echo 0 || echo 1)" \
		"$who: path swap: the race was won ${killed:-0} times and each time the backstop killed it (audit log)" \
		"$result; backstop lines: $(aud_count '"decided_by":"backstop"')"

	# ---- a file appears between the check and the exec ----
	rm -f "$U/mark"
	SV_TIMEOUT=30 as "$who" --ask none -- "$U/exec_appear" 3 "$U/app/x-$who" "$U/evil" "$U/mark"
	result=$(grep '^exec_appear:' "$OUT")
	echo "# $who: $result"
	tap_ok "$([ "$rc" -eq 0 ] && [ ! -e "$U/mark" ] && [ "$(field "$result" tries)" -gt 0 ] && echo 0 || echo 1)" \
		"$who: appearing file: in 3 s of racing it never ran" "$(diag)"
	tap_is "$(field "$result" ran)" 0 "$who: appearing file: no exec of it succeeded" "$result"
done

# ---- swapped while a person looks at the card, then approved from the CLI ----
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
	# The person looks at "prog"; the agent's side puts another file under that name.
	cp "$HELPERS/marker" "$P/prog.new" && chmod 755 "$P/prog.new" && mv "$P/prog.new" "$P/prog"
	cli_as "$who" approve "$id"
	approved=$st
	i=0
	while [ ! -s "$P/out" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	wait $bg
	if [ "$who" = root ]; then AUD=$AUDIT; else AUD=$U/state/cloister/audit.log; fi
	# The file renamed over lost its name (a new ctime): the approval sees it and refuses
	# (EACCES, 126) before the backstop would have to kill what ran (137).
	tap_is "$approved:$(cat "$P/out" 2>&1)$(test -e "$P/mark" && echo ' RAN')" "0:status 126" \
		"$who: swapped during the ask: what was approved is not what would run, so it is refused" "$(diag)"
	tap_is "$(aud_count 'changed while its card waited')" 1 "$who: swapped during the ask: the refusal is in the audit log"
done

# ---- no backstop: refuse to start, unless --no-backstop ----
# strace already traces the agent, so the ptrace backstop cannot. (A sanitized supervisor's
# LeakSanitizer cannot run traced: off for this one.)
nobody_traced() {
	(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		env HOME="$U" XDG_STATE_HOME="$U/state" XDG_RUNTIME_DIR="$U/rt" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=none -o /dev/null \
		"$U/cloister-supervisor" run --config-dir "$U/cfg" --ask none "$@" -- /usr/bin/true) \
		</dev/null >"$OUT" 2>"$ERR"
	rc=$?
}
nobody_traced
tap_like "$rc $(cat "$ERR")" '^125 .*no exec backstop.*refusing to start; --no-backstop' \
	"nobody, no backstop to be had: run refuses to start and names --no-backstop" "$(diag)"
nobody_traced --no-backstop
tap_is "$rc" 0 "nobody, no backstop, --no-backstop: run starts" "$(diag)"
tap_like "$(cat "$ERR")" 'warning: --no-backstop: no exec backstop' "and warns" "$(diag)"

# ---- a debugger inside the sandbox ----
as nobody --ask none -- sh -c 'strace -o /dev/null /usr/bin/true; echo "status $?"'
tap_like "$(cat "$OUT") $(cat "$ERR")" '^status [1-9].*(Operation not permitted|ptrace)' \
	"nobody, ptrace backstop: strace inside fails cleanly (its processes are traced already)" "$(diag)"
as nobody --ask none --no-backstop -- sh -c 'strace -o /dev/null /usr/bin/true; echo "status $?"'
tap_is "$(cat "$OUT")" "status 0" "nobody, --no-backstop: strace inside works" "$(diag)"
as root --ask none -- sh -c 'strace -o /dev/null /usr/bin/true; echo "status $?"'
if grep -q 'backstop: off' "$ERR"; then
	tap_skip "root strace" "no eBPF backstop here"
else
	tap_is "$(cat "$OUT")" "status 0" "root, eBPF backstop: strace inside works" "$(diag)"
fi

tap_done
