#!/bin/sh
# Attacks on the exec path that hold today, kept so that they keep holding, as root and as an
# unprivileged user:
#   - a FIFO named as the program: the supervisor inspects what an exec names without opening
#     it for reading, so it neither blocks on the FIFO (which would stop every exec and the
#     dashboard) nor lets it through: EACCES, and the next exec is decided as usual;
#   - an interpreter of the agent's own through binfmt_misc: with --allow-nested-sandbox the
#     agent mounts binfmt_misc in a user namespace of its own and registers a magic that
#     matches an allowed file, with its own program as the interpreter, opened at registration
#     ('F'); the exec of the allowed file is decided, the kernel then runs the agent's
#     interpreter without a syscall of its own: the backstop (eBPF or ptrace) kills it first,
#     or the kernel refuses binfmt_misc in a user namespace (before 6.7); it never runs.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare mkfifo
tap_plan $PLAN

# In nobody's working directory, which both sandboxes see (their /tmp is their own).
W=$TMP/nobody/w
write_config <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
    - path: "$W/payload"
  defaults: false
EOF
nobody_setup
mkdir -p "$W"
chmod 777 "$W"
cp "$HELPERS/marker" "$W/evil"
printf 'CLOISTERMAGIC data\n' >"$W/payload"
chmod 755 "$W/evil" "$W/payload"
mkfifo -m 777 "$W/fifo"

cat >"$TMP/fifo.sh" <<EOF
$W/fifo; echo "fifo: \$?"
/usr/bin/true; echo "then: \$?"
EOF
cat >"$TMP/binfmt.sh" <<EOF
unshare -Urm sh -c '
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || exit 3
printf ":cl$$:M::CLOISTERMAGIC::$W/evil:F" >/proc/sys/fs/binfmt_misc/register || exit 4
$W/payload $W/mark-\$1
echo "payload: \$?"
' sh "\$1"
echo "unshare: \$?"
EOF
chmod 644 "$TMP/fifo.sh" "$TMP/binfmt.sh"

for who in root nobody; do
	if [ "$who" = root ]; then
		sv --ask none -- sh "$TMP/fifo.sh"
	else
		sv_nobody --ask none -- sh "$TMP/fifo.sh"
	fi
	tap_is "$rc:$(tr '\n' ' ' <"$OUT")" "0:fifo: 126 then: 0 " \
		"$who: a FIFO named as the program fails with EACCES, and the next exec is decided" \
		"$(diag)"

	rm -f "$W/mark-$who"
	if [ "$who" = root ]; then
		sv --ask none --allow-nested-sandbox -- sh "$TMP/binfmt.sh" "$who"
	else
		sv_nobody --ask none --allow-nested-sandbox -- sh "$TMP/binfmt.sh" "$who"
	fi
	echo "# $who, binfmt_misc: $(tr '\n' ' ' <"$OUT")"
	tap_is "$rc" 0 "$who, binfmt_misc: the run ends normally" "$(diag)"
	tap_ok "$(test -e "$W/mark-$who" && echo 1 || echo 0)" \
		"$who, binfmt_misc: the interpreter the agent registered never runs" "$(diag)"
	# What the kernel made of it: killed by the backstop, or the registration refused.
	tap_like "$(tr '\n' ' ' <"$OUT")" '^(payload: 137 unshare: 0|unshare: [34]) $' \
		"$who, binfmt_misc: killed by the backstop (or binfmt_misc refused in a user namespace)" "$(diag)"
done

tap_done
