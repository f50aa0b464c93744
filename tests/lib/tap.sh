# Sourced by the shell tests: TAP output and a temp dir removed on exit.
#   tap_plan N; tap_ok COND_STATUS "name"; tap_skip "name" "reason"; tap_done
#   tap_todo "HOLE"   the cases that follow (tap_ok, tap_is, tap_like) show a known hole, an
#                     attack that still works: each carries TAP's "# TODO HOLE" directive, so
#                     it is reported but does not fail the run (tests/run-tests lists it, and
#                     says when one passes). tap_todo "" ends it. Whoever closes the hole
#                     removes the tap_todo line.
# $SUPERVISOR is the binary under test, $HELPERS the test helper programs (set by make).
# shellcheck shell=sh

: "${SUPERVISOR:?run through make check (SUPERVISOR is not set)}"
tap_n=0
tap_failed=0
tap_todo_hole=""
# Not under /tmp: a sandbox's /tmp is private, and what a test gives its agent must be visible
# there wherever the run starts. For the same reason the helper programs are copied here when
# the checkout itself lives under /tmp (a clone in /tmp/x, as CI may make).
TMP=$(mktemp -d "${TMPDIR:-/var/tmp}/cloister-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
case "${HELPERS:-}" in
/tmp/*)
	cp -a "$HELPERS" "$TMP/helpers"
	HELPERS=$TMP/helpers
	;;
esac

tap_plan() { echo "1..$1"; }

tap_todo() { tap_todo_hole=$1; }

# tap_ok STATUS NAME [DIAGNOSTIC]: STATUS 0 is a pass.
tap_ok() {
	tap_n=$((tap_n + 1))
	tap_ok_todo=${tap_todo_hole:+ # TODO $tap_todo_hole}
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2$tap_ok_todo"
	else
		echo "not ok $tap_n - $2$tap_ok_todo"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
		[ -n "$tap_todo_hole" ] || tap_failed=$((tap_failed + 1))
	fi
}

tap_skip() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n # SKIP $1: $2"
}

# tap_is GOT WANT NAME
tap_is() {
	if [ "$1" = "$2" ]; then
		tap_ok 0 "$3"
	else
		tap_ok 1 "$3" "got:  $1
want: $2"
	fi
}

# tap_like TEXT REGEX NAME
tap_like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		tap_ok 0 "$3"
	else
		tap_ok 1 "$3" "text: $1
does not match: $2"
	fi
}

tap_done() { [ "$tap_failed" -eq 0 ]; }
