#!/bin/sh
# Nothing but the proxy is reachable through a socket the agent did not create (issue 12,
# "same-uid unix sockets"), as root and as an unprivileged user: servers of the agent's own uid
# listening in /tmp, in $XDG_RUNTIME_DIR and /run/user/UID, at $SSH_AUTH_SOCK, under $HOME and
# under /var/tmp (the host's socket table), a real tmux server, and an abstract socket in a
# network namespace of the sandbox's own and on the host's network; each answers outside the
# sandbox and not inside. The agent's own sockets still work. Its environment lacks what points
# at those programs and the user's credentials; --keep-env passes one on.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=31
run_needs_root $PLAN
run_needs_tools $PLAN setpriv tmux
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
S=$HELPERS/unixsock
R=$TMP/r
mkdir -p "$R"

# ---- root's servers -----------------------------------------------------------------------------
ELSEWHERE=$(mktemp -d /tmp/cloister-elsewhere.XXXXXX)     # under /tmp, outside the run's dir
VARTMP=$(mktemp -d /var/tmp/cloister-sock.XXXXXX)          # not hidden: the socket table's job
on_exit "rm -rf '$ELSEWHERE' '$VARTMP'"
RUNUSER=/run/user/0
if [ ! -d "$RUNUSER" ]; then
	mkdir -p "$RUNUSER" && chmod 700 "$RUNUSER"
	on_exit "rmdir '$RUNUSER' 2>/dev/null"
fi
XDG=$TMP/xdg-runtime
mkdir -p "$XDG" "$HOME/.ssh/agent.$$"
chmod 700 "$XDG"
unix_server "$ELSEWHERE/tmp.sock"
unix_server "$RUNUSER/cloister-test-$$.sock"
unix_server "$XDG/bus"
unix_server "$HOME/.ssh/agent.$$/agent.sock"
unix_server "$HOME/home.sock"
unix_server "$VARTMP/var.sock"
unix_server "$TMP/workdir.sock"
unix_server "@cloister-test-$$"
TMUX_NAME=cloister-test-$$
tmux -L "$TMUX_NAME" -f /dev/null new-session -d -s t 'sleep 600'
on_exit "tmux -L '$TMUX_NAME' kill-server 2>/dev/null"
TMUX_SOCK=$(tmux -L "$TMUX_NAME" display-message -p '#{socket_path}')

host_ok=0
for a in "$ELSEWHERE/tmp.sock" "$RUNUSER/cloister-test-$$.sock" "$XDG/bus" \
	"$HOME/.ssh/agent.$$/agent.sock" "$HOME/home.sock" "$VARTMP/var.sock" "$TMP/workdir.sock" \
	"@cloister-test-$$"; do
	[ "$("$S" connect "$a")" = hello ] || host_ok=1
done
tmux -L "$TMUX_NAME" list-sessions >/dev/null 2>&1 || host_ok=1
tap_ok $host_ok "outside the sandbox every server answers (the test's premise)"

cat >"$TMP/agent.sh" <<EOF
for a in tmp:$ELSEWHERE/tmp.sock runuser:$RUNUSER/cloister-test-$$.sock xdg:$XDG/bus \
	ssh:$HOME/.ssh/agent.$$/agent.sock home:$HOME/home.sock var:$VARTMP/var.sock \
	workdir:$TMP/workdir.sock abstract:@cloister-test-$$; do
	$S connect "\${a#*:}" >$R/\${a%%:*} 2>&1
done
tmux -S '$TMUX_SOCK' new-window 'touch $R/tmux-pwned' >$R/tmux 2>&1; echo "rc=\$?" >>$R/tmux
tmux -L '$TMUX_NAME' new-window 'touch $R/tmux-pwned' >>$R/tmux 2>&1; echo "rc=\$?" >>$R/tmux
# its own sockets work, by path and abstract
rm -f $TMP/own.sock
$S serve $TMP/own.sock $R/own.ready & p1=\$!
$S serve @own-$$ $R/own-abstract.ready & p2=\$!
while [ ! -e $R/own.ready ] || [ ! -e $R/own-abstract.ready ]; do sleep 0.05; done
$S connect $TMP/own.sock >$R/own 2>&1
$S connect @own-$$ >$R/own-abstract 2>&1
kill \$p1 \$p2
env >$R/env
EOF

