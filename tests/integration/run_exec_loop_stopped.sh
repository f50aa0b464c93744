#!/bin/sh
# Execs are answered by a thread of their own, not by the loop's thread, as root and as an
# unprivileged user (nobody). The loop's thread is held stopped (ptrace, that thread alone) while
# it sleeps in epoll_wait, where it holds no lock: the dashboard, the CLI and the proxy are then
# frozen, and the agent still runs 300 allowed execs to the end; the loop's thread provably did
# not run meanwhile (its context switches did not move). Let go, the run ends normally and the
# execs are in the audit log. Were the execs answered on the loop's thread (as before the
# thread), the agent would wait for as long as the loop is held. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=10
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
[ -r /proc/self/syscall ] || run_skip_all $PLAN "no /proc/PID/syscall (CONFIG_HAVE_ARCH_TRACEHOOK)"
tap_plan $PLAN

EXECS=300

# switches TID: the context switches of thread TID of the run, voluntary and not.
switches() {
	awk '/ctxt_switches/ { n += $2 } END { print n }' "/proc/$SVPID/task/$1/status" 2>/dev/null
}
audited() { [ "$(grep -c '"exe":"/usr/bin/true".*"verdict":"allow"' "$AUD" 2>/dev/null)" -ge "$EXECS" ]; }

for who in root nobody; do
	user_tree "$who"
	mkdir -p "$W/bin"
	cp "$HELPERS/execloop" "$W/bin/execloop"
	# Every exec allowed by the list, none asked: nothing waits for a person.
	printf 'exec:\n  defaults: false\n  security: allowlist\n  ask: off\n  allow:\n%s\n%s\n' \
		'    - path: "/usr/bin/*"' "    - path: \"$W/bin/execloop\"" >"$W/cfg/config.yaml"
	user_tree_own
	chmod 755 "$W/bin" "$W/bin/execloop"
	# The agent: ready, then the execs once told, then it waits to be told to end.
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 120 $AS $USER_ENV "$BIN" run --config-dir "$W/cfg" \
		--name "el$$" --listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		--ask none --audit-rate off -- sh -c ": >ready
		while [ ! -e go ]; do sleep 0.05; done
		'$W/bin/execloop' $EXECS -j 2 /usr/bin/true >execs.out 2>&1; echo \"execs \$?\" >done
		while [ ! -e end ]; do sleep 0.05; done") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
	on_exit "stop_pid $SV"
	wait_until 15 test -e "$WT/ready"
	wait_until 15 sh -c "ls '$W'/rt/cloister/api/[0-9]*.json >/dev/null 2>&1"
	SVPID=
	for f in "$W"/rt/cloister/api/[0-9]*.json; do
		[ -e "$f" ] && SVPID=$(basename "$f" .json)
	done
	threads=$(cat /proc/"$SVPID"/task/*/comm 2>/dev/null | tr '\n' ' ')
	echo "# $who: supervisor $SVPID, threads: $threads"

	"$HELPERS/threadstop" "$SVPID" "$SVPID" >"$W/stop.out" 2>&1 &
	TS=$!
	on_exit "kill $TS 2>/dev/null"
	wait_until 15 grep -q '^stopped' "$W/stop.out"
	tap_ok $? "$who: the loop's thread is held stopped in epoll_wait" \
		"$(cat "$W/stop.out"; diag)"
	before=$(switches "$SVPID")
	touch "$WT/go"
	wait_until 60 test -e "$WT/done"
	tap_is "$(cat "$WT/done" 2>&1)" "execs 0" \
		"$who: with the loop's thread stopped, the agent's $EXECS execs are answered and run" \
		"$(cat "$WT/execs.out" 2>&1; diag)"
	state=$(awk '{ print $3 }' "/proc/$SVPID/task/$SVPID/stat" 2>/dev/null)
	after=$(switches "$SVPID")
	tap_ok "$([ "$state" = t ] && [ -n "$before" ] && [ "$before" = "$after" ] && echo 0 || echo 1)" \
		"$who: ... while the loop's thread stayed stopped and never ran" \
		"state $state, context switches $before then $after"
	kill -TERM "$TS"
	wait "$TS"
	tap_is "$?" 0 "$who: the loop's thread is let go" "$(cat "$W/stop.out")"
	touch "$WT/end"
	finish
	tap_ok "$([ "$rc" -eq 0 ] && audited && echo 0 || echo 1)" \
		"$who: the run then ends normally, every exec in the audit log" \
		"$(grep -c '"exe":"/usr/bin/true"' "$AUD" 2>/dev/null) audit lines; $(diag)"
done
tap_done
