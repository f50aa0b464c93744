#!/bin/sh
# Attack on exec decisions with scopes: a decision wider than once named the file by its path
# ("the rule's path is the file that ran"), not by what the file is. A program in the project
# is writable by the agent: once the person allows `./tool` for the project (--program, "this
# program with any arguments"), the agent copies another program over ./tool and it ran
# without an ask — in this run, and in every later run of the project (whose agent can write
# anything at that path).
# Fixed: an allow wider than once keeps the file's content (its SHA-256, with the decision in
# the session and in the decisions file); another content at the path is asked again, and
# the card says why. Shown with a root supervisor and with one run by an ordinary user.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

NOBODY=65534
alive() { kill -0 "$1" 2>/dev/null; }
# As the scenario's user ($AS: nothing for root, setpriv for nobody), with its runtime dir.
# shellcheck disable=SC2086 # $AS is a command prefix, split on purpose
cli() {
	out=$(timeout 20 $AS env XDG_RUNTIME_DIR="$RT" "$BIN" "$@" 2>&1)
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

CONFIG='exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/mv"
    - path: "/usr/bin/cp"
    - path: "/usr/bin/rm"'
PROJECT=a2d$$
# shellcheck disable=SC2016 # the agent's shell expands these
AGENT='n=1; while :; do while [ ! -e "$1/cmd$n" ]; do sleep 0.05; done
	sh "$1/cmd$n" >"$1/out$n" 2>&1; echo "status $?" >>"$1/out$n"; n=$((n + 1)); done'
SV=
# shellcheck disable=SC2086 # $AS, as above
start_sv() { # NAME
	rm -f "$W"/cmd* "$W"/out*
	(cd "$W" && exec $AS env XDG_RUNTIME_DIR="$RT" HOME="$H" "$BIN" run --config-dir "$C" \
		--project "$PROJECT" --ask web --ask-timeout 60s --name "$1" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- sh -c "$AGENT" sh "$W") </dev/null >"$W.out" 2>"$W.err" &
	SV=$!
	i=0
	while [ -z "$(ls "$RT/cloister/api/" 2>/dev/null)" ] && alive "$SV" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
stop_sv() {
	[ -n "$SV" ] && alive "$SV" || return 0
	kill -TERM "$SV" 2>/dev/null
	i=0
	while alive "$SV" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	alive "$SV" && kill -KILL "$SV" 2>/dev/null
	wait "$SV" 2>/dev/null
	return 0
}
on_exit 'stop_sv'

scenario() { # WHO
	# The harmless program the person looks at and allows: ./tool is /usr/bin/true.
	cp /usr/bin/true "$W/tool"
	chmod 755 "$W/tool"
	[ -z "$AS" ] || chown "$NOBODY:$NOBODY" "$W/tool"

	# ---- run 1: the person allows ./tool for the project ----
	start_sv one$$
	step 1 "$W/tool --version >/dev/null; echo ran"
	wait_pending "tool --version"
	cli approve "$id" --scope project --program
	tap_is "$st" 0 "$1: the person allows ./tool (true) for the project, any arguments" "$out"
	done_within 1 20
	tap_like "$res" '^ran' "$1: the allowed program runs" "$res"

	# The agent puts another program in its place (id, outside its allow list) and runs it.
	step 2 "rm -f $W/tool && cp /usr/bin/id $W/tool && $W/tool -u"
	done_within 2 5
	tap_ok "$(printf '%s\n' "$res" | grep -q '^[0-9][0-9]*$' && echo 1 || echo 0)" \
		"$1: a program copied over the allowed one does not run on the decision (same run)" \
		"$res"
	wait_pending "tool -u"
	tap_like "$out" 'changed since you allowed it' "$1: its card says why it is asked again" \
		"$out"
	stop_sv

	# ---- run 2: the project's next run, whose agent writes what it likes at that path ----
	rm -f "$W/tool"
	cp /usr/bin/id "$W/tool"
	[ -z "$AS" ] || chown "$NOBODY:$NOBODY" "$W/tool"
	start_sv two$$
	step 1 "$W/tool -un"
	done_within 1 5
	tap_ok "$(printf '%s\n' "$res" | grep -q '^[a-z]' && echo 1 || echo 0)" \
		"$1: nor in the project's next run" "$res"
	stop_sv
	cli pending
	tap_ok "$(printf '%s\n' "$out" | grep -q '^[0-9a-f]\{12\} ' && echo 1 || echo 0)" \
		"$1: nothing is left waiting" "$out"
}

# ---- a root supervisor ----
AS=
BIN=$SUPERVISOR
RT=$TMP/rt
C=$CFG
H=${HOME:-/root}
W=$TMP/w
mkdir -m 0700 "$RT"
mkdir -p "$W"
printf '%s\n' "$CONFIG" >"$C/config.yaml"
scenario root

# ---- a supervisor of an ordinary user (nobody) ----
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/rt" "$U/w"
chmod 0700 "$U/rt"
cp "$SUPERVISOR" "$U/cloister-supervisor"
printf '%s\n' "$CONFIG" >"$U/cfg/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"
AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
BIN=$U/cloister-supervisor
RT=$U/rt
C=$U/cfg
H=$U
W=$U/w
scenario nobody
tap_done