# check WHO: every host server refused to the agent, its own sockets answer.
check() {
	for n in tmp runuser xdg ssh home var workdir; do
		case $n in
		tmp) what="a server in /tmp" ;;
		runuser) what="a server in /run/user/UID" ;;
		xdg) what="a server in \$XDG_RUNTIME_DIR" ;;
		ssh) what="the agent socket at \$SSH_AUTH_SOCK" ;;
		home) what="a server under \$HOME" ;;
		var) what="a server under /var/tmp" ;;
		workdir) what="a server in the working directory" ;;
		esac
		tap_like "$(cat "$R/$n" 2>&1)" '^connect: ' "$1: $what is out of reach" "$(diag)"
	done
	tap_is "$(cat "$R/own" 2>&1) $(cat "$R/own-abstract" 2>&1)" "hello hello" \
		"$1: the agent's own sockets, by path and abstract, work" "$(diag)"
}

# ---- root, its own network namespace ----
XDG_RUNTIME_DIR=$XDG SSH_AUTH_SOCK=$HOME/.ssh/agent.$$/agent.sock TMUX=$TMUX_SOCK,1,0 \
	TMUX_PANE=%0 STY=1.pts-0.host DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG/bus DISPLAY=:0 \
	GITHUB_TOKEN=ghp_secretvalue AWS_SECRET_ACCESS_KEY=awsvalue DB_PASSWORD=pwvalue \
	ANTHROPIC_API_KEY=sk-ant-test MY_SERVICE_TOKEN=kept-on-purpose \
	sv -v --ask none --keep-env MY_SERVICE_TOKEN -- sh "$TMP/agent.sh"
tap_is "$rc" 0 "root: the run ends normally" "$(diag)"
check root
tap_like "$(cat "$R/abstract")" '^connect: ' "root: a host's abstract socket is out of reach"
tap_is "$(grep -c '^rc=1$' "$R/tmux")" 2 "root: the user's tmux server cannot be reached" \
	"$(cat "$R/tmux")"
tap_ok "$([ ! -e "$R/tmux-pwned" ] && echo 0 || echo 1)" "root: ... and opened no window"
envnames=$(sed 's/=.*//' "$R/env" | sort | tr '\n' ' ')
bad=""
for n in TMUX TMUX_PANE STY SSH_AUTH_SOCK DBUS_SESSION_BUS_ADDRESS DISPLAY GITHUB_TOKEN \
	AWS_SECRET_ACCESS_KEY DB_PASSWORD; do
	case " $envnames " in *" $n "*) bad="$bad $n" ;; esac
done
tap_is "$bad" "" "the agent's environment lacks the sockets' names and the credentials"
tap_like "$(grep -E '^(ANTHROPIC_API_KEY|MY_SERVICE_TOKEN)=' "$R/env" | sort | tr '\n' ' ')" \
	'^ANTHROPIC_API_KEY=sk-ant-test MY_SERVICE_TOKEN=kept-on-purpose $' \
	"the agent's API key stays, and --keep-env passes one on" "$(cat "$R/env")"
tap_like "$(cat "$ERR")" 'environment: removed .*GITHUB_TOKEN' "-v names what was removed" \
	"$(diag)"
tap_ok "$(grep -qE 'ghp_secretvalue|awsvalue|pwvalue' "$ERR" "$OUT" && echo 1 || echo 0)" \
	"... and never a value"

CLOISTER_API_TOKEN=supervisor-secret sv --ask none --keep-env CLOISTER_API_TOKEN -- /usr/bin/true
tap_is "$rc" 64 "--keep-env refuses the supervisor's own variables (usage error)" "$(diag)"

