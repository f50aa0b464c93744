#!/bin/sh
# Attacks on the file confinement's kernel layers (fs.ask: off) that hold today, kept as
# coverage, as root and as an unprivileged user. From the writable project, the agent tries to
# reach a read-only file (one of the user's outside the project, and the protected
# .git/config inside it) by: a hard link into the project (then writing the link), rename over
# the protected file, a symlink in the project written through, /proc/self/root, and an
# O_TMPFILE made in a read-only directory and linked in by /proc/self/fd. Each must fail and
# leave the file as it was.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=6
run_needs_root $PLAN
run_needs_tools $PLAN setpriv git
[ -x /usr/bin/python3 ] || run_skip_all $PLAN "no /usr/bin/python3"
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	WT=$W/wt
	mkdir -p "$W/cfg" "$W/home" "$W/outside" "$WT"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	git init -q "$WT"
	echo original >"$W/outside/f"
	cp "$WT/.git/config" "$W/config.orig"
	cat >"$W/tmpfile.py" <<EOF
import os
try:
    fd = os.open("$W/outside", os.O_TMPFILE | os.O_WRONLY, 0o644)
    os.write(fd, b"planted\n")
    os.link("/proc/self/fd/%d" % fd, "$W/outside/planted", follow_symlinks=True)
    print("tmpfile linked")
except OSError as e:
    print("tmpfile", e.errno)
EOF
	cat >"$W/agent.sh" <<EOF
ln '$W/outside/f' '$WT/hl' 2>/dev/null && echo changed >'$WT/hl'; echo "hardlink \$?"
ln '$WT/.git/config' '$WT/cl' 2>/dev/null && echo changed >'$WT/cl'; echo "hardlink-protected \$?"
echo '[core]' >'$WT/new' && mv -f '$WT/new' '$WT/.git/config' 2>/dev/null; echo "rename-over \$?"
ln -s '$W/outside/f' '$WT/sl' && (echo changed >'$WT/sl') 2>/dev/null; echo "symlink \$?"
(echo changed >'/proc/self/root$W/outside/f') 2>/dev/null; echo "proc-root \$?"
/usr/bin/python3 '$W/tmpfile.py'
EOF
	chmod 644 "$W/agent.sh" "$W/tmpfile.py"
	sv_agent_who "$who"
	sv_agent "$WT" --name "a2f$$" -- sh "$W/agent.sh"
	echo "# $who: $(tr '\n' ' ' <"$OUT")"
	tap_like "$(tr '\n' ' ' <"$OUT")" \
		'^hardlink [1-9][0-9]* hardlink-protected [1-9][0-9]* rename-over [1-9][0-9]* symlink [1-9][0-9]* proc-root [1-9][0-9]* tmpfile [0-9]+ $' \
		"$who: hard links, rename over, a symlink, /proc/self/root and O_TMPFILE all fail" "$(diag)"
	tap_is "$(cat "$W/outside/f")" original "$who: ... the file outside the project is unchanged"
	tap_ok "$(cmp -s "$W/config.orig" "$WT/.git/config" && [ ! -e "$W/outside/planted" ] &&
		echo 0 || echo 1)" "$who: ... .git/config is unchanged and nothing was linked outside"
done
tap_done
