#!/bin/sh
# The agent cannot change what a path means to the policy (issue 12, "policy keyed to a path
# the agent can re-mount"), as root and as an unprivileged user: new user and mount namespaces,
# bind mounts, chroot, setns and pivot_root fail with EPERM; clone3 fails with ENOSYS while
# fork, threads, posix_spawn, sh and Python's subprocess keep working; open_by_handle_at and
# the kernel keyrings are refused. --allow-nested-sandbox lets an agent build its own sandbox.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=24
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare python3
tap_plan $PLAN

write_config <<'EOF'
exec:
  security: full
  defaults: false
EOF

# agent_script PROBE RESULTS: what the agent tries, one result file each.
agent_script() {
	cat <<EOF
P=$1
R=$2
# A private user + mount namespace: bind another program over /usr/bin/cat there.
unshare -Urm sh -c 'mount --bind /usr/bin/true /usr/bin/cat && echo remapped' >\$R/userns 2>&1
unshare -m true >\$R/mountns 2>&1
\$P bind /usr/bin/true /usr/bin/cat >\$R/bind 2>&1
chroot / /usr/bin/true >\$R/chroot 2>&1
pivot_root / / >\$R/pivot 2>&1
\$P setns >\$R/setns 2>&1
\$P clone3 >\$R/clone3 2>&1
\$P threads 8 >\$R/threads 2>&1
\$P spawn /usr/bin/true >\$R/spawn 2>&1
sh -c 'echo child' >\$R/sh 2>&1
/usr/bin/python3 -c 'import subprocess, threading
t = threading.Thread(target=lambda: None); t.start(); t.join()
print(subprocess.run(["echo", "py"], capture_output=True, text=True).stdout.strip())' >\$R/python 2>&1
\$P open_by_handle >\$R/handle 2>&1
\$P keyctl >\$R/keyctl 2>&1
exit 0
EOF
}

# check WHO RESULTS
check() {
	tap_like "$(cat "$2/userns")" 'unshare failed: Operation not permitted' \
		"$1: unshare -Urm fails, nothing is re-mapped" "$(cat "$2/userns")"
	tap_like "$(cat "$2/mountns")" 'Operation not permitted' "$1: unshare -m fails"
	tap_is "$(cat "$2/bind")" "bind: Operation not permitted" "$1: a bind mount fails"
	tap_like "$(cat "$2/chroot")" 'Operation not permitted' "$1: chroot fails" "$(cat "$2/chroot")"
	tap_like "$(cat "$2/pivot")" 'Operation not permitted' "$1: pivot_root fails with EPERM" \
		"$(cat "$2/pivot")"
	tap_is "$(cat "$2/setns")" "setns: Operation not permitted" "$1: setns fails"
	tap_is "$(cat "$2/clone3")" "clone3: Function not implemented" "$1: clone3 gets ENOSYS"
	tap_is "$(cat "$2/threads") $(cat "$2/spawn") $(cat "$2/sh") $(cat "$2/python")" \
		"threads: ok spawn: status 0 child py" \
		"$1: threads, posix_spawn, sh and Python's subprocess still work"
	tap_is "$(cat "$2/handle") $(cat "$2/keyctl")" \
		"open_by_handle: Operation not permitted keyctl: Operation not permitted" \
		"$1: open_by_handle_at and the keyrings are refused"
}

# ---- root ----
R=$TMP/r
mkdir -p "$R"
agent_script "$HELPERS/confine_probe" "$R" >"$TMP/agent.sh"
sv --ask none -- sh "$TMP/agent.sh"
tap_is "$rc" 0 "root: the run ends normally" "$(diag)"
check root "$R"
tap_is "$(/usr/bin/cat /dev/null; echo $?)" 0 "the host's /usr/bin/cat is untouched"

# ---- nobody ----
nobody_setup confine_probe
UR=$U/r
mkdir -p "$UR"
agent_script "$UB/confine_probe" "$UR" >"$U/agent.sh"
chown -R $NOBODY:$NOBODY "$UR" "$U/agent.sh"
sv_nobody --ask none -- sh "$U/agent.sh"
tap_is "$rc" 0 "non-root: the run ends normally" "$(diag)"
check non-root "$UR"

# ---- --allow-nested-sandbox: an agent that sandboxes its own tools ----
cat >"$U/nested.sh" <<'EOF'
unshare -Urm sh -c 'mount -t tmpfs nested /mnt && echo nested-mount-ok'
EOF
chown $NOBODY "$U/nested.sh"
sv_nobody --ask none --allow-nested-sandbox -- sh "$U/nested.sh"
tap_is "$rc:$(cat "$OUT")" "0:nested-mount-ok" \
	"non-root, --allow-nested-sandbox: the agent makes its own namespaces and mounts" "$(diag)"
sv --ask none --allow-nested-sandbox -- sh "$U/nested.sh"
tap_is "$rc:$(cat "$OUT")" "0:nested-mount-ok" \
	"root, --allow-nested-sandbox: the same" "$(diag)"
sv --ask none -- sh "$U/nested.sh"
tap_ok "$([ "$rc" != 0 ] || [ "$(cat "$OUT")" != nested-mount-ok ] && echo 0 || echo 1)" \
	"without the option the same agent is refused" "$(diag)"

tap_done
