#!/bin/sh
# `run --ask web` on a terminal: while asks wait, the terminal's window title says how many and
# where the dashboard is ("Cloister: 1 ask waiting — http://127.0.0.1:PORT"), the title the
# terminal had pushed first and popped once none waits; the agent's screen gets none of it as
# text. Driven through a test pty (tests/helpers/ptyanswer); answered with the CLI. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 7
tap_plan 7

XDG_RUNTIME_DIR=$TMP/rt
export XDG_RUNTIME_DIR
mkdir -m 0700 "$XDG_RUNTIME_DIR"
TERMLOG=$TMP/terminal

write_config <<'EOF2'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
EOF2
# The agent draws on the alternate screen while it asks, as full-screen agents do.
cat >"$TMP/agent.sh" <<'EOF2'
printf '\033[?1049hfull screen\n'
/usr/bin/id -u >/dev/null
echo "id $?" >"$1/result"
printf '\033[?1049l'
echo agent-done
EOF2
# In $TMP: the worktree, the one place the agent may write (the file system's confinement).
(cd "$TMP" && exec "$HELPERS/ptyanswer" --ctty - -- timeout -k 5 "$SV_TIMEOUT" "$SUPERVISOR" run \
	-q --config-dir "$CFG" --ask web --ask-timeout 30s --name status \
	--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off \
	-- sh "$TMP/agent.sh" "$TMP") </dev/null >"$OUT" 2>"$TERMLOG" &
PTYPID=$!
on_exit "kill $PTYPID 2>/dev/null"

id=
i=0
while [ -z "$id" ] && [ $i -lt 200 ]; do
	id=$(timeout 10 "$SUPERVISOR" pending 2>/dev/null | awk '$2 == "exec" && /id -u/ { print $1 }' | head -n 1)
	[ -n "$id" ] || sleep 0.05
	i=$((i + 1))
done
tap_like "$id" '^[0-9a-f]{12}$' "the ask waits for the dashboard or the CLI"
url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$XDG_RUNTIME_DIR"/cloister/api/*.json | head -n 1)
out=$(timeout 10 "$SUPERVISOR" approve "$id" 2>&1)
tap_is "$?:$out" "0:approved $id" "approved with the CLI"
wait "$PTYPID"
rc=$?
tap_is "$rc:$(cat "$TMP/result" 2>/dev/null)" "0:id 0" "the agent ran on and run ended"

seen=$(cat -v "$TERMLOG")
esc=$(printf '\033')
bel=$(printf '\007')
title="${esc}]2;Cloister: 1 ask waiting — $url${bel}"
tap_ok "$(grep -qF "${esc}[22;2t${title}" "$TERMLOG" && echo 0 || echo 1)" \
	"the title says \"Cloister: 1 ask waiting — $url\", the terminal's own title pushed first" "$seen"
tap_ok "$(grep -qF "${esc}[23;2t" "$TERMLOG" && echo 0 || echo 1)" \
	"the terminal's own title is popped back once nothing waits" "$seen"
# The status is in the title only: no text line on the agent's screen.
tap_is "$(printf '%s' "$(cat "$TERMLOG")" | sed "s/${esc}]2;[^${bel}]*${bel}//g" | grep -c 'ask waiting')" 0 \
	"nothing of it is drawn on the agent's screen" "$seen"
tap_like "$(cat "$TERMLOG")" 'agent-done' "the agent's own output is there" "$seen"
tap_done
