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
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

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
# shellcheck disable=SC2086 # $AS and $USER_ENV are words on purpose
start_sv() { # NAME
	rm -f "$WT"/cmd* "$WT"/out*
	(cd "$WT" && exec $AS $USER_ENV "$BIN" run --config-dir "$W/cfg" \
		--project "$PROJECT" --ask web --ask-timeout 60s --name "$1" \
		--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
		-- sh -c "$STEP_AGENT" sh "$WT") </dev/null >"$W/sv.out" 2>"$W/sv.err" &
	SV=$!
	i=0
	while [ -z "$(ls "$W/rt/cloister/api/" 2>/dev/null)" ] && alive "$SV" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
on_exit 'stop_sv'

scenario() { # WHO
	# The harmless program the person looks at and allows: ./tool is /usr/bin/true.
	cp /usr/bin/true "$WT/tool"
	chmod 755 "$WT/tool"
	[ -z "$AS" ] || chown "$NOBODY:$NOBODY" "$WT/tool"

	# ---- run 1: the person allows ./tool for the project ----
	start_sv one$$
	step 1 "$WT/tool --version >/dev/null; echo ran"
	wait_pending "tool --version"
	cli approve "$id" --scope project --program
	tap_is "$st" 0 "$1: the person allows ./tool (true) for the project, any arguments" "$out"
	done_within 1 20
	tap_like "$res" '^ran' "$1: the allowed program runs" "$res"

	# The agent puts another program in its place (id, outside its allow list) and runs it.
	step 2 "rm -f $WT/tool && cp /usr/bin/id $WT/tool && $WT/tool -u"
	done_within 2 5
	tap_ok "$(printf '%s\n' "$res" | grep -q '^[0-9][0-9]*$' && echo 1 || echo 0)" \
		"$1: a program copied over the allowed one does not run on the decision (same run)" \
		"$res"
	wait_pending "tool -u"
	tap_like "$out" 'changed since you allowed it' "$1: its card says why it is asked again" \
		"$out"
	stop_sv

	# ---- run 2: the project's next run, whose agent writes what it likes at that path ----
	rm -f "$WT/tool"
	cp /usr/bin/id "$WT/tool"
	[ -z "$AS" ] || chown "$NOBODY:$NOBODY" "$WT/tool"
	start_sv two$$
	step 1 "$WT/tool -un"
	done_within 1 5
	tap_ok "$(printf '%s\n' "$res" | grep -q '^[a-z]' && echo 1 || echo 0)" \
		"$1: nor in the project's next run" "$res"
	stop_sv
	cli pending
	tap_ok "$(printf '%s\n' "$out" | grep -q '^[0-9a-f]\{12\} ' && echo 1 || echo 0)" \
		"$1: nothing is left waiting" "$out"
}

for who in root nobody; do
	user_tree "$who"
	printf '%s\n' "$CONFIG" >"$W/cfg/config.yaml"
	user_tree_own
	STEPS=$WT
	scenario "$who"
done
tap_done
