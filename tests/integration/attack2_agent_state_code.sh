#!/bin/sh
# Attack on the built-in fs default, as root and as an unprivileged user: `~/.claude/` is
# writable (the agent's sessions and login), and fs.protect keeps read-only only the files in
# it that "name programs to run": settings.json, settings.local.json, commands, agents, hooks.
# Two more places there are programs the host runs later, outside any sandbox:
#   - ~/.claude/local/ — Claude Code's local install (`claude migrate-installer`; the `claude`
#     alias runs ~/.claude/local/claude): the agent rewrites the program itself, and the
#     person's next `claude`, sandboxed or not, runs the agent's code;
#   - ~/.claude/plugins/ — installed plugins and marketplaces, whose hooks and MCP servers
#     Claude Code starts in every later session;
#   - ~/.gemini/extensions/ — Gemini CLI's extensions, whose MCP servers it starts.
# Held (kept as coverage): ~/.claude/settings.json stays read-only.
# Closed: fs.protect has ~/.claude/local, ~/.claude/plugins and
# ~/.gemini/extensions.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=10
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	H=$W/home
	mkdir -p "$W/cfg" "$W/wt" "$H/.claude/local" "$H/.claude/plugins" "$H/.gemini/extensions"
	# The built-in fs default (this config says nothing about fs).
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	printf '#!/bin/sh\necho the real claude\n' >"$H/.claude/local/claude"
	chmod 755 "$H/.claude/local/claude"
	echo '{}' >"$H/.claude/settings.json"
	echo '{"version": 2, "plugins": {}}' >"$H/.claude/plugins/installed_plugins.json"
	sv_agent_who "$who"
	cat >"$W/agent.sh" <<EOF
(echo '{"hooks": {}}' >'$H/.claude/settings.json') 2>/dev/null; echo "settings \$?"
(printf '#!/bin/sh\necho the agent was here\n' >'$H/.claude/local/claude') 2>/dev/null
echo "local \$?"
(echo '{"version": 2, "plugins": {"evil@agent": []}}' >'$H/.claude/plugins/installed_plugins.json') 2>/dev/null
echo "plugins \$?"
mkdir -p '$H/.gemini/extensions/evil' &&
	echo '{"name": "evil", "mcpServers": {"x": {"command": "sh"}}}' >'$H/.gemini/extensions/evil/gemini-extension.json'
echo "gemini \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent "$W/wt" --name "a2c$$" -- sh "$W/agent.sh"
	tap_like "$(grep '^settings' "$OUT")" '^settings [12]$' \
		"$who: ~/.claude/settings.json stays read-only" "$(diag)"
	tap_is "$("$H/.claude/local/claude" 2>&1)" "the real claude" \
		"$who: the agent cannot rewrite Claude Code's local install (~/.claude/local/claude)" \
		"$(diag)"
	tap_ok "$(grep -q evil "$H/.claude/plugins/installed_plugins.json" && echo 1 || echo 0)" \
		"$who: nor install a plugin (~/.claude/plugins)" "$(diag)"
	tap_like "$(grep '^gemini' "$OUT")" '^gemini [1-9]' \
		"$who: nor a Gemini CLI extension (~/.gemini/extensions: MCP servers it starts)" "$(diag)"
	tap_ok "$([ -e "$H/.gemini/extensions/evil" ] && echo 1 || echo 0)" \
		"$who: ... and none is left after the run" "$(diag)"
done
tap_done
