#!/bin/sh
# The layering of docs/ARCHITECTURE.md, checked on the includes: each folder includes only
# the folders below it, only supervisor/web/ speaks HTTP, and only the front end
# (supervisor/*.c) includes run's, serve's and the front end's headers. Reads the sources on
# disk (a file not yet added to git counts too); builds nothing. Prints TAP.
#
# The first case runs the checker on a small tree with one bad include of each kind and
# expects it to report every one, so the check cannot pass by finding nothing.
set -u
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloister-layering.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# folder: the folders its includes may name (its own is always allowed). "supervisor" is the
# front end's own headers (supervisor/*.h); "local" an include without a folder.
allowed() {
	case "$1" in
	base) echo "" ;;
	protocol) echo "base" ;;
	notifier | netfilter) echo "base" ;;
	bpf) echo "base local" ;; # vmlinux.h, generated into build/gen
	oci) echo "base protocol notifier" ;;
	shim) echo "base protocol" ;; # static with musl: nothing that needs cJSON's users or libc's NSS
	hook) echo "base protocol notifier oci" ;;
	supervisor/policy) echo "base protocol" ;; # pure: decides, never asks
	supervisor/approval) echo "base protocol supervisor/policy" ;;
	supervisor/web) echo "base protocol supervisor/policy supervisor/approval supervisor/hostexec" ;;
	# A concern (exec, egress, sandbox, hostexec, tty, and any added later) uses the kernel
	# layers and the two services, never another concern, the web or the front end.
	supervisor/*) echo "base protocol notifier netfilter bpf oci supervisor/policy supervisor/approval" ;;
	supervisor) echo "*" ;;
	esac
}

# The layer a file belongs to, or that an include names.
layer_of() {
	case "$1" in
	supervisor/*/*) echo "$1" | cut -d/ -f1,2 ;;
	supervisor/*) echo supervisor ;;
	*/*) echo "${1%%/*}" ;;
	*) echo local ;;
	esac
}

# check ROOT: prints one line per bad include, "file: include (why)".
check() {
	(
		cd "$1" || exit 1
		find base protocol notifier netfilter bpf oci shim hook supervisor \
			\( -name '*.c' -o -name '*.h' \) -type f 2>/dev/null | LC_ALL=C sort |
			while read -r f; do
				own=$(layer_of "$f")
				ok=$(allowed "$own")
				sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$f" |
					while read -r inc; do
						name=$(echo "$inc" | tr -d '<>"')
						case "$inc" in
						"<microhttpd.h>")
							[ "$own" = supervisor/web ] ||
								echo "$f: $inc (only supervisor/web/ speaks HTTP)"
							continue
							;;
						"<"*) continue ;;
						esac
						case "$name" in
						supervisor/web/http_*.h | supervisor/web/web_internal.h)
							[ "$own" = supervisor/web ] ||
								echo "$f: $inc (only supervisor/web/ speaks HTTP)"
							continue
							;;
						esac
						to=$(layer_of "$name")
						[ "$to" = "$own" ] && continue
						[ "$ok" = "*" ] && continue
						case " $ok " in
						*" $to "*) ;;
						*) echo "$f: $inc ($own may include only: ${ok:-itself})" ;;
						esac
					done
			done
	)
}

# Every folder of supervisor/ is checked, one added later too.
folders="base protocol notifier netfilter bpf oci shim hook $(find supervisor -mindepth 1 -maxdepth 1 -type d | LC_ALL=C sort | tr '\n' ' ')supervisor"
n=1
for _ in $folders; do n=$((n + 1)); done
echo "1..$n"
failed=0

# 1: the checker finds each kind of bad include in a tree made for it.
mkdir -p "$tmp/t/base" "$tmp/t/notifier" "$tmp/t/netfilter" "$tmp/t/supervisor/policy" \
	"$tmp/t/supervisor/exec" "$tmp/t/supervisor/egress" "$tmp/t/protocol"
printf '#include "base/cleanup.h"\n#include "supervisor/run.h"\n' >"$tmp/t/base/a.c"
printf '#include "supervisor/exec/exec_guard.h"\n' >"$tmp/t/notifier/a.c"
printf '#include "supervisor/approval/queue.h"\n' >"$tmp/t/netfilter/a.h"
printf '#include "supervisor/approval/approvals.h"\n' >"$tmp/t/supervisor/policy/a.c"
printf '#  include "supervisor/exec/a.h"\n#include "supervisor/egress/proxy.h"\n' >"$tmp/t/supervisor/exec/a.c"
printf '#include <microhttpd.h>\n#include "supervisor/web/http_client.h"\n' >"$tmp/t/supervisor/egress/a.c"
printf '#include "base/error.h"\n#include <stdio.h>\n' >"$tmp/t/protocol/fine.c"
check "$tmp/t" >"$tmp/self"
want="base/a.c: \"supervisor/run.h\"
netfilter/a.h: \"supervisor/approval/queue.h\"
notifier/a.c: \"supervisor/exec/exec_guard.h\"
supervisor/egress/a.c: <microhttpd.h>
supervisor/egress/a.c: \"supervisor/web/http_client.h\"
supervisor/exec/a.c: \"supervisor/egress/proxy.h\"
supervisor/policy/a.c: \"supervisor/approval/approvals.h\""
got=$(sed 's/ (.*//' "$tmp/self")
if [ "$got" = "$want" ]; then
	echo "ok 1 - the checker reports every bad include of a tree made for it, and nothing else"
else
	echo "not ok 1 - the checker reports every bad include of a tree made for it, and nothing else"
	echo "$got" | sed 's/^/# got: /'
	failed=1
fi

# 2..: the real tree, one case per folder.
check . >"$tmp/real"
i=1
for d in $folders; do
	i=$((i + 1))
	bad=$(grep -E "^$d/[^/]*: " "$tmp/real")
	[ "$d" = supervisor ] && bad=$(grep -E '^supervisor/[^/]*: ' "$tmp/real")
	if [ -z "$bad" ]; then
		echo "ok $i - $d/ includes only what its layer may"
	else
		echo "not ok $i - $d/ includes only what its layer may"
		echo "$bad" | sed 's/^/# /'
		failed=1
	fi
done
exit $failed