# ---- root, the host's network ----
rm -f "$R"/*
sv --ask none --net host -- sh "$TMP/agent.sh"
tap_is "$rc" 0 "root, --net host: the run ends normally" "$(diag)"
tap_like "$(cat "$R/abstract")" '^connect: ' \
	"root, --net host: a host's abstract socket is out of reach (Landlock scope)"
tap_like "$(cat "$R/tmp") $(cat "$R/runuser") $(cat "$R/home")" \
	'^connect: .* connect: .* connect: ' "root, --net host: path sockets stay out of reach"
tap_is "$(cat "$R/own" 2>&1) $(cat "$R/own-abstract" 2>&1)" "hello hello" \
	"root, --net host: the agent's own sockets work"

# ---- nobody ----
nobody_setup unixsock
as_nobody tmux -L "$TMUX_NAME-u" -f /dev/null new-session -d -s t 'sleep 600'
on_exit "setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups tmux -L '$TMUX_NAME-u' kill-server 2>/dev/null"
UTMUX=$(as_nobody tmux -L "$TMUX_NAME-u" display-message -p '#{socket_path}')
URUN=/run/user/$NOBODY
if [ ! -d "$URUN" ]; then
	mkdir -p "$URUN" && chown $NOBODY:$NOBODY "$URUN" && chmod 700 "$URUN"
	on_exit "rm -rf '$URUN'"
fi
UELSE=$(mktemp -d /tmp/cloister-elsewhere.XXXXXX)
chown $NOBODY "$UELSE"
on_exit "rm -rf '$UELSE'"
UR=$U/r
mkdir -p "$UR" "$U/home/.ssh/agent.$$"
chown -R $NOBODY:$NOBODY "$UR" "$U/home"
unix_server "$UELSE/tmp.sock" nobody
unix_server "$URUN/cloister-test-$$.sock" nobody
unix_server "$U/home/.ssh/agent.$$/agent.sock" nobody
unix_server "$U/home/home.sock" nobody
unix_server "@cloister-test-u-$$" nobody
cat >"$U/agent.sh" <<EOF
for a in tmp:$UELSE/tmp.sock runuser:$URUN/cloister-test-$$.sock \
	ssh:$U/home/.ssh/agent.$$/agent.sock home:$U/home/home.sock abstract:@cloister-test-u-$$; do
	$UB/unixsock connect "\${a#*:}" >$UR/\${a%%:*} 2>&1
done
tmux -S '$UTMUX' new-window 'touch $UR/tmux-pwned' >$UR/tmux 2>&1; echo "rc=\$?" >>$UR/tmux
EOF
chown $NOBODY "$U/agent.sh"
host_ok=0
for a in "$UELSE/tmp.sock" "$URUN/cloister-test-$$.sock" "$U/home/.ssh/agent.$$/agent.sock" \
	"$U/home/home.sock" "@cloister-test-u-$$"; do
	[ "$(as_nobody "$UB/unixsock" connect "$a")" = hello ] || host_ok=1
done
tap_ok $host_ok "non-root: outside the sandbox every server of nobody's answers"
SSH_AUTH_SOCK="$U/home/.ssh/agent.$$/agent.sock" sv_nobody --ask none -- sh "$U/agent.sh"
tap_is "$rc" 0 "non-root: the run ends normally" "$(diag)"
for n in tmp runuser ssh home abstract; do
	tap_like "$(cat "$UR/$n" 2>&1)" '^connect: ' "non-root: $n server is out of reach"
done
tap_is "$(grep -c '^rc=1$' "$UR/tmux")" 1 "non-root: the user's tmux server cannot be reached" \
	"$(cat "$UR/tmux")"
tap_ok "$([ ! -e "$UR/tmux-pwned" ] && echo 0 || echo 1)" "non-root: ... and opened no window"

tap_done
