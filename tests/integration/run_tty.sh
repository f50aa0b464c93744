#!/bin/sh
# `cloister-supervisor run` and the user's terminal: the agent has a pseudo-terminal of its own
# and never the user's. Driven through test ptys (tests/helpers/ptyanswer) and a private tmux
# server (what a person sees on the screen), as root and as an unprivileged user:
#   - TIOCSTI pushes (fds 0-2, /dev/tty, every /dev/pts/N) reach nothing the user's shell reads;
#   - the agent can neither answer nor draw over a prompt (no freezer without root);
#   - a full-screen program (vim) and a line-mode one get their screens back after a prompt;
#   - pipes and files pass as they are; without a terminal the agent has none (/dev/tty fails);
#   - job control through the pty: Ctrl-C, Ctrl-Z and fg, window size, exit statuses;
#   - issue 11: a non-root domain ask left to time out no longer stops the run ("Stopped");
#   - the supervisor's lines show the agent's control characters escaped; run --help.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=46
run_needs_root $PLAN
run_needs_tools $PLAN setpriv tmux vim curl
tap_plan $PLAN

PTY=$HELPERS/ptyanswer
TERMLOG=$TMP/terminal
NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/r"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/ttyinject" "$U/ttyinject"
chmod 777 "$U/r"

config() { # DIR: the config of both users
	cat >"$1/config.yaml" <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/bash"
    - path: "/usr/bin/sleep"
    - path: "/usr/bin/cat"
    - path: "/usr/bin/stty"
    - path: "/usr/bin/tty"
    - path: "/usr/bin/ls"
    - path: "/usr/bin/vim.basic"
    - path: "/usr/bin/curl"
    - path: "$HELPERS/*"
    - path: "$U/ttyinject"
  deny:
    - path: "/usr/bin/whoami"
    - path: "$U/r/evil*"
  defaults: false
proxy:
  unlisted_domain_behavior: request_approval
  approval_timeout: 2s
  defaults: false
EOF
}
config "$CFG"
config "$U/cfg"
chown -R "$NOBODY:$NOBODY" "$U"
NOBODY_AUDIT=$U/state/cloister/audit.log

# run_pty WHO PENDING ANSWERS RUN-OPTIONS -- AGENT…: `run` on a test pty that is its
# controlling terminal and stdio, as WHO (root or nobody); what is left in the terminal's input
# afterwards in PENDING; the terminal in $TERMLOG (.txt: its text), status in $rc.
run_pty() {
	who=$1 pending=$2 answers=$3
	shift 3
	if [ "$who" = nobody ]; then
		set -- setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME="$U" \
			XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" "$@"
	else
		set -- "$SUPERVISOR" run --config-dir "$CFG" "$@"
	fi
	(cd "$U" && timeout -k 5 "$SV_TIMEOUT" "$PTY" --ctty --pending "$pending" "$answers" -- \
		timeout --foreground -k 5 $((SV_TIMEOUT - 5)) "$@") </dev/null >"$OUT" 2>"$TERMLOG"
	rc=$?
	screen_text <"$TERMLOG" >"$TERMLOG.txt"
}
tdiag() { printf 'status %s\nterminal: %s' "$rc" "$(head -c 3000 "$TERMLOG.txt")"; }
# ---- TIOCSTI: nothing the agent pushes reaches the user's shell -----------------------------
# shellcheck disable=SC2016 # the agent's shell expands these
for who in root nobody; do
	report=$U/r/inject-$who
	inject=$HELPERS/ttyinject
	[ "$who" = nobody ] && inject=$U/ttyinject
	run_pty "$who" "$TMP/pending-$who" - -- sh -c '"$1" "$(printf "touch %s/pwned\r" "$2")" >"$3"' \
		sh "$inject" "$U/r" "$report"
	tap_is "$(tail -n 1 "$report" 2>&1)" "pushed 0" \
		"$who: the agent's TIOCSTI pushes (fds 0-2, /dev/tty, /dev/pts/*) all fail" \
		"$(tdiag)
