#!/bin/sh
# `cloister-supervisor run`: allowed programs run with their output and exit status, denied ones
# fail with EACCES and the rule's file:line, grandchildren are intercepted, the audit log has one
# JSON line per verdict; usage errors exit 64, a broken config 78 with file:line:column; the
# built-in default config works at all. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 28
tap_plan 30

# Line numbers matter: the deny rule on /usr/bin/id is line 10.
write_config <<'EOF'
exec:
  security: allowlist
  ask: off
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/echo"
    - path: "/usr/bin/true"
  deny:
    - path: "/usr/bin/id"
  defaults: false
EOF

# ---- allowed ----
sv --ask none -- sh -c 'echo "hello from the agent"; /usr/bin/echo second; exit 0'
tap_is "$rc:$(cat "$OUT")" "0:hello from the agent
second" "an allowed command runs, its output reaches stdout, status 0"

sv --ask none -- sh -c 'exit 3'
tap_is "$rc" 3 "the agent's exit status 3 is run's"

sv --ask none -- sh -c 'kill -USR1 $$'
tap_is "$rc" 138 "an agent killed by SIGUSR1 gives 128+10"

sv --ask none -- /usr/bin/true
tap_is "$rc" 0 "an agent given by absolute path runs"

sv --ask none -- "$TMP/no-such-agent"
tap_like "$rc $(cat "$ERR")" "^127 cloister: cannot run $TMP/no-such-agent: No such file" \
	"an agent that does not exist: 127 and why" "$(diag)"

# ---- denied ----
audit_reset
sv --ask none -- sh -c '/usr/bin/id; echo "status $?"'
tap_is "$(cat "$OUT")" "status 126" "a denied exec fails in the agent: sh reports 126"
tap_like "$(cat "$ERR")" 'Permission denied' "the agent sees EACCES (Permission denied)" "$(diag)"
tap_like "$(cat "$ERR")" \
	'^cloister: exec /usr/bin/id denied: exec\.deny\[0\] path "/usr/bin/id" \(.*/cfg/config\.yaml:10\)$' \
	"the supervisor's stderr names the deny rule and its file:line" "$(diag)"

