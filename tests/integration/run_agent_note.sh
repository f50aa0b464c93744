#!/bin/sh
# "The agent learns why": a refused exec leaves one line on the refused process's own stderr —
# "cloister: exec of PATH refused: RULE — ask the user to allow it" — as root and as an
# unprivileged user: for a deny rule, for an ask nobody answered; into a file, a pipe, the
# sandbox's own terminal; never with --quiet-to-agent, never into a terminal the supervisor does
# not own; with the path's control characters escaped; and hostile fd 2s do not stall or kill
# the supervisor: a full pipe nobody reads, a pipe with no reader (SIGPIPE), a closed fd 2.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=22
run_needs_root $PLAN
run_needs_tools $PLAN setpriv python3 script
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/askcfg" "$U/rt"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/marker" "$U/denied"
esc=$(printf 'ev\033[2Jil')
cp "$HELPERS/marker" "$U/$esc" # unlisted: denied by ask: off
cat >"$U/cfg/config.yaml" <<YAML
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
  deny:
    - path: "$U/denied"
YAML
cat >"$U/askcfg/config.yaml" <<YAML
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/*"
YAML
cat >"$U/agent.py" <<'PY'
import fcntl, os, subprocess, sys

def run(stderr):
    try:
        subprocess.run([sys.argv[2]], stderr=stderr)
        return "ran"
    except PermissionError:
        return "EACCES"

case = sys.argv[1]
if case == "full":
    # A pipe filled to the brim that nobody reads, handed over blocking as a victim's would be.
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, 0)
    print("full:", run(w), "flags", fcntl.fcntl(w, fcntl.F_GETFL) & os.O_NONBLOCK)
elif case == "noreader":
    r, w = os.pipe()
    os.close(r)
    print("noreader:", run(w))
elif case == "pipe":
    r, w = os.pipe()
    res = run(w)
    os.close(w)
    print("pipe:", res, os.read(r, 4096).decode(errors="replace"), end="")
elif case == "tty":
    # A terminal of the agent's own making: not the supervisor's to write to.
    m, s = os.openpty()
    run(s)
    os.set_blocking(m, False)
    try:
        got = os.read(m, 4096)
    except BlockingIOError:
        got = b""
    print("foreign tty:", len(got))
PY
chown -R "$NOBODY:$NOBODY" "$U"
chmod 700 "$U/rt"

as_user="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME=$U XDG_CONFIG_HOME=$U/.config XDG_STATE_HOME=$U/state XDG_RUNTIME_DIR=$U/rt"
as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		(cd "${WT:-$TMP}" && exec timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run "$@") \
			</dev/null >"$OUT" 2>"$ERR"
		rc=$?
	else
		# shellcheck disable=SC2086 # as_user is words
		(cd "${WT:-$U}" && timeout -k 5 "$SV_TIMEOUT" $as_user \
			"$U/cloister-supervisor" run "$@") </dev/null >"$OUT" 2>"$ERR"
		rc=$?
	fi
}
line_re="^cloister: exec of $U/denied refused: exec\\.deny\\[0\\] path \"$U/denied\" \\(.*config\\.yaml:8\\) — ask the user to allow it\$"

for who in root nobody; do
	# ---- into a file, and not with --quiet-to-agent ----
	as "$who" --config-dir "$U/cfg" --ask none -- sh -c "'$U/denied' 2>/tmp/e; echo status \$?; cat /tmp/e"
	tap_like "$(grep -v '^status' "$OUT")" "$line_re" \
		"$who: a denied exec: the rule and what to do are on the refused process's stderr" "$(diag)"
	tap_like "$(head -n 1 "$OUT")" "^status 126" "$who: ... and the exec still fails (126)" "$(diag)"
	as "$who" --config-dir "$U/cfg" --ask none --quiet-to-agent -- \
		sh -c "'$U/denied' 2>/tmp/e; echo status \$?; grep -c ^cloister: /tmp/e"
	tap_is "$(cat "$OUT")" "status 126
0" "$who: --quiet-to-agent: the exec fails with no line" "$(diag)"

	# ---- into a pipe ----
	as "$who" --config-dir "$U/cfg" --ask none -- python3 "$U/agent.py" pipe "$U/denied"
	tap_like "$(cat "$OUT")" "^pipe: EACCES cloister: exec of $U/denied refused: " \
		"$who: into a pipe: the reader gets the line" "$(diag)"

	# ---- control characters in the path are shown, not obeyed ----
	as "$who" --config-dir "$U/cfg" --ask none -- sh -c "'$U/$esc' 2>/tmp/e; cat /tmp/e"
	tap_like "$(cat "$OUT")" "^cloister: exec of $U/ev\\\\x1b\\[2Jil refused: exec\\.ask=off" \
		"$who: an escape sequence in the path arrives as \\x1b" "$(diag)"

	# ---- an ask nobody can answer, an ask nobody answered in time ----
	as "$who" --config-dir "$U/askcfg" --ask none -- \
		sh -c "'$U/denied' 2>/tmp/e; echo status \$?; cat /tmp/e"
	tap_like "$(grep -v '^status' "$OUT")" \
		"^cloister: exec of $U/denied refused: nobody can answer: ask_fallback=deny — ask the user to allow it\$" \
		"$who: an ask nobody can answer says so" "$(diag)"
	as "$who" --config-dir "$U/askcfg" --ask web --ask-timeout 1s --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off -- \
		sh -c "'$U/denied' 2>/tmp/e; echo status \$?; cat /tmp/e"
	tap_like "$(grep -v '^status' "$OUT")" \
		"^cloister: exec of $U/denied refused: No approval within 1s — ask the user to allow it\$" \
		"$who: an ask that timed out says so" "$(diag)"

	# ---- hostile fd 2s ----
	as "$who" --config-dir "$U/cfg" --ask none -- sh -c \
		"python3 '$U/agent.py' full '$U/denied'; '$U/denied' 2>&-; echo closed \$?; python3 '$U/agent.py' noreader '$U/denied'; echo alive"
	tap_like "$(cat "$OUT")" "^full: EACCES flags 0
closed 126
noreader: EACCES
alive\$" "$who: a full pipe, a closed fd 2, a pipe with no reader: refused as usual, the agent's flags untouched" "$(diag)"
	tap_is "$rc" 0 "$who: ... and the supervisor neither stalled nor died of SIGPIPE" "$(diag)"

	# ---- terminals: the sandbox's own (a person's) gets it, one of the agent's does not ----
	pre=""
	[ "$who" = root ] || pre=$as_user
	(cd "$U" && timeout -k 5 20 script -qec \
		"$pre $U/cloister-supervisor run --config-dir $U/cfg --ask none -- sh -c '$U/denied; echo status \$?'" \
		/dev/null) </dev/null >"$OUT" 2>"$ERR"
	rc=$?
	tap_like "$(tr -d '\r' <"$OUT")" "cloister: exec of $U/denied refused: exec\\.deny\\[0\\]" \
		"$who: on the sandbox's own terminal, the person sees it too" "$(diag)"
	as "$who" --config-dir "$U/cfg" --ask none -- python3 "$U/agent.py" tty "$U/denied"
	tap_is "$(cat "$OUT")" "foreign tty: 0" "$who: a terminal the supervisor does not own gets nothing" "$(diag)"

done
tap_done
