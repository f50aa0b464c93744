# Sourced by the shell tests (run_common.sh does): bounded waits on a condition, never a fixed
# sleep, so that a loaded machine (a first run, another checkout's suite) only makes a test
# slower, not wrong.
#
#   wait_until SECONDS COMMAND [ARGS…]   run COMMAND every 50 ms until it succeeds, at most
#                                        SECONDS (whole) long; status 0 when it did, 1 when
#                                        time ran out
#   wait_file SECONDS FILE               wait_until FILE exists and is not empty
#   wait_exists SECONDS FILE             wait_until FILE exists
# shellcheck shell=sh

wait_until() {
	wait_until_end=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		[ "$(date +%s)" -lt "$wait_until_end" ] || return 1
		sleep 0.05
	done
}

wait_file() { wait_until "$1" test -s "$2"; }
wait_exists() { wait_until "$1" test -e "$2"; }
