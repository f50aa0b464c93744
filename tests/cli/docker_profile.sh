#!/bin/sh
# docker/: the profile make-seccomp-profile generates, checked field by field against the OCI
# runtime-spec's seccomp schema (schema/config-linux.json, v1.0.2+: the enums and types below)
# and against our own rules (execve/execveat notified, nothing else, never the default action
# or write); the bases it refuses; and what cloister-runc does to a bundle. Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
if ! command -v jq >/dev/null 2>&1; then
	echo "1..0 # SKIP jq is not installed (scripts/install-deps installs it)"
	exit 0
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cloister-docker.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
ok() { # ok STATUS NAME [DIAG]
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
		failed=1
	fi
}
echo "1..17"

P=$TMP/profile.json
docker/make-seccomp-profile --metadata "name=web;project=shop" --out "$P" 2>"$TMP/err"
ok $? "make-seccomp-profile builds on docker/seccomp-base.json" "$(cat "$TMP/err")"

# check NAME JQ-FILTER: the filter must yield true on the profile.
check() {
	if out=$(jq -e "$2" "$P" 2>&1); then ok 0 "$1"; else ok 1 "$1" "$out"; fi
}
ACTIONS='["SCMP_ACT_KILL","SCMP_ACT_KILL_PROCESS","SCMP_ACT_KILL_THREAD","SCMP_ACT_TRAP",
	"SCMP_ACT_ERRNO","SCMP_ACT_TRACE","SCMP_ACT_ALLOW","SCMP_ACT_LOG","SCMP_ACT_NOTIFY"]'
ARCHES='["SCMP_ARCH_X86","SCMP_ARCH_X86_64","SCMP_ARCH_X32","SCMP_ARCH_ARM","SCMP_ARCH_AARCH64",
	"SCMP_ARCH_MIPS","SCMP_ARCH_MIPS64","SCMP_ARCH_MIPS64N32","SCMP_ARCH_MIPSEL",
	"SCMP_ARCH_MIPSEL64","SCMP_ARCH_MIPSEL64N32","SCMP_ARCH_PPC","SCMP_ARCH_PPC64",
	"SCMP_ARCH_PPC64LE","SCMP_ARCH_S390","SCMP_ARCH_S390X","SCMP_ARCH_PARISC",
	"SCMP_ARCH_PARISC64","SCMP_ARCH_RISCV64"]'
OPS='["SCMP_CMP_NE","SCMP_CMP_LT","SCMP_CMP_LE","SCMP_CMP_EQ","SCMP_CMP_GE","SCMP_CMP_GT",
	"SCMP_CMP_MASKED_EQ"]'
U32='(type == "number" and . >= 0 and . <= 4294967295 and . == floor)'
U64='(type == "number" and . >= 0 and . == floor)'

check "only the keys the schema knows" \
	'keys - ["defaultAction","defaultErrnoRet","architectures","flags","listenerPath","listenerMetadata","syscalls"] == []'
check "defaultAction is a seccomp action, and not SCMP_ACT_NOTIFY" \
	"(.defaultAction as \$a | $ACTIONS | index(\$a)) != null and .defaultAction != \"SCMP_ACT_NOTIFY\""
check "defaultErrnoRet is a uint32" "(.defaultErrnoRet // 0) | $U32"
check "architectures are schema architectures" \
	"(.architectures | type) == \"array\" and all(.architectures[]; . as \$x | $ARCHES | index(\$x) != null)"
check "listenerPath is the absolute default socket" '.listenerPath == "/run/cloister/seccomp.sock"'
check "listenerMetadata is the string given" '.listenerMetadata == "name=web;project=shop"'
check "every syscalls entry: names (non-empty strings), action, optional errnoRet and args" \
	"all(.syscalls[];
		(keys - [\"names\",\"action\",\"errnoRet\",\"args\"] == [])
		and (.names | type == \"array\" and length > 0 and all(.[]; type == \"string\" and length > 0))
		and (.action as \$a | $ACTIONS | index(\$a) != null)
		and ((.errnoRet // 0) | $U32)
		and all(.args[]?; (keys - [\"index\",\"value\",\"valueTwo\",\"op\"] == [])
			and (.index | $U32) and ((.value // 0) | $U64) and ((.valueTwo // 0) | $U64)
			and (.op as \$o | $OPS | index(\$o) != null)))"
check "execve and execveat are notified, in one rule, and only there" \
	'[.syscalls[] | select(.names | index("execve") or index("execveat"))] == [{"names":["execve","execveat"],"action":"SCMP_ACT_NOTIFY"}]'
check "nothing else is notified; write is allowed, not notified" \
	'([.syscalls[] | select(.action == "SCMP_ACT_NOTIFY") | .names[]] | sort == ["execve","execveat"])
	 and ([.syscalls[] | select(.names | index("write")) | .action] == ["SCMP_ACT_ALLOW"])'

# ---- refused bases and arguments ----
refused() { # refused NAME BASE-JSON [ARGS...]
	name=$1
	printf '%s\n' "$2" >"$TMP/base.json"
	shift 2
	if docker/make-seccomp-profile --base "$TMP/base.json" "$@" >"$TMP/out" 2>"$TMP/err"; then
		ok 1 "$name" "accepted: $(cat "$TMP/out")"
	else
		ok 0 "$name"
	fi
}
refused "a base that notifies by default is refused" '{"defaultAction":"SCMP_ACT_NOTIFY"}'
refused "a base that notifies write is refused" \
	'{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["write"],"action":"SCMP_ACT_NOTIFY"}]}'
refused "metadata that is not key=value pairs is refused" '{"defaultAction":"SCMP_ACT_ALLOW"}' \
	--metadata 'name=a b'
refused "a relative listener path is refused" '{"defaultAction":"SCMP_ACT_ALLOW"}' \
	--listener-path run/x.sock

# ---- cloister-runc on a bundle, with a stand-in runc that records its arguments ----
mkdir -p "$TMP/b"
echo '{"ociVersion":"1.0.2","hooks":{"createRuntime":[{"path":"/other"}]},"process":{}}' >"$TMP/b/config.json"
printf '#!/bin/sh\necho "$@" >"%s/args"\n' "$TMP" >"$TMP/runc"
chmod +x "$TMP/runc"
touch "$TMP/hook" && chmod +x "$TMP/hook"
export CLOISTER_RUNC="$TMP/runc" CLOISTER_OCI_HOOK="$TMP/hook" CLOISTER_HOOK_SOCKET=/run/x/hook.sock
docker/cloister-runc --root /r --log-format json create --bundle "$TMP/b" --pid-file /p c1
docker/cloister-runc --root /r create --bundle="$TMP/b" c1
ok "$(jq -e --arg h "$TMP/hook" '.hooks.createRuntime == [{"path":"/other"},{"path":$h,"args":["cloister-oci-hook","--socket","/run/x/hook.sock"],"timeout":15}]' "$TMP/b/config.json" >/dev/null && echo 0 || echo 1)" \
	"cloister-runc adds the hook once, after the bundle's own" "$(cat "$TMP/b/config.json")"
ok "$([ "$(cat "$TMP/args")" = "--root /r create --bundle=$TMP/b c1" ] && echo 0 || echo 1)" \
	"cloister-runc passes the arguments on unchanged" "$(cat "$TMP/args")"
cp "$TMP/b/config.json" "$TMP/before"
docker/cloister-runc --root /r state c1
ok "$(cmp -s "$TMP/before" "$TMP/b/config.json" && [ "$(cat "$TMP/args")" = "--root /r state c1" ] && echo 0 || echo 1)" \
	"other commands go straight to runc"
exit $failed
