# Sourced after run_common.sh by the browser tests (tests/integration/browser_*.sh) that drive
# the dashboard in headless Chromium. On sourcing: the whole test skips (plan 1..1) with the
# reason without root, node or Chromium; playwright-core is installed when missing (npm ci,
# pinned by tests/browser/package-lock.json, never a browser download), and the test fails
# when it cannot be. Then:
#   BROWSER_DIR                tests/browser, where the .mjs tests are
#   CHROMIUM                   Debian's Chromium ($CHROMIUM, or /usr/bin/chromium)
#   ARTIFACTS                  where the screenshots stay: $BUILD/test-artifacts/browser, made
# shellcheck shell=sh
# shellcheck disable=SC2034 # the variables set here are read by the tests

browser_root=$(cd "$(dirname "$0")/../.." && pwd)
BROWSER_DIR=$browser_root/tests/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
case ${BUILD:-build} in
/*) ARTIFACTS=${BUILD}/test-artifacts/browser ;;
*) ARTIFACTS=$browser_root/${BUILD:-build}/test-artifacts/browser ;;
esac

browser_skip_all() {
	echo "1..1"
	tap_skip "$(basename "$0" .sh)" "$1"
	exit 0
}
[ "$(id -u)" -eq 0 ] || browser_skip_all "needs root (namespaces, cgroup, eBPF backstop)"
command -v node >/dev/null 2>&1 ||
	browser_skip_all "node is not installed (scripts/install-deps installs nodejs)"
[ -x "$CHROMIUM" ] || browser_skip_all "$CHROMIUM is missing (scripts/install-deps installs chromium)"

if [ ! -d "$BROWSER_DIR/node_modules/playwright-core" ]; then
	(cd "$BROWSER_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 300 npm ci --no-audit --no-fund \
		--loglevel=error) >"$TMP/npm.log" 2>&1
fi
if [ ! -d "$BROWSER_DIR/node_modules/playwright-core" ]; then
	tap_ok 1 "playwright-core is installed in tests/browser/node_modules" "$(tail -n 20 "$TMP/npm.log")"
	# shellcheck disable=SC2154 # tap.sh counts the cases
	echo "1..$tap_n"
	exit 1
fi
mkdir -p "$ARTIFACTS"
