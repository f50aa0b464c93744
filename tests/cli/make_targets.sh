#!/bin/sh
# The Makefile: `make` (all) builds every program the README names, and `test` is phony (a
# file named test would otherwise make `make test` do nothing). Asks make only (-n, -p):
# nothing is built. Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloister-make-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# The programs the README tells the user about.
names=$(grep -oE '\bcloister-(supervisor|shim|oci-hook)\b' README.md | sort -u)
n=0
for name in $names; do n=$((n + 1)); done
echo "1..$((n + 1))"

# A build directory of its own, so the dry run lists every link step.
MAKEFLAGS='' MAKELEVEL='' make -n V=1 BUILD="$tmp/build" all >"$tmp/plan" 2>&1
i=0
failed=0
for name in $names; do
	i=$((i + 1))
	if grep -q -- "-o $tmp/build/bin/$name\b" "$tmp/plan"; then
		echo "ok $i - make all builds $name"
	else
		echo "not ok $i - make all builds $name"
		failed=1
	fi
done
i=$((i + 1))
if MAKEFLAGS='' MAKELEVEL='' make -pn no-such-target 2>/dev/null | grep -A2 '^test:' | grep -q 'Phony target'; then
	echo "ok $i - test is a phony target"
else
	echo "not ok $i - test is a phony target"
	failed=1
fi
exit $failed
