#!/bin/sh
# Attack on the decisions files' lock (decisions.h: "<file>.lock", flock) from the agent. The
# config directory is read-only in the sandbox but readable, and a read-only fd takes a flock:
# the agent opens decisions/global.yaml.lock and holds LOCK_EX. Every supervisor of the user
# read the decisions files under a blocking LOCK_SH (the decisions watch, each second): its own
# and every other run of that config directory stopped for good — dashboards, the proxy, exec
# asks, the terminal — and `decisions rm` hung, so a removal could not take effect either.
# Held now: the watch never waits for the lock (a write renames a whole file, a read without
# the lock is whole), writers wait 2 s at most and say that it is held; the dashboards answer.
# As root and as nobody.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl /usr/bin/python3
tap_plan $PLAN

sv_agent_setup
alive() { kill -0 "$1" 2>/dev/null; }
field() { # FILE KEY
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

for who in root nobody; do
	W=$TMP/$who
	C=$W/cfg
	mkdir -p "$C/decisions" "$W/a" "$W/v" "$W/home" "$W/rt"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$C/config.yaml"
	# What an earlier decision left: the global file and its lock.
	printf 'proxy:\n  allow:\n    - domain: "kept%s.example"\n' "$$" >"$C/decisions/global.yaml"
	: >"$C/decisions/global.yaml.lock"
	chmod 600 "$C/decisions/global.yaml" "$C/decisions/global.yaml.lock"
	cat >"$W/hold.py" <<EOF
import fcntl, os, time
f = open("$C/decisions/global.yaml.lock")
fcntl.flock(f, fcntl.LOCK_EX)
open("$W/a/held.tmp", "w").close(); os.rename("$W/a/held.tmp", "$W/a/held")
while not os.path.exists("$W/done"):
    time.sleep(0.05)
EOF
	sv_agent_who "$who"
	chmod 700 "$W/rt"
	# shellcheck disable=SC2086 # words on purpose
	as() { $AS env HOME="$W/home" XDG_STATE_HOME="$W/state" XDG_RUNTIME_DIR="$W/rt" "$@"; }
	start() { # DIR NAME AGENT…: a run in the background, its pid in $pid
		dir=$1 name=$2
		shift 2
		# $pid is the supervisor's timeout (a subshell that execs it): sv_agent in the
		# background would leave a shell between them.
		# shellcheck disable=SC2086 # words on purpose
		(cd "$dir" && exec timeout -k 5 40 $AS env HOME="$W/home" XDG_STATE_HOME="$W/state" \
			XDG_RUNTIME_DIR="$W/rt" "$TMP/cloister-supervisor" run --config-dir "$C" \
			--name "$name" --listen-approval 127.0.0.1:0 --listen-tokens off \
			--listen-request off --ask none -- "$@") </dev/null >"$dir.out" 2>"$dir.err" &
		pid=$!
		on_exit "touch '$W/done'; kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	}
	start "$W/v" "a3v$$" /bin/sh -c "while [ ! -e '$W/done' ]; do sleep 0.1; done"
	start "$W/a" "a3h$$" /usr/bin/python3 "$W/hold.py"
	i=0
	while [ ! -e "$W/a/held" ] && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	tap_ok "$([ -e "$W/a/held" ] && echo 0 || echo 1)" \
		"$who: the agent holds the decisions file's lock" "$(cat "$W/a.err")"
	# Both dashboards, round after round, until each watch has looked (one a second) twice.
	end=$(($(date +%s) + 3))
	while :; do
		codes=
		for f in "$W"/rt/cloister/api/*.json; do
			codes="$codes$(curl -s -m 5 -o /dev/null -w '%{http_code}' \
				-H "Authorization: Bearer $(field "$f" token)" "$(field "$f" url)/status") "
		done
		if [ "$codes" != "200 200 " ] || [ "$(date +%s)" -ge "$end" ]; then break; fi
	done
	tap_is "$codes" "200 200 " "$who: both runs' dashboards keep answering (the agent's own too)" \
		"$(cat "$W/v.err" "$W/a.err")"
	out=$(as timeout 15 "$TMP/cloister-supervisor" decisions rm "kept$$.example" \
		--config-dir "$C" 2>&1)
	st=$?
	tap_like "$st:$out" '^[1-9][0-9]*:.*held by another process' \
		"$who: decisions rm says the lock is held, in bounded time" "$out"
	touch "$W/done"
	i=0
	while { alive "$pid"; } && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
done
tap_done
