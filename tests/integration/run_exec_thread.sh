#!/bin/sh
# The thread that receives the exec notifications (blocked in the seccomp RECV, it runs the
# handlers under the loop's lock) while the loop serves the person, as root and as an
# unprivileged user (nobody):
#   - a flood: three processes exec /usr/bin/true as fast as they can while two other execs
#     ask; the first ask reaches the CLI (`pending`) and the dashboard's event stream (/events)
#     within seconds and is approved with the CLI, the second is approved through the API
#     (POST /approve): the loop is neither starved by the thread nor left asleep by it;
#   - every exec of the flood is decided and runs, and is in the audit log while the agent
#     still runs (its last lines are written by the timer the thread set);
#   - teardown: the agent leaves while execs are still coming (a flood in the background of an
#     agent that exits at once), and while the thread is blocked with nothing to receive (a
#     process that outlives the agent, asleep): the run ends promptly, with the agent's status.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=26
run_needs_root $PLAN
run_needs_tools $PLAN curl python3 setpriv
tap_plan $PLAN

FLOOD=1500

setup() { # WHO
	user_tree "$1"
	# The agent's programs, where nobody may run them: the helpers' build directory may not be.
	mkdir -p "$W/bin"
	cp "$HELPERS/execloop" "$W/bin/execloop"
	cp /usr/bin/id "$W/bin/one"
	cp /usr/bin/id "$W/bin/two"
	cat >"$W/cfg/config.yaml" <<YAML
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  allow:
    - path: "/usr/bin/*"
    - path: "$W/bin/execloop"
YAML
	# The agent waits at its end for a line in this pipe: alive, and making no exec.
	mkfifo "$WT/fifo"
	user_tree_own
	chmod 755 "$W/bin" "$W/bin/"*
}

flood_audited() { [ "$(grep -c '"exe":"/usr/bin/true".*"verdict":"allow"' "$AUD" 2>/dev/null)" -ge "$FLOOD" ]; }

start() { # AGENT-SCRIPT [RUN OPTIONS…]: the supervisor in the background (pid in $SV), asks
	# on the web
	start_agent=$1
	shift
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 60 $AS $USER_ENV "$BIN" run \
		--config-dir "$W/cfg" --name "et$$" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		--ask web --ask-timeout 45s "$@" -- sh -c "$start_agent") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
	on_exit "stop_pid $SV"
}

api() { # the run's URL and TOKEN, from its API file
	json=
	wait_until 10 sh -c "ls '$W'/rt/cloister/api/[0-9]*.json >/dev/null 2>&1"
	for json in "$W"/rt/cloister/api/[0-9]*.json; do break; done
	URL=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$json" 2>/dev/null)
	TOKEN=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$json" 2>/dev/null)
}

# pending_api TEXT: the id of the first ask of GET /pending that names TEXT, in $id.
pending_api() {
	id=$(curl -s -m 5 -H "Authorization: Bearer $TOKEN" "$URL/pending" | sed 's/},{/}\n{/g' |
		grep -F -- "$1" | grep -o '"id":"[0-9a-f]*"' | head -n 1 | cut -d'"' -f4)
	[ -n "$id" ]
}

for who in root nobody; do
	setup "$who"

	# ---- the flood, with asks answered from the CLI and the API ----
	# The agent starts once the event stream listens (the file go in its directory).
	start "while [ ! -e go ]; do sleep 0.05; done
		'$W/bin/execloop' $FLOOD -j 3 /usr/bin/true >flood.out 2>&1 & f=\$!
		'$W/bin/one' -u; echo \"one \$?\"
		'$W/bin/two' -u; echo \"two \$?\"
		wait \$f; echo \"flood \$?\"
		read -r x <fifo" --audit-rate off
	api
	curl -s -N -m 50 -H "Authorization: Bearer $TOKEN" "$URL/events" >"$W/sse" 2>/dev/null &
	SSE=$!
	on_exit "kill $SSE 2>/dev/null"
	wait_until 10 grep -q '^retry:' "$W/sse"
	touch "$WT/go"

	# The event stream first, with no request of ours to wake the loop: only the thread's
	# timer (the stream's, due at once) can.
	tap_ok "$(wait_until 10 grep -qF '"cmd":"one -u"' "$W/sse" && echo 0 || echo 1)" \
		"$who: an ask raised during the flood reaches the dashboard's event stream" \
		"$(head -c 1500 "$W/sse")"
	began=$(date +%s)
	wait_pending "one -u"
	took=$(($(date +%s) - began))
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "$who: ... and the CLI (${took}s)" "$out$(diag)"
	tap_ok "$([ "$took" -le 10 ] && echo 0 || echo 1)" "$who: ... within 10 s (${took}s)"
	cli approve "$id"
	tap_is "$st:$out" "0:approved $id" "$who: approved with the CLI"

	wait_until 15 pending_api "two -u"
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "$who: the second ask is in GET /pending" \
		"$(diag)"
	code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST \
		-H "Authorization: Bearer $TOKEN" -H "Origin: $URL" "$URL/approve/$id")
	tap_is "$code" 200 "$who: approved through the API (POST /approve)"
	# The flood's last lines wait in memory for the audit log's timer, which the thread set.
	# (The loop also wakes each second to look at the decisions files, so a timer the thread
	# failed to set would be late here, not lost: test_loop holds the thread's timers exactly.)
	tap_ok "$(wait_until 10 flood_audited && echo 0 || echo 1)" \
		"$who: every exec of the flood is in the audit log while the agent still runs" \
		"$(grep -c '"exe":"/usr/bin/true".*"verdict":"allow"' "$AUD" 2>/dev/null) of $FLOOD"
	timeout 5 sh -c "echo end >'$WT/fifo'"
	finish
	kill "$SSE" 2>/dev/null
	wait "$SSE" 2>/dev/null
	uid=0
	[ "$who" = nobody ] && uid=$NOBODY
	tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:$uid one 0 $uid two 0 flood 0 " \
		"$who: both asked programs ran, and every exec of the flood" "$(diag)"
	tap_is "$(grep -c '"summary":"one -u","verdict":"approved",.*"decided_by":"cli"' "$AUD" 2>/dev/null):$(grep -c '"summary":"two -u","verdict":"approved"' "$AUD" 2>/dev/null)" \
		"1:1" "$who: the two approvals are in the audit log" \
		"$(grep -v '"exe":"/usr/bin/true"' "$AUD" 2>/dev/null | tail -n 5)"

	# ---- teardown: the agent leaves while execs keep coming ----
	began=$(date +%s)
	start "'$W/bin/execloop' 100000 -j 2 /usr/bin/true >/dev/null 2>&1 & exit 7"
	finish
	took=$(($(date +%s) - began))
	tap_is "$rc" 7 "$who: the agent leaves during a flood: the run ends with its status" "$(diag)"
	tap_ok "$([ "$took" -le 15 ] && echo 0 || echo 1)" "$who: ... promptly (${took}s)"

	# ---- teardown: nothing to receive (the thread blocked), a process outlives the agent ----
	began=$(date +%s)
	start "sleep 1000 & exit 3"
	finish
	took=$(($(date +%s) - began))
	tap_is "$rc" 3 "$who: a process outlives the agent: the run ends with the agent's status" \
		"$(diag)"
	tap_ok "$([ "$took" -le 15 ] && echo 0 || echo 1)" "$who: ... promptly (${took}s)"
done
