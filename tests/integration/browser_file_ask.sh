#!/bin/sh
# File write asks (fs.ask: on-write) on the dashboard, in headless Chromium
# (tests/browser/file_ask.mjs, playwright-core, Debian's /usr/bin/chromium), against
# `cloister-supervisor run --ask web --project P`: a file card offers Approve once / session /
# project / global and Deny once; Approve → Project and Approve → Global land in the decisions
# files (fs: allow:), and a next run (nobody to answer: --ask none) writes both files with no
# ask while a denied one is asked again (the fallback denies). Prints TAP (the plan comes last).
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/browser_common.sh
. "$(dirname "$0")/../lib/browser_common.sh"
rm -f "$ARTIFACTS"/file-*.png

WT=$TMP/wt
RES=$WT/res
mkdir -p "$RES"
# This run's supervisors find no other run's dashboard.
XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 CHROMIUM
PROJECT=bfa$$
FP=$HOME/.projrc
FG=$HOME/.globrc
FD=$HOME/.denyrc
PROJECT_FILE=$CFG/decisions/projects/$PROJECT.yaml
GLOBAL_FILE=$CFG/decisions/global.yaml

write_config <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
fs:
  ask: on-write
EOF

# The agent waits for the page (RES/go), then writes the three files one after the other,
# then waits for the page to finish (RES/done).
cat >"$TMP/agent.sh" <<EOF
i=0
while [ ! -e "$RES/go" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
echo p >>"$FP"
echo "project \$?" >>"$RES/status"
echo g >>"$FG"
echo "global \$?" >>"$RES/status"
(echo d >>"$FD") 2>/dev/null
echo "deny \$?" >>"$RES/status"
# The run lives until the page is done (its streams end with it).
i=0
while [ ! -e "$RES/done" ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done
EOF

(cd "$WT" && exec timeout -k 5 120 "$SUPERVISOR" run -v --config-dir "$CFG" --project "$PROJECT" \
	--name "bfa$$" --ask web --ask-timeout 60s --listen-approval 127.0.0.1:0 \
	--listen-tokens off --listen-request off -- sh "$TMP/agent.sh" </dev/null >"$OUT" 2>"$ERR") &
SVPID=$!
on_exit "kill $SVPID 2>/dev/null"
login=
i=0
while [ -z "$login" ] && kill -0 "$SVPID" 2>/dev/null && [ $i -lt 200 ]; do
	login=$(sed -n 's|.*dashboard at \(http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]*\).*|\1|p' "$ERR" | head -n 1)
	[ -n "$login" ] || sleep 0.1
	i=$((i + 1))
done
tap_ok "$([ -n "$login" ] && echo 0 || echo 1)" "run -v says where the dashboard is" "$(diag)"
[ -n "$login" ] || {
	echo "1..$tap_n"
	exit 1
}

DASHBOARD_URL=${login%%/\?token=*} DASHBOARD_LOGIN=$login RESULT_DIR=$RES ARTIFACTS=$ARTIFACTS \
	FILE_PROJECT=$FP FILE_GLOBAL=$FG FILE_DENY=$FD TAP_START=$((tap_n + 1)) \
	timeout -k 5 120 node "$BROWSER_DIR/file_ask.mjs" >"$TMP/node.tap" 2>"$TMP/node.err"
nrc=$?
cat "$TMP/node.tap"
n=$(grep -cE '^(not )?ok [0-9]+' "$TMP/node.tap")
f=$(grep -cE '^not ok [0-9]+' "$TMP/node.tap")
tap_n=$((tap_n + n))
tap_failed=$((tap_failed + f))
if [ "$nrc" -ne 0 ] && [ "$f" -eq 0 ]; then
	tap_ok 1 "file_ask.mjs exited with status $nrc" "$(head -c 3000 "$TMP/node.err")"
elif [ "$f" -gt 0 ]; then
	head -c 3000 "$TMP/node.err" | sed 's/^/# /'
fi

wait "$SVPID"
rc=$?
tap_is "$rc:$(cat "$FP" "$FG" 2>&1 | tr '\n' ' ')" "0:p g " "the run ends and the approved writes landed" "$(diag)"
tap_ok "$([ ! -e "$FD" ] && echo 0 || echo 1)" "the denied file was not made"
tap_like "$(cat "$PROJECT_FILE" 2>&1)" "fs:
  allow:
    - \"$FP\"" "Approve → Project: the project's decisions file has the fs: entry" "$(cat "$PROJECT_FILE" 2>&1)"
tap_like "$(cat "$GLOBAL_FILE" 2>&1)" "fs:
  allow:
    - \"$FG\"" "Approve → Global: the global decisions file has the fs: entry" "$(cat "$GLOBAL_FILE" 2>&1)"
tap_ok "$(grep -q denyrc "$PROJECT_FILE" "$GLOBAL_FILE" 2>/dev/null && echo 1 || echo 0)" \
	"the denial is kept nowhere"

# ---- the next run: nobody answers, and nothing is asked for the two remembered files ----
audit_reset
# From the same project directory (sv's would be $TMP, which holds $HOME: every write allowed).
(cd "$WT" && exec timeout -k 5 30 "$SUPERVISOR" run --config-dir "$CFG" --project "$PROJECT" \
	--name "bfa$$" --ask none --listen-approval 127.0.0.1:0 --listen-tokens off \
	--listen-request off -- \
	sh -c "echo p2 >>'$FP'; echo \"p \$?\"; echo g2 >>'$FG'; echo \"g \$?\"; (echo d2 >>'$FD') 2>/dev/null; echo \"d \$?\"") \
	</dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$(tr '\n' ' ' <"$OUT")" "p 0 g 0 d 2 " \
	"the next run writes both remembered files; the denied one is asked again (the fallback denies)" "$(diag)"
tap_is "$(audit_count '"kind":"file".*"verdict":"ask"')" 1 "... one ask in the audit log, for the denied file only"

echo "# screenshots: $ARTIFACTS/"
echo "1..$tap_n"
tap_done