if command -v jq >/dev/null 2>&1; then
	bad=$(jq -c . "$AUDIT" 2>&1 >/dev/null)
	tap_is "${bad:-valid}" valid "every audit log line is JSON"
	got=$(jq -r 'select(.exe == "/usr/bin/id") |
		[.verdict, .kind, .decided_by, (.argv | join(" ")), .rule] | join("|")' "$AUDIT" | head -n 1)
	tap_like "$got" '^deny\|exec\|policy\|/usr/bin/id\|exec\.deny\[0\] .*config\.yaml:10\)$' \
		"the audit log has the denial with verdict, argv and the rule's file:line"
	missing=$(jq -r '[ "time", "sandbox", "pid", "uid", "exe", "argv", "cwd", "verdict", "rule",
		"decided_by", "latency_ms" ] - keys | join(",")' "$AUDIT" | sort -u | tr '\n' ' ')
	tap_is "$missing" " " "every audit line has time, sandbox, pid, uid, exe, argv, cwd, verdict, rule, decided_by, latency_ms"
	got=$(jq -r 'select(.exe == "/usr/bin/dash") | .verdict + "|" + .rule' "$AUDIT" | head -n 1)
	tap_like "$got" '^allow\|exec\.allow\[0\] path "/usr/bin/dash" \(.*config\.yaml:6\)$' \
		"the audit log has the allowed shell with its rule"
else
	tap_skip "audit JSON" "jq is not installed"
	tap_skip "audit denial" "jq is not installed"
	tap_skip "audit allow" "jq is not installed"
	tap_skip "audit keys" "jq is not installed"
fi
tap_is "$(stat -c %a "$AUDIT" 2>&1)" 600 "the audit log is mode 0600"

sv -q --ask none -- sh -c '/usr/bin/id; echo "status $?"'
tap_is "$(cat "$OUT"):$(grep -c '^cloister:' "$ERR")" "status 126:0" \
	"-q: the denial still happens, and run prints nothing of its own" "$(diag)"

# ---- grandchildren ----
audit_reset
sv --ask none -- sh -c 'sh -c "sh -c \"/usr/bin/echo deep\""'
tap_is "$rc:$(cat "$OUT")" "0:deep" "a great-grandchild's allowed exec runs"
tap_is "$(audit_count '"exe":"/usr/bin/dash".*"verdict":"allow"')" 3 \
	"each of the three nested shells was decided"

audit_reset
sv --ask none -- sh -c 'sh -c "sh -c /usr/bin/id; echo inner \$?"; echo outer $?'
tap_is "$(cat "$OUT")" "inner 126
outer 0" "a grandchild's denied exec fails with EACCES (126 from sh)" "$(diag)"
tap_is "$(audit_count '"exe":"/usr/bin/id".*"verdict":"deny"')" 1 \
	"the grandchild's denial is in the audit log"

# ---- --project: the project file's rules extend the global ones ----
mkdir -p "$CFG/projects"
printf 'exec:\n  allow:\n    - path: "/usr/bin/uname"\n' >"$CFG/projects/demo.yaml"
sv --ask none -- sh -c '/usr/bin/uname -s; echo "status $?"'
tap_is "$(cat "$OUT")" "status 126" "without --project, the project's allow rule does not apply"
audit_reset
sv --ask none --project demo -- sh -c '/usr/bin/uname -s; echo "status $?"'
tap_is "$(cat "$OUT")" "Linux
status 0" "with --project demo, projects/demo.yaml's allow rule applies" "$(diag)"
tap_is "$(audit_count '"project":"demo".*"exe":"/usr/bin/uname".*projects/demo\.yaml:3')" 1 \
	"the audit line names the project and the project file's line"

# ---- the built-in default config, untouched ----
mkdir -p "$TMP/empty-config"
timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run --config-dir "$TMP/empty-config" --ask none \
	-- sh -c 'echo default works' </dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc:$(cat "$OUT")" "0:default works" "run works on the built-in default config" "$(diag)"

# ---- usage and config errors ----
usage_status() {
	"$SUPERVISOR" run --config-dir "$CFG" "$@" </dev/null >/dev/null 2>"$ERR"
	echo $?
}
tap_is "$(usage_status)" 64 "run without an agent exits 64"
tap_is "$(usage_status --ask carrier-pigeon -- true)" 64 "--ask with an unknown approver exits 64"
tap_is "$(usage_status --ask-timeout soon -- true)" 64 "--ask-timeout that is no duration exits 64"
tap_is "$(usage_status --no-such-option -- true)" 64 "an unknown option exits 64"
tap_is "$(usage_status --project ../etc -- true)" 64 "a --project name with a path exits 64"
tap_is "$(usage_status --ask-tty "$TMP/no-such-tty" -- true)" 64 \
	"an --ask-tty that is not a terminal exits 64 (no prompt nobody sees)"

# A home that does not exist is not created to hold the config and audit directories.
HOME=$TMP/no-such-home XDG_CONFIG_HOME='' XDG_STATE_HOME='' timeout 10 "$SUPERVISOR" run \
	--ask none -- /usr/bin/true </dev/null >"$OUT" 2>"$ERR"
rc=$?
if [ "$rc" -eq 0 ] && [ ! -e "$TMP/no-such-home" ]; then st=0; else st=1; fi
tap_ok "$st" "a missing HOME is not created (the run still works: $rc)" "$(diag)"

mkdir -p "$TMP/broken"
printf 'exec:\n  security: allowlist\n  ask: sometimes\n' >"$TMP/broken/config.yaml"
timeout 10 "$SUPERVISOR" run --config-dir "$TMP/broken" --ask none -- /usr/bin/true \
	</dev/null >"$OUT" 2>"$ERR"
rc=$?
tap_like "$rc $(cat "$ERR")" '^78 .*broken/config\.yaml:3:8: exec\.ask' \
	"a broken config exits 78 and names file:line:column" "$(diag)"

tap_done
