#!/bin/sh
# The dashboard's pure helpers (supervisor/web/dashboard/util.js: wildcard patterns, escapes of
# hidden characters, countdowns, backoff, banners, confirmations) in node, without a browser.
# Prints TAP.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

if ! command -v node >/dev/null 2>&1; then
	echo "1..1"
	tap_skip "browser_util" "node is not installed (scripts/install-deps installs nodejs)"
	exit 0
fi
timeout -k 5 60 node "$(dirname "$0")/../browser/util.test.mjs"
