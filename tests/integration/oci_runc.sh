#!/bin/sh
# Containers under the real runc (Debian's), with a busybox-static rootfs built here, the seccomp
# profile from docker/make-seccomp-profile and the docker/cloister-runc wrapper, served by
# `cloister-supervisor serve`: the container's execs are decided by the policy (allowed run,
# denied fail with EACCES, asked ones wait for an answer through the CLI client),
# `runc exec` is hooked too, the createRuntime hook puts the egress rules in the container's
# netns before it starts, the container's project config decides its connections, and with
# the server dead execs fail and containers do not start.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/server_ns.sh
. "$(dirname "$0")/../lib/server_ns.sh"

N=24
run_needs_root "$N"
skip_all() { run_skip_all "$N" "$1"; }
run_needs_tools "$N" runc jq
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || skip_all "busybox-static is not installed (scripts/install-deps)"
tap_plan "$N"

REPO=$(cd "$(dirname "$0")/../.." && pwd)
HOOK=$(dirname "$SUPERVISOR")/cloister-oci-hook
RUNC_ROOT=$TMP/runc-root
RUN=$TMP/run
ID=cloister-oci-$$
ID2=cloister-oci2-$$
LOG=$TMP/server.log
B=$TMP/bundle
R=$B/rootfs
export CLOISTER_OCI_HOOK="$HOOK" CLOISTER_HOOK_SOCKET="$RUN/hook.sock"

rc_() { runc --root "$RUNC_ROOT" "$@"; }
server_pid=
cleanup_oci() {
	rc_ delete -f "$ID" >/dev/null 2>&1
	rc_ delete -f "$ID2" >/dev/null 2>&1
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
}
on_exit cleanup_oci