report: $(cat "$report" 2>&1)"
	tap_is "$(od -An -c "$TMP/pending-$who" 2>&1)" "" \
		"$who: after run exits, nothing waits in the user's terminal for the shell to read"
	tap_is "$(grep -c '^/dev/pts/' "$report" 2>&1):$(grep '^/dev/pts/' "$report" 2>&1 | cut -d: -f1)" \
		"1:/dev/pts/0" "$who: the agent's /dev/pts holds its own terminal only" \
		"$(cat "$report" 2>&1)"
done

# ---- the agent cannot answer a prompt or draw over it ---------------------------------------
# While its /usr/bin/id waits for the person, the agent keeps drawing a fake prompt, typing
# "a", "A" and Enter at its terminal and pushing them with TIOCSTI. The person denies.
cat >"$U/selfapprove.sh" <<EOF
( sleep 0.2; /usr/bin/id -u; echo "id-status \$?" ) &
i=0
while [ \$i -lt 50 ]; do
	printf '\r\033[2J\033[H-- cloister: FAKE approval needed [%s] --\r\n[a]llow once > ' \$i
	printf 'a\rA\r'
	"\$1" "\$(printf 'a\r')" >/dev/null 2>&1
	i=\$((i + 1))
	sleep 0.05
done
wait
EOF
chmod 644 "$U/selfapprove.sh"
for who in root nobody; do
	inject=$HELPERS/ttyinject
	[ "$who" = nobody ] && inject=$U/ttyinject
	rm -f "$AUDIT" "$NOBODY_AUDIT"
	run_pty "$who" "$TMP/pending" d --ask tty -- sh "$U/selfapprove.sh" "$inject"
	audit=$AUDIT
	[ "$who" = nobody ] && audit=$NOBODY_AUDIT
	tap_like "$(cat "$TERMLOG.txt")" 'id-status 126$' \
		"$who: the agent's keys did not answer: the person's denial did (126)" "$(tdiag)"
	tap_is "$(grep -c '"verdict":"denied".*"decided_by":"tty"' "$audit" 2>&1):$(grep -c '"verdict":"approved"' "$audit" 2>&1)" \
		"1:0" "$who: the audit log has the person's denial and no approval" "$(cat "$audit" 2>&1)"
	# From the real prompt to the denial's notice, which comes after it.
	sed -n '/── cloister: approval needed/,/exec \/usr\/bin\/id denied/p' "$TERMLOG.txt" >"$TMP/during"
	tap_ok "$(grep -c FAKE "$TMP/during"; [ "$(grep -c FAKE "$TERMLOG")" -gt 0 ] || echo nofake)" \
		"$who: nothing the agent drew reached the terminal while the prompt was up (it did after)" \
		"during the prompt: $(head -c 1500 "$TMP/during")"
done

# ---- what a person sees: a private tmux server ----------------------------------------------
TSOCK=cloister-tty-$$
tmx() { tmux -L "$TSOCK" -f /dev/null "$@"; }
# shellcheck disable=SC2016 # expanded when the hook runs
on_exit 'tmux -L "$TSOCK" -f /dev/null kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$TSOCK"'
pane() { tmx capture-pane -p -t "$1"; }
# wait_pane SESSION REGEX [SECONDS]: poll the screen until a line matches (bounded).
wait_pane() {
	n=$((${3:-10} * 20))
	while [ "$n" -gt 0 ]; do
		pane "$1" 2>/dev/null | grep -Eq -- "$2" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}
# wait_screen_is SESSION FILE [SECONDS]: poll until the screen is FILE's.
wait_screen_is() {
	n=$((${3:-10} * 20))
	while [ "$n" -gt 0 ]; do
		pane "$1" >"$TMP/screen-now" 2>/dev/null
		cmp -s "$TMP/screen-now" "$2" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}
