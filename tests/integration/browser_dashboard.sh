#!/bin/sh
# The dashboard in headless Chromium (tests/browser/dashboard.mjs, playwright-core from npm,
# Debian's /usr/bin/chromium) against `cloister-supervisor run --ask web`: a real exec ask
# approved and a second one denied from the page, domain buttons (synthetic requests served
# through page.route), the Running panel and its Cancel (synthetic /running, /cancel and
# /events, also through page.route), keyboard, filter, 360 px layout, the connection banner after the
# supervisor is killed; then an ask that times out and the sandbox's pause/resume/kill.
# Screenshots stay in $BUILD/test-artifacts/browser/. Prints TAP (the plan comes last: how
# many cases the browser part reports is its own business).
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/browser_common.sh
. "$(dirname "$0")/../lib/browser_common.sh"
rm -f "$ARTIFACTS"/*.png
WORK=$TMP/work
# In the agent's working directory: the rest of /tmp is private to the sandbox.
RES=$WORK/res
CTL=$TMP/control
PEERRES=$WORK/peer
mkdir -p "$RES" "$WORK/.git" "$CTL" "$PEERRES"
# The supervisors of this test find each other here only, not among other runs of the machine.
XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
# The agent works in a git checkout: its cards name the branch.
echo 'ref: refs/heads/browser-branch' >"$WORK/.git/HEAD"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 CHROMIUM

# Only the shell and sleep run freely: /usr/bin/printf asks.
write_config <<'EOF'
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sh"
    - path: "/bin/sh"
    - path: "/usr/bin/sleep"
    - path: "/bin/sleep"
  defaults: false
EOF

# The agents wait for the page to be connected (RES/go), so that their asks reach it live.
cat >"$TMP/agent-main.sh" <<EOF
i=0
while [ ! -e "$RES/go" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
/usr/bin/printf '%s\n' first '<b>x</b>' 'a b' '' >"$RES/first"
echo "first \$?" >>"$RES/status"
/usr/bin/printf '%s\n' second >"$RES/second"
echo "second \$?" >>"$RES/status"
i=0
while [ ! -e "$RES/go2" ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done
/usr/bin/printf '%s\n' third >"$RES/third"
echo "third \$?" >>"$RES/status"
/usr/bin/true fourth
echo "fourth \$?" >>"$RES/status"
/usr/bin/echo fifth >"$RES/fifth"
echo "fifth \$?" >>"$RES/status"
/usr/bin/printf sixth >"$RES/sixth"
echo "sixth \$?" >>"$RES/status"
sleep 120
EOF
# The second agent asks at once: the page is offline then, and must fetch the ask on Retry.
cat >"$TMP/agent-controls.sh" <<EOF
/usr/bin/printf resync
echo "resync \$?" >>"$RES/status"
sleep 120
EOF

# A second run of the same user: its asks show on the first one's page (the aggregated view),
# also after that supervisor is gone.
cat >"$TMP/agent-peer.sh" <<EOF
i=0
while [ ! -e "$PEERRES/go" ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done
/usr/bin/printf '%s\n' from-peer >"$PEERRES/out"
echo "peer \$?" >>"$PEERRES/status"
i=0
while [ ! -e "$PEERRES/go2" ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done
/usr/bin/printf '%s\n' peer-alone >"$PEERRES/out2"
echo "peer2 \$?" >>"$PEERRES/status"
sleep 120
EOF
(cd "$WORK" && exec "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 90s \
	--name browser-peer --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	-- sh "$TMP/agent-peer.sh" </dev/null >"$TMP/peer.out" 2>"$TMP/peer.err") &
PEERPID=$!
stop_peer() {
	kill -TERM "$PEERPID" 2>/dev/null
	i=0
	while kill -0 "$PEERPID" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$PEERPID" 2>/dev/null
}
on_exit stop_peer
i=0
while [ ! -s "$XDG_RUNTIME_DIR/cloister/api/$PEERPID.json" ] && kill -0 "$PEERPID" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
PEERURL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$XDG_RUNTIME_DIR/cloister/api/$PEERPID.json" 2>/dev/null)

SVPID=
# start_sv NAME ASK-TIMEOUT AGENT-SCRIPT ADDRESS [quiet]: the supervisor in the background,
# $url its dashboard; quiet: no TAP line of its own (the caller reports).
start_sv() {
	rm -f "$RES"/*
	audit_reset
	(cd "$WORK" && exec "$SUPERVISOR" run -v --config-dir "$CFG" --ask web --ask-timeout "$2" \
		--name "$1" --listen-approval "$4" --listen-tokens 127.0.0.1:0 \
		--listen-request 127.0.0.1:0 -- sh "$3" </dev/null >"$OUT" 2>"$ERR") &
	SVPID=$!
	url=
	i=0
	while [ $i -lt 100 ]; do
		url=$(sed -n 's|.*dashboard at \(http://127\.0\.0\.1:[0-9][0-9]*\)/.*|\1|p' "$ERR" | head -n 1)
		[ -n "$url" ] && break
		sv_gone && break
		sleep 0.1
		i=$((i + 1))
	done
	[ "${5:-}" = quiet ] && return 0
	tap_ok "$([ -n "$url" ] && echo 0 || echo 1)" \
		"run --ask web --listen-approval $4 ($1): says where the dashboard is" "$(diag)"
}
sv_gone() {
	st=$(awk '{ print $3 }' "/proc/$SVPID/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}
# sv_wait SECS: wait for the supervisor to end; $sv_rc is its status, or "running".
sv_wait() {
	i=0
	while [ $i -lt $(($1 * 10)) ] && ! sv_gone; do
		sleep 0.1
		i=$((i + 1))
	done
	if sv_gone; then
		wait "$SVPID"
		sv_rc=$?
	else
		sv_rc=running
	fi
}
sv_stop() {
	[ -n "$SVPID" ] || return 0
	sv_gone || kill -TERM "$SVPID" 2>/dev/null
	sv_wait 10
	[ "$sv_rc" = running ] && kill -KILL "$SVPID" 2>/dev/null && wait "$SVPID"
	SVPID=
}
on_exit 'sv_stop'

# ---- the browser part, with two supervisors one after the other on the same address ----
# The shell's own checks between them are printed after the browser's TAP lines, so that the
# numbering stays in order.
start_sv browser-main 60s "$TMP/agent-main.sh" 127.0.0.1:0
[ -n "$url" ] || {
	echo "1..$tap_n"
	exit 1
}
port=${url##*:}
# The login link (it sets the dashboard's session cookie), printed with -v.
login=$(sed -n 's|.*dashboard at \(http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]*\).*|\1|p' "$ERR" | head -n 1)
# CORS for the peer's page only: another origin of 127.0.0.1, even one a program of ours listens
# on, is refused.
tok=${login##*token=}
cors() { # ORIGIN METHOD PATH: the status and the Access-Control-Allow-Origin header
	curl -s -o /dev/null -D - -X "$2" -H "Origin: $1" -H "Authorization: Bearer $tok" \
		-H 'Sec-Fetch-Site: same-site' "$url$3" |
		tr -d '\r' | awk 'NR == 1 { s = $2 } tolower($1) == "access-control-allow-origin:" { o = $2 } END { print s " " o }'
}
tap_is "$(cors "$PEERURL" GET /pending)" "200 $PEERURL" "the peer's page may read /pending (CORS for its origin)"
tap_is "$(cors "$PEERURL" OPTIONS /approve/0123456789ab)" "204 $PEERURL" "and gets its preflight for a POST"
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TMP/other.port" &
OTHER=$!
on_exit "kill $OTHER 2>/dev/null"
i=0
while [ ! -s "$TMP/other.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
other="http://127.0.0.1:$(cat "$TMP/other.port")"
tap_like "$(cors "$other" GET /pending)" "^403 \$" "an origin no API file names is refused, a listener of ours or not"
tap_like "$(cors "$other" OPTIONS /approve/0123456789ab)" "^403 \$" "and gets no preflight"
kill "$OTHER" 2>/dev/null
tap_is "$(curl -s -H "Authorization: Bearer $tok" "$url/peers" | tr -d ' \n' | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')" "$PEERURL" \
	"GET /peers lists the other run's dashboard"

PEER_RESULT_DIR=$PEERRES \
DASHBOARD_URL=$url DASHBOARD_LOGIN=$login SV_PID=$SVPID RESULT_DIR=$RES CONTROL_DIR=$CTL ARTIFACTS=$ARTIFACTS \
	SANDBOX=browser-main AGENT_CWD=$WORK TAP_START=$((tap_n + 1)) \
	timeout -k 5 180 node "$BROWSER_DIR/dashboard.mjs" >"$TMP/node.tap" 2>"$TMP/node.err" &
nodepid=$!
on_exit "kill $nodepid 2>/dev/null"

# The page kills the first supervisor and asks for a second one.
i=0
while [ ! -e "$CTL/restart-wanted" ] && [ $i -lt 1500 ] && kill -0 "$nodepid" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
later=""
# later STATUS NAME [DIAG]: a check printed after the browser's lines (DIAG on one line).
later() {
	later="$later$1	$2	$(printf '%s' "${3:-}" | tr '\n\t' '\r ')
"
}
# later_todo: the same, for a case that waits on another work package (TAP "# TODO").
later_todo() {
	later="$later$1	$2	$(printf '%s' "${3:-}" | tr '\n\t' '\r ')	todo
"
}
if [ -e "$CTL/restart-wanted" ]; then
	sv_wait 15
	later "$([ "$sv_rc" != running ] && echo 0 || echo 1)" \
		"the first supervisor, sent SIGTERM by the test, ends (status $sv_rc)" "$(diag)"
	SVPID=
	later "$([ "$(audit_count '"verdict":"approved".*"decided_by":"web"')" = 4 ] && echo 0 || echo 1)" \
		"the audit log has the four approvals by the dashboard (first, third, fifth, sixth)"
	later "$([ "$(audit_count '"verdict":"denied".*"decided_by":"web".*"reason":"not today"')" = 1 ] && echo 0 || echo 1)" \
		"the audit log has one denial by the dashboard, with the reason typed in the page"
	# The global pattern the page posted, kept in the global decisions file.
	kept=$(grep -rl 'fif' "$CFG" --include='*.yaml' 2>/dev/null | grep -v '/config.yaml$' | head -n 1)
	later "$([ -n "$kept" ] && grep -q '/usr/bin/echo' "$kept" && echo 0 || echo 1)" \
		"Approve → Global with the pattern echo fif* is written to the global decisions file ($kept)" \
		"$(find "$CFG" 2>&1 | head -n 20; cat "$kept" 2>/dev/null)"
	start_sv browser-controls 8s "$TMP/agent-controls.sh" "127.0.0.1:$port" quiet
	later "$([ "$url" = "http://127.0.0.1:$port" ] && echo 0 || echo 1)" \
		"a second supervisor serves the same address ($url)" "$(diag)"
	[ -n "$url" ] && printf '%s\n' "$url" >"$CTL/restarted"
fi

wait "$nodepid"
nrc=$?
cat "$TMP/node.tap"
n=$(grep -cE '^(not )?ok [0-9]+' "$TMP/node.tap")
f=$(grep -cE '^not ok [0-9]+' "$TMP/node.tap")
tap_n=$((tap_n + n))
tap_failed=$((tap_failed + f))
if [ "$nrc" -ne 0 ] && [ "$f" -eq 0 ]; then
	tap_ok 1 "dashboard.mjs exited with status $nrc" "$(head -c 3000 "$TMP/node.err")"
elif [ "$f" -gt 0 ]; then
	head -c 3000 "$TMP/node.err" | sed 's/^/# /'
fi
# The deferred checks (a here-document keeps tap_ok's counters in this shell).
while IFS='	' read -r st name d todo; do
	[ -n "$st" ] || continue
	[ -n "$todo" ] && tap_todo "exec scopes are kept by h/decisions' server side"
	tap_ok "$st" "$name" "$(printf '%s' "$d" | tr '\r' '\n')"
	tap_todo ""
done <<LATER
$later
LATER

if [ -n "$SVPID" ]; then
	sv_wait 15
	tap_ok "$([ "$sv_rc" != running ] && echo 0 || echo 1)" \
		"Kill from the dashboard ends the second run (status $sv_rc)" "$(diag)"
	SVPID=
	tap_is "$(grep -c '^resync ' "$RES/status" 2>/dev/null):$(audit_count '"verdict":"timed_out"')" \
		"1:1" "the unanswered ask timed out (audit log) and the agent went on"
fi
sv_stop

echo "# screenshots: $ARTIFACTS/"
for f in "$ARTIFACTS"/*.png; do
	[ -e "$f" ] && echo "#   $(basename "$f")"
done
echo "1..$tap_n"
tap_done