# wait_for FILE REGEX [TENTHS]: until FILE has a line matching REGEX (default 10 s).
wait_for() {
	n=0
	while [ "$n" -lt "${3:-100}" ]; do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

# ---- the profile ----
"$REPO/docker/make-seccomp-profile" --listener-path "$RUN/seccomp.sock" \
	--metadata "name=box;project=demo" --out "$TMP/profile.json" 2>"$TMP/gen.err"
tap_is "$?:$(jq -r '[.listenerPath, .listenerMetadata, (.syscalls[-1] | .action, (.names | join(",")))] | join(" ")' "$TMP/profile.json" 2>&1)" \
	"0:$RUN/seccomp.sock name=box;project=demo SCMP_ACT_NOTIFY execve,execveat" \
	"make-seccomp-profile: listenerPath, listenerMetadata, execs notified"

# ---- a web server in a namespace of the test, joined to ours by a veth pair ----
server_ns_up oci 79
mkdir -p "$TMP/www"
echo "hello-demo" >"$TMP/www/index.html"
ip netns exec "$NS" busybox httpd -f -p 80 -h "$TMP/www" &
printf '%s demo-only.test other.test\n' "$SRV4" >"$TMP/hosts"

# ---- the bundle: busybox-static, a control fifo, three scripts ----
mkdir -p "$R/bin" "$R/out" "$R/tmp" "$R/etc"
echo "nameserver 10.255.255.53" >"$R/etc/resolv.conf"
cp "$BUSYBOX" "$R/bin/busybox"
for a in sh cat echo ls nc ip sleep true; do ln -s busybox "$R/bin/$a"; done
for s in allowed denied held; do printf '#!/bin/sh\necho %s-ran\n' "$s" >"$R/$s.sh"; done
# The init runs the commands the test writes to /ctl, one per line: "N COMMAND"; the output
# goes to /out/N and the status to /out/N.rc. Only shell builtins besides the commands.
cat >"$R/init.sh" <<'EOF'
#!/bin/sh
while :; do
	read -r n cmd </ctl || continue
	[ "$cmd" = quit ] && exit 0
	eval "$cmd" >"/out/$n" 2>&1
	echo "$?" >"/out/$n.rc"
done
EOF
chmod 0755 "$R"/*.sh
mkfifo "$R/ctl"
# Not a missing feature: a failure of the set-up is a failure of the test.
(cd "$B" && runc spec) || {
	echo "not ok 1 - runc spec"
	exit 1
}
jq --slurpfile p "$TMP/profile.json" \
	'.process.terminal = false | .process.args = ["/init.sh"] | .root.readonly = false
	 | .linux.seccomp = $p[0]
	 | .annotations = {"org.cloister.name": "box", "org.cloister.project": "demo"}' "$B/config.json" >"$B/config.tmp" && mv "$B/config.tmp" "$B/config.json"

# ctl N COMMAND: run COMMAND in the container's init and wait (bounded) for its status.
ctl() {
	printf '%s %s\n' "$1" "$2" >"$R/ctl" &
	ctl_writer=$!
	if wait_for "$R/out/$1.rc" '.' "${3:-100}"; then
		wait "$ctl_writer" 2>/dev/null
		return 0
	fi
	kill "$ctl_writer" 2>/dev/null
	return 1
}
out_of() { cat "$R/out/$1" 2>/dev/null; }
rc_of() { cat "$R/out/$1.rc" 2>/dev/null; }

# ---- serve, then the container through the wrapper ----
write_config <<'YAML'
exec:
  security: allowlist
  ask: on-miss
  allow:
    - path: "/bin/*"
    - path: "/init.sh"
    - path: "/allowed.sh"
  deny:
    - path: "/denied.sh"
  defaults: false
proxy:
  unlisted_domain_behavior: reject
  defaults: false
YAML
mkdir -p "$CFG/projects"
cat >"$CFG/projects/demo.yaml" <<'YAML'
proxy:
  allow:
    - domain: demo-only.test
YAML
export XDG_RUNTIME_DIR="$TMP/xdg-run"
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
"$SUPERVISOR" serve -v --config-dir "$CFG" --no-shim --seccomp-socket "$RUN/seccomp.sock" \
	--hook-socket "$RUN/hook.sock" --listen-approval 127.0.0.1:0 --listen-tokens off \
	--listen-request off --listen-proxy off --hosts "$TMP/hosts" >"$LOG" 2>&1 &
server_pid=$!
wait_for "$LOG" 'egress hook on' || {
	echo "not ok 1 - serve starts"
	sed 's/^/# /' "$LOG"
	exit 1
}

"$REPO/docker/cloister-runc" --root "$RUNC_ROOT" run -d --bundle "$B" "$ID" \
	</dev/null >"$TMP/run.out" 2>&1
st=$?
tap_is "$st" 0 "the container starts under cloister-runc with the generated profile" \
	|| cat "$TMP/run.out" "$LOG" | sed 's/^/# /'
tap_is "$(jq -r '.hooks.createRuntime[0].path' "$B/config.json")" "$HOOK" \
	"cloister-runc added the createRuntime hook to config.json"
wait_for "$LOG" "exec /init.sh allowed"
tap_like "$(cat "$LOG")" "container $ID \\(box\\): egress through the proxy" \
	"the createRuntime hook handed the netns over"
tap_like "$(cat "$LOG")" "container $ID \\(box, project demo\\): started" \
	"runc sent the init's listener; named from listenerMetadata"

# ---- exec decisions ----
ctl 1 /allowed.sh
tap_is "$(rc_of 1):$(out_of 1)" "0:allowed-ran" "an allowed exec runs"
ctl 2 /denied.sh
tap_is "$(rc_of 2)" 126 "a denied exec fails (status 126)"
tap_like "$(out_of 2)" "Permission denied" "... with EACCES"
tap_like "$(cat "$LOG")" "exec /denied.sh denied: exec.deny" "the policy decided it, by its rule"

# In the background, as in ctl: a container that is not there must not block the test.
printf '%s %s\n' 3 /held.sh >"$R/ctl" &
held_writer=$!
id=""
n=0
while [ -z "$id" ] && [ "$n" -lt 100 ]; do
	id=$("$SUPERVISOR" pending 2>/dev/null | awk '$2 == "exec" && /held.sh/ { print $1; exit }')
	[ -n "$id" ] || sleep 0.1
	n=$((n + 1))
done
tap_ok "$([ -n "$id" ] && [ ! -e "$R/out/3.rc" ] && echo 0 || echo 1)" \
	"an asked exec waits for the answer (a card in \`pending\`)"
[ -n "$id" ] || kill "$held_writer" 2>/dev/null
"$SUPERVISOR" approve "$id" >/dev/null
wait_for "$R/out/3.rc" '.'
tap_is "$(rc_of 3):$(out_of 3)" "0:held-ran" "... and runs once it is allowed"

# ---- runc exec ----
out=$(rc_ exec "$ID" /allowed.sh 2>&1)
tap_is "$?:$out" "0:allowed-ran" "runc exec of an allowed program runs"
tap_like "$(cat "$LOG")" "container $ID \\(box, project demo\\): an exec session" \
	"runc exec sent a second listener (status running)"
out=$(rc_ exec "$ID" /bin/sh -c '/denied.sh; echo "status $?"' 2>&1)
tap_like "$out" "Permission denied.*|status 126" "inside runc exec a denied exec fails too"

# ---- egress ----
ctl 4 'ip link show cloister0'
tap_is "$(rc_of 4)" 0 "the container's netns has the egress device"
ctl 5 'echo hello | nc -w 2 203.0.113.7 80'
tap_ok "$(wait_for "$LOG" 'connection to 203.0.113.7:80 denied' 50 && echo 0 || echo 1)" \
	"a connection to 203.0.113.7:80 lands in the supervisor's proxy, which denies it" \
	"$(grep -E "203\.|connection|egress|proxy" "$LOG"; echo "nc: $(rc_of 5) $(out_of 5)")"

# The container's project (its annotation) has a config of its own: it allows a name the
# daemon's config rejects.
ctl 8 'printf "GET / HTTP/1.0\\r\\nHost: demo-only.test\\r\\n\\r\\n" | nc -w 5 demo-only.test 80'
tap_like "$(out_of 8)" "hello-demo" "projects/demo.yaml allows the container a name the daemon's config does not" \
	"$(rc_of 8) $(out_of 8); $(grep -E "demo-only|connection" "$LOG")"
tap_like "$(cat "$LOG")" "connection to demo-only.test:80 allowed: .*domain \"demo-only.test\"" \
	"... by that project's rule"
ctl 9 'printf "GET / HTTP/1.0\\r\\nHost: other.test\\r\\n\\r\\n" | nc -w 5 other.test 80'
tap_like "$(rc_of 9) $(out_of 9)" "^[1-9][0-9]* .*bad address 'other.test'" \
	"an unlisted name is still rejected: the resolver does not give it out (reject)" \
	"$(rc_of 9) $(out_of 9)"

# ---- fail closed ----
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
ctl 6 /allowed.sh
tap_ok "$([ "$(rc_of 6)" != 0 ] && ! grep -q allowed-ran "$R/out/6" && echo 0 || echo 1)" \
	"with the server dead, the container's execs fail" "status $(rc_of 6): $(out_of 6)"
if out=$(rc_ exec "$ID" /allowed.sh 2>&1); then st=1; else st=0; fi
tap_ok "$st" "with the server dead, runc exec fails" "$out"

cp -r "$B" "$TMP/bundle2"
rm -rf "$TMP/bundle2/rootfs/out"/*
"$REPO/docker/cloister-runc" --root "$RUNC_ROOT" run -d --bundle "$TMP/bundle2" "$ID2" \
	</dev/null >"$TMP/run2.out" 2>&1
st=$?
tap_ok "$([ "$st" -ne 0 ] && echo 0 || echo 1)" "with the server dead, a new container does not start" \
	"$(cat "$TMP/run2.out")"
tap_like "$(cat "$TMP/run2.out")" "cloister-oci-hook|seccomp agent" "... and runc says why"

printf '%s %s\n' 7 quit >"$R/ctl" &
quit_writer=$!
quit_read() { ! kill -0 "$quit_writer" 2>/dev/null; }
wait_until 5 quit_read || kill "$quit_writer" 2>/dev/null
rc_ delete -f "$ID" >/dev/null 2>&1
rc_ delete -f "$ID2" >/dev/null 2>&1
tap_is "$(rc_ list -q 2>/dev/null | grep -c cloister-oci)" 0 "the containers are gone"
tap_done
