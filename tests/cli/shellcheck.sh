#!/bin/sh
# Every shell script in the repository passes shellcheck (TAP, one case per script).
set -u
cd "$(dirname "$0")/../.." || exit 1
if ! command -v shellcheck >/dev/null 2>&1; then
	echo "1..0 # SKIP shellcheck is not installed (scripts/install-deps installs it)"
	exit 0
fi
scripts=$(git ls-files 2>/dev/null | while read -r f; do
	case "$f" in
	*.sh | scripts/* | tests/run-tests | .ci/run) echo "$f" ;;
	docker/*) head -n 1 "$f" | grep -q '^#!.*sh' && echo "$f" ;;
	esac
done)
n=0
for f in $scripts; do n=$((n + 1)); done
echo "1..$n"
i=0
failed=0
for f in $scripts; do
	i=$((i + 1))
	if out=$(shellcheck -x "$f" 2>&1); then
		echo "ok $i - shellcheck $f"
	else
		echo "not ok $i - shellcheck $f"
		printf '%s\n' "$out" | sed 's/^/# /'
		failed=1
	fi
done
exit $failed