# wait_stable SESSION: poll until two looks 0.1 s apart show the same screen (bounded).
wait_stable() {
	n=50
	pane "$1" >"$TMP/screen-a" 2>/dev/null
	while [ "$n" -gt 0 ]; do
		sleep 0.1
		pane "$1" >"$TMP/screen-b" 2>/dev/null
		cmp -s "$TMP/screen-a" "$TMP/screen-b" && return 0
		mv "$TMP/screen-b" "$TMP/screen-a"
		n=$((n - 1))
	done
	return 1
}
cursor() { tmx display -p -t "$1" '#{cursor_x},#{cursor_y}'; }
session_gone() { ! tmx has-session -t "$1" 2>/dev/null; }
shell_session() { # NAME [AS]: an interactive bash the way a person has one
	if [ "${2:-}" = nobody ]; then
		tmx new-session -d -s "$1" -x 80 -y 24 \
			"setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups env HOME=$U XDG_CONFIG_HOME=$U/.config XDG_STATE_HOME=$U/state TERM=screen PS1='outer\$ ' bash --norc --noprofile -i"
	else
		tmx new-session -d -s "$1" -x 80 -y 24 \
			"env TERM=screen PS1='outer\$ ' bash --norc --noprofile -i"
	fi
	wait_pane "$1" '^outer\$'
}
# wait_prompt SESSION: until the shell shows an empty prompt on its last line (whatever was
# typed before it could reach the program that had the terminal).
wait_prompt() {
	n=200
	while [ "$n" -gt 0 ]; do
		pane "$1" 2>/dev/null | grep -v '^$' | tail -n 1 | grep -Eq '^(\^C)?outer\$ ?$' && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}
# send SESSION TEXT: type TEXT and Enter.
send() { tmx send-keys -t "$1" -l "$2" && tmx send-keys -t "$1" Enter; }

# A full-screen program: vim on the alternate screen. A process of the agent asks while vim
# shows a file; after the answer vim's screen must be what it was.
seq 1 60 | sed 's/^/line /' >"$TMP/file.txt"
cat >"$TMP/vim-agent.sh" <<EOF
( while [ ! -e "$TMP/go-vim" ]; do sleep 0.05; done; /usr/bin/id -u >"$TMP/vim-id" 2>&1 ) &
exec vim -u NONE -N -n --cmd 'set shortmess+=F' -c 7 "$TMP/file.txt"
EOF
# In $TMP: the sandbox's /tmp is its own, the working directory is bound back into it.
tmx new-session -d -s vim -x 80 -y 24 -c "$TMP" \
	"env TERM=screen '$SUPERVISOR' run -q --config-dir '$CFG' -- sh '$TMP/vim-agent.sh'"
wait_pane vim '^line 23$'
wait_stable vim
pane vim >"$TMP/vim-before"
cur_before=$(cursor vim)
touch "$TMP/go-vim"
wait_pane vim 'approval needed'
wait_pane vim 'details > '
tap_like "$(pane vim)" 'command: id -u' "vim: the prompt is on the screen, over vim" "$(pane vim)"
tmx send-keys -t vim a
wait_screen_is vim "$TMP/vim-before"
tap_ok $? "vim: after the answer its screen is exactly what it was before the prompt" \
	"$(diff "$TMP/vim-before" "$TMP/screen-now")"
