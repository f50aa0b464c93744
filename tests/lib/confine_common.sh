# Sourced by tests/integration/run_confine_*.sh after run_common.sh: the same agent attacked as
# root and as an unprivileged user.
#   wait_file FILE [TENTHS]       until FILE exists (default 10 s); 1 if it never does
#   unix_server ADDR [AS-NOBODY]  a tests/helpers/unixsock server on ADDR (a path or @name),
#                                 as root or as nobody, listening when this returns; killed at
#                                 exit
#   nobody_setup [HELPER…]        $U: nobody's own copy of the supervisor and helpers ($UB),
#                                 config ($U/cfg), home ($U/home), state; $NOBODY its uid
#   sv_nobody [RUN OPTIONS] -- AGENT   sv, as nobody, in $U
#   as_nobody CMD…                CMD as nobody (setpriv)
# shellcheck shell=sh

NOBODY=65534

wait_file() {
	wait_file_n=0
	while [ ! -e "$1" ]; do
		[ "$wait_file_n" -ge "${2:-100}" ] && return 1
		sleep 0.1
		wait_file_n=$((wait_file_n + 1))
	done
	return 0
}

as_nobody() {
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"
}

unix_server_n=0
unix_server() {
	unix_server_n=$((unix_server_n + 1))
	ready=$TMP/ready.$unix_server_n
	if [ "${2:-}" = nobody ]; then
		ready=$U/ready/$unix_server_n
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			"$UB/unixsock" serve "$1" "$ready" &
	else
		"$HELPERS/unixsock" serve "$1" "$ready" &
	fi
	# setpriv execs the server: $! is the server itself.
	case $1 in
	@*) on_exit "kill $! 2>/dev/null" ;;
	*) on_exit "kill $! 2>/dev/null; rm -f '$1'" ;;
	esac
	wait_file "$ready" || echo "# unixsock server on $1 did not start"
}

# shellcheck disable=SC2120 # the helpers to copy: none for some tests
nobody_setup() {
	U=$TMP/nobody
	UB=$U/bin
	chmod 711 "$TMP"
	mkdir -p "$U/cfg" "$UB" "$U/home" "$U/state" "$U/ready"
	cp "$SUPERVISOR" "$UB/cloister-supervisor"
	for h in "$@"; do
		cp "$HELPERS/$h" "$UB/$h"
	done
	cp "$CFG/config.yaml" "$U/cfg/config.yaml"
	chown -R "$NOBODY:$NOBODY" "$U"
}

# The attack tests' start: a config that decides every exec, with the built-in rules off (so
# nothing is allowed by default), then nobody's directories (nobody_setup).
attack_setup() {
	write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF
	nobody_setup
}

sv_nobody() {
	(cd "$U" && exec timeout -k 5 "$SV_TIMEOUT" setpriv --reuid=$NOBODY --regid=$NOBODY \
		--clear-groups env HOME="$U/home" XDG_CONFIG_HOME="$U/home/.config" \
		XDG_STATE_HOME="$U/state" "$UB/cloister-supervisor" run --config-dir "$U/cfg" "$@") \
		</dev/null >"$OUT" 2>"$ERR"
	# shellcheck disable=SC2034 # read by the test, as after run_common.sh's sv
	rc=$?
}