tap_is "$(cursor vim)" "$cur_before" "vim: and the cursor is where it was"
i=0
while [ ! -s "$TMP/vim-id" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tap_is "$(cat "$TMP/vim-id" 2>&1)" 0 "vim: the approved program ran"
tmx send-keys -t vim Escape ':qa!' Enter
i=0
while ! session_gone vim && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done

# A line-mode program on the main screen: its lines and its half-typed prompt come back.
cat >"$TMP/line-agent.sh" <<EOF
( while [ ! -e "$TMP/go-line" ]; do sleep 0.05; done; /usr/bin/id -u >"$TMP/line-id" 2>&1 ) &
i=1; while [ \$i -le 30 ]; do echo "output \$i"; i=\$((i + 1)); done
printf 'agent> half-typed'
read -r x
EOF
tmx new-session -d -s line -x 80 -y 24 -c "$TMP" \
	"env TERM=screen '$SUPERVISOR' run -q --config-dir '$CFG' -- sh '$TMP/line-agent.sh'"
wait_pane line '^agent> half-typed'
wait_stable line
pane line >"$TMP/line-before"
cur_before=$(cursor line)
touch "$TMP/go-line"
wait_pane line 'details > '
tmx send-keys -t line a
wait_screen_is line "$TMP/line-before"
tap_ok $? "a line-mode agent: after the answer its screen and half-typed line are back" \
	"$(diff "$TMP/line-before" "$TMP/screen-now")"
tap_is "$(cursor line)" "$cur_before" "a line-mode agent: the cursor is where it was"
tmx send-keys -t line Enter

# ---- job control through the agent's pty -----------------------------------------------------
shell_session job
send job "stty -g >$TMP/stty-before; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'echo started; exec sleep 100'"
wait_pane job '^started'
tmx send-keys -t job C-c
wait_prompt job
send job 'echo "rc-int=$?"'
wait_pane job '^rc-int=[0-9]+$'
tap_like "$(pane job)" '^rc-int=130$' "Ctrl-C reaches the agent through its pty: run exits 130" "$(pane job)"

send job "clear; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'echo ready; read x; echo \"got=\$x\"'"
wait_pane job '^ready'
tmx send-keys -t job C-z
wait_pane job 'Stopped'
tap_like "$(pane job)" 'Stopped' \
	"Ctrl-Z stops the agent and run with it: the user's shell has its terminal back" "$(pane job)"
send job "stty -g >$TMP/stty-stopped"
i=0
while [ ! -s "$TMP/stty-stopped" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tap_is "$(cat "$TMP/stty-stopped" 2>&1)" "$(cat "$TMP/stty-before" 2>&1)" \
	"while stopped, the terminal has the shell's modes back (not raw)"
send job fg
send job hello
wait_pane job 'got=hello'
wait_prompt job
send job 'echo "rc-fg=$?"'
wait_pane job '^rc-fg=[0-9]+$'
tap_like "$(pane job)" 'got=hello' "fg: the agent goes on and reads what is typed" "$(pane job)"
tap_like "$(pane job)" '^rc-fg=0$' "... and run exits with its status (0)" "$(pane job)"

send job "clear; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'trap \"stty size; exit 0\" WINCH; echo winch-ready; while :; do sleep 0.05; done'"
# Its own marker: the screen may still show the last case's "ready" before `clear` ran, and a
# resize sent before the agent's trap is set would be lost (and the agent would never end).
wait_pane job '^winch-ready'
tmx resize-window -t job -x 90 -y 30
wait_pane job '^30 90$'
tap_like "$(pane job)" '^30 90$' "a window size change reaches the agent (SIGWINCH, its new size)" "$(pane job)"

# Started in the background, run leaves the terminal to the shell (no raw mode, no reads)
# until `fg`.
send job "clear; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'echo bg-started; read x; echo \"bg-got=\$x\"' &"
wait_pane job '^bg-started'
rm -f "$TMP/stty-bg"
send job "stty -g >$TMP/stty-bg"
i=0
while [ ! -s "$TMP/stty-bg" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tap_is "$(cat "$TMP/stty-bg" 2>&1)" "$(cat "$TMP/stty-before" 2>&1)" \
	"run in the background leaves the terminal's modes to the shell" "$(pane job)"
send job fg
send job later
wait_pane job 'bg-got=later'
wait_prompt job
send job 'echo "rc-bg=$?"'
wait_pane job '^rc-bg=[0-9]+$'
tap_like "$(pane job)" 'bg-got=later' "... and after fg the agent reads what is typed" "$(pane job)"

send job "clear; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'exit 3'; echo \"rc-3=\$?\""
wait_pane job '^rc-3=[0-9]+$'
code3=$(pane job | sed -n 's/^rc-3=//p')
send job "clear; $SUPERVISOR run -q --config-dir $CFG -- sh -c 'kill -USR1 \$\$'; echo \"rc-usr1=\$?\""
wait_pane job '^rc-usr1=[0-9]+$'
tap_is "$code3 $(pane job | sed -n 's/^rc-usr1=//p')" "3 138" \
	"exit statuses through the pty: 3, and 128+10 for SIGUSR1"
send job "stty -g >$TMP/stty-after"
i=0
while [ ! -s "$TMP/stty-after" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tap_is "$(cat "$TMP/stty-after" 2>&1)" "$(cat "$TMP/stty-before" 2>&1)" \
	"after all of it the terminal has exactly the modes it had"

# The terminal's modes come back when run dies of a fatal signal (under a plain sh: bash would
# put them back itself), or fails to start after it made the terminal raw (a non-root run with
# --require-backstop: no eBPF backstop without root).
for sig in SEGV USR1; do
	tmx new-session -d -s "kill$sig" -x 80 -y 24 "env TERM=screen sh -c 'stty -g >$TMP/stty0-$sig; \
		$SUPERVISOR run -q --config-dir $CFG -- sh -c \"echo ready-$sig; exec sleep 100\"; \
		stty -g >$TMP/stty-$sig; sleep 100'"
	wait_pane "kill$sig" "^ready-$sig"
	sv_pid=$(pgrep -P "$(tmx display -p -t "kill$sig" '#{pane_pid}')" -f 'cloister-supervisor run' | head -n 1)
	[ -n "$sv_pid" ] && kill -"$sig" "$sv_pid"
	i=0
	while [ ! -s "$TMP/stty-$sig" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	tap_is "$(cat "$TMP/stty-$sig" 2>&1)" "$(cat "$TMP/stty0-$sig" 2>&1)" \
		"run killed by SIG$sig: the terminal has its modes back" "$(pane "kill$sig")"
	tmx kill-session -t "kill$sig"
done
# The terminal closes under a running agent: run ends, and the sandbox with it.
tmx new-session -d -s hup -x 80 -y 24 "env TERM=screen $SUPERVISOR run -q --config-dir $CFG --name hup$$ -- sh -c 'echo hup-ready; exec sleep 1000'"
wait_pane hup '^hup-ready'
sv_pid=$(pgrep -P "$(tmx display -p -t hup '#{pane_pid}')" -f 'cloister-supervisor run' | head -n 1)
[ -z "$sv_pid" ] && sv_pid=$(tmx display -p -t hup '#{pane_pid}')
tmx kill-session -t hup
i=0
while kill -0 "$sv_pid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
tap_ok "$(kill -0 "$sv_pid" 2>/dev/null && echo 1 || echo 0)" \
	"the terminal closes (hang-up): run ends" "pid $sv_pid: $(ps -o stat,cmd -p "$sv_pid" 2>&1)"
i=0
while pgrep -f "sleep 1000" >/dev/null 2>&1 && pgrep -f "hup$$" >/dev/null 2>&1 && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
tap_ok "$(pgrep -f "name hup$$" >/dev/null 2>&1 && echo 1 || echo 0)" "... and leaves nothing running"

# An agent that dies on the alternate screen with the cursor hidden (a crashed full-screen
# program) does not leave the shell there.
cat >"$TMP/crash-agent.sh" <<'EOF'
printf '\033[?1049h\033[?25lfull-screen'
kill -9 $$
EOF
tmx new-session -d -s crashed -x 80 -y 24 \
	"env TERM=screen sh -c '$SUPERVISOR run -q --config-dir $CFG -- sh $TMP/crash-agent.sh; echo after-run; sleep 100'"
wait_pane crashed '^after-run'
tap_is "$(tmx display -p -t crashed '#{alternate_on} #{cursor_flag}')" "0 1" \
	"an agent killed on the alternate screen: the shell is back on the main screen, cursor shown" \
	"$(pane crashed)"
tmx kill-session -t crashed

shell_session failstart nobody
send failstart "stty -g >$U/r/stty-before; cd $U && ./cloister-supervisor run -q --require-backstop --config-dir $U/cfg -- true; echo \"rc=\$?\"; stty -g >$U/r/stty-after"
wait_pane failstart '^rc=[0-9]+$'
i=0
while [ ! -s "$U/r/stty-after" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tap_is "$(pane failstart | sed -n 's/^rc=//p'):$(cat "$U/r/stty-after" 2>&1)" \
	"125:$(cat "$U/r/stty-before" 2>&1)" \
	"a start that fails once the terminal is raw (125) gives it its modes back" "$(pane failstart)"

# ---- issue 11: a non-root domain ask left to time out, then typing at the agent's shell -----
# Used to stop the whole run ("[1]+ Stopped"), and fg stopped it again.
shell_session stopbug nobody
send stopbug "cd $U && ./cloister-supervisor run -q --config-dir $U/cfg -- sh"
send stopbug 'echo agent-up'
wait_pane stopbug '^agent-up$'
send stopbug 'curl -sS -m 1 http://unlisted.test/ ; echo "curl-rc=$?"'
wait_pane stopbug 'approval needed'
# the ask times out (2 s), the prompt goes, curl's output comes; then a person types
wait_pane stopbug '^curl-rc=' 15
send stopbug 'echo typed-after-the-ask'
wait_pane stopbug '^typed-after-the-ask$'
tap_ok $? "non-root: after an unanswered domain ask, typing at the agent's shell works" "$(pane stopbug)"
tap_ok "$(pane stopbug | grep -c Stopped)" "... and the run is not stopped" "$(pane stopbug)"
send stopbug exit

# Ctrl-Z and fg without root too (the agent is traced there: the ptrace backstop).
shell_session jobnobody nobody
send jobnobody "cd $U && ./cloister-supervisor run -q --config-dir $U/cfg -- sh -c 'echo ready; read x; echo \"got=\$x\"'"
wait_pane jobnobody '^ready'
tmx send-keys -t jobnobody C-z
wait_pane jobnobody 'Stopped'
tap_like "$(pane jobnobody)" 'Stopped' "non-root: Ctrl-Z stops the agent and run with it" "$(pane jobnobody)"
send jobnobody fg
send jobnobody hello
wait_pane jobnobody 'got=hello'
tap_like "$(pane jobnobody)" 'got=hello' "non-root: fg, and the agent reads what is typed" "$(pane jobnobody)"
tmx kill-server 2>/dev/null

# ---- pipes, files, no terminal -----------------------------------------------------------------
printf 'from a file\nline 2\n' >"$TMP/input"
"$PTY" --ctty - -- sh -c "'$SUPERVISOR' run -q --config-dir '$CFG' -- sh -c 'echo hi; tty' | cat >'$TMP/piped'" \
	</dev/null >/dev/null 2>"$TERMLOG"
tap_is "$(cat "$TMP/piped" 2>&1)" "hi
/dev/pts/0" "run ... | cat: stdout is the pipe; stdin is the agent's own terminal" "$(screen_text <"$TERMLOG")"
timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run -q --config-dir "$CFG" -- cat <"$TMP/input" >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:$(cat "$TMP/input")" "run ... < file: the agent reads the file" "$(diag)"
cat >"$TMP/noterm.sh" <<'EOF'
[ -t 0 ] || [ -t 1 ] || [ -t 2 ] && echo has-tty || echo no-tty
(: </dev/tty) 2>/dev/null && echo has-ctty || echo no-ctty
EOF
# run's controlling terminal is the test pty, but none of its fds 0-2 is a terminal.
"$PTY" --ctty - -- sh -c "'$SUPERVISOR' run -q --config-dir '$CFG' -- sh '$TMP/noterm.sh' </dev/null >'$OUT' 2>&1" \
	</dev/null >/dev/null 2>&1
tap_is "$(cat "$OUT")" "no-tty
no-ctty" "no terminal among run's fds (its own controlling terminal aside): the agent has none, /dev/tty fails"

# ---- the supervisor's lines, and run --help ---------------------------------------------------
evil=$(printf '%s/r/evil\033]0;pwned\007\033[2J' "$U")
# shellcheck disable=SC2016 # the agent's shell expands these
for who in root nobody; do
	rm -f "$U"/r/evil*
	cp /usr/bin/true "$evil"
	chmod 755 "$evil"
	if [ "$who" = root ]; then
		sv -- sh -c '"$1"; echo "status $?"' sh "$evil"
	else
		(cd "$U" && timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
			--clear-groups env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
			XDG_STATE_HOME="$U/state" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
			-- sh -c '"$1"; echo "status $?"' sh "$evil") </dev/null >"$OUT" 2>"$ERR"
		rc=$?
	fi
	tap_like "$(cat "$ERR")" 'exec .*/r/evil\\x1b\]0;pwned\\x07\\x1b\[2J denied' \
		"$who: a denied file's name is printed with its control characters escaped" "$(diag)"
	tap_ok "$(grep '^cloister:' "$ERR" | LC_ALL=C grep -c "$(printf '[\033\007]')")" \
		"$who: the supervisor printed none of them raw" "$(diag)"
done
"$SUPERVISOR" run --help 2>&1 | sed '/^options:/,$d' >"$OUT"
tap_ok "$(grep -c 'loopback only' "$OUT"; grep -q 'proxy' "$OUT" || echo noproxy)" \
	"run --help says the network goes through the proxy, not \"loopback only\"" "$(cat "$OUT")"

tap_done
