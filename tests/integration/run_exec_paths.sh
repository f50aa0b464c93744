#!/bin/sh
# `cloister-supervisor run`: every way to name the file an exec runs is decided — execveat on a
# memfd (AT_EMPTY_PATH), fexecve, a dirfd, a relative path, an exec from a second thread — and
# #! scripts (the script and its interpreter), and a program on an overlayfs mount runs without
# the eBPF backstop mistaking it for another file. Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

run_needs_root 25
tap_plan 25

T=$HELPERS/exectricks
BIN=$TMP/bin
mkdir -p "$BIN"
cp "$HELPERS/marker" "$BIN/evil"
printf '#!/bin/sh\necho "script ran: $*"\n' >"$BIN/ok.sh"
printf '#!/bin/sh\necho "must not run"\n' >"$BIN/no.sh"
# An allowed script whose interpreter is denied: the interpreter would create its last argument.
printf '#!%s\n' "$BIN/evil" >"$BIN/evil.sh"
printf '#!%s\n' "$HELPERS/marker" >"$BIN/unlisted.sh"
chmod 755 "$BIN"/*

write_config <<EOF
exec:
  security: allowlist
  ask: off
  allow:
    - path: "$T"
    - path: "/usr/bin/dash"
    - path: "/usr/bin/echo"
    - path: "$BIN/*.sh"
  deny:
    - path: "/usr/bin/id"
    - path: "$BIN/no.sh"
    - path: "$BIN/evil"
  defaults: false
EOF

# ---- exec tricks: each one reaches the policy ----
for mode in fexecve dirfd relative thread; do
	audit_reset
	sv --ask none -- "$T" "$mode" /usr/bin/echo "ran by $mode"
	tap_is "$rc:$(cat "$OUT")" "0:ran by $mode" "$mode: an allowed program runs" "$(diag)"
	sv --ask none -- "$T" "$mode" /usr/bin/id
	tap_like "$rc $(cat "$ERR")" '^126 .*cloister: exec /usr/bin/id denied: exec\.deny\[0\]' \
		"$mode: a denied program fails with EACCES, by its deny rule" "$(diag)"
done
tap_is "$(audit_count '"exe":"/usr/bin/echo","argv":\["/usr/bin/echo","ran by thread"\].*"verdict":"allow"')" 1 \
	"the audit log names the program a thread executed"

# memfd: the file has no path; /proc shows "/memfd:NAME (deleted)", which no rule allows yet.
audit_reset
sv --ask none -- "$T" memfd /usr/bin/echo "from a memfd"
tap_like "$rc $(cat "$ERR")" '^126 .*exec /memfd:exectricks \(deleted\) denied' \
	"memfd: execveat(AT_EMPTY_PATH) of an unlisted memfd fails with EACCES" "$(diag)"
tap_is "$(audit_count '"exe":"/memfd:exectricks \(deleted\)".*"verdict":"deny"')" 1 \
	"memfd: the denial is in the audit log under the memfd's name"
sed -i 's|^  deny:$|    - path: "/memfd:*"\n  deny:|' "$CFG/config.yaml"
sv --ask none -- "$T" memfd /usr/bin/echo "from a memfd"
tap_is "$rc:$(cat "$OUT")" "0:from a memfd" \
	"memfd: with an allow rule for /memfd:*, the memfd runs (the backstop lets it)" "$(diag)"

# ---- #! scripts ----
audit_reset
sv --ask none -- "$BIN/ok.sh" a b
tap_is "$rc:$(cat "$OUT")" "0:script ran: a b" \
	"an allowed script whose interpreter is allowed runs" "$(diag)"
tap_is "$(audit_count "\"exe\":\"$BIN/ok.sh\".*\"interpreter\":\"/bin/sh\".*\"verdict\":\"allow\"")" 1 \
	"the script is decided, with its interpreter in the audit log"
sv --ask none -- sh -c "$BIN/ok.sh from-sh"
tap_is "$rc:$(cat "$OUT")" "0:script ran: from-sh" "a script run by a shell runs"

sv --ask none -- sh -c "$BIN/no.sh; echo status \$?"
tap_like "$(cat "$OUT") $(cat "$ERR")" "^status 126 .*exec $BIN/no.sh denied: exec\.deny\[1\]" \
	"a denied script fails with EACCES and its rule" "$(diag)"

rm -f "$TMP/mark"
sv --ask none -- sh -c "$BIN/evil.sh $TMP/mark; echo status \$?"
tap_is "$(cat "$OUT"):$(test -e "$TMP/mark" && echo ran)" "status 126:" \
	"an allowed script whose interpreter is denied fails, and the interpreter never runs" "$(diag)"
tap_like "$(cat "$ERR")" "exec $BIN/evil.sh denied: interpreter $BIN/evil: exec\.deny\[2\]" \
	"the denial names the interpreter's deny rule"
sv --ask none -- sh -c "$BIN/unlisted.sh $TMP/mark; echo status \$?"
tap_is "$(cat "$OUT"):$(test -e "$TMP/mark" && echo ran)" "status 126:" \
	"an allowed script whose interpreter no rule allows fails (exec.ask off)" "$(diag)"

# ---- a path written untidily: the file's name is the tidy one (no symlink on the way: the
# lookup itself gives the name, no /proc readlink), and the rules decide by it ----
mkdir -p "$BIN/sub"
audit_reset
sv --ask none -- sh -c "$BIN/sub/..//./no.sh; echo status \$?"
tap_like "$(cat "$OUT") $(cat "$ERR")" "^status 126 .*exec $BIN/no.sh denied: exec\.deny\[1\]" \
	"a denied script named through '..', '//' and '.' is denied by its rule" "$(diag)"
sv --ask none -- "$BIN/sub/../ok.sh" tidy
tap_is "$rc:$(cat "$OUT")" "0:script ran: tidy" "an allowed script named through '..' runs" "$(diag)"
tap_is "$(audit_count "\"exe\":\"$BIN/ok.sh\",\"argv\":\[\"$BIN/sub/../ok.sh\",\"tidy\"\].*\"verdict\":\"allow\"")" 1 \
	"the audit log names it by its tidy name, with its argv as given"

# ---- overlayfs: the backstop keys files by superblock, which is not overlay's st_dev ----
OV=$TMP/ov
mkdir -p "$OV/lower" "$OV/upper" "$OV/work" "$OV/merged"
cp /usr/bin/echo "$OV/lower/lower-echo"
if mount -t overlay overlay -o "lowerdir=$OV/lower,upperdir=$OV/upper,workdir=$OV/work" \
	"$OV/merged" 2>"$ERR"; then
	on_exit "umount '$OV/merged'"
	cp /usr/bin/echo "$OV/merged/upper-echo"
	sed -i "s|^  deny:\$|    - path: \"$OV/merged/*\"\n  deny:|" "$CFG/config.yaml"
	audit_reset
	sv -v --ask none -- "$OV/merged/upper-echo" from the upper layer
	if grep -q 'backstop: off' "$ERR"; then
		tap_skip "overlayfs" "the eBPF backstop is off on this machine: $(grep backstop "$ERR" | head -n 1)"
		tap_skip "overlayfs" "the eBPF backstop is off"
		tap_skip "overlayfs" "the eBPF backstop is off"
	else
		tap_is "$rc:$(cat "$OUT")" "0:from the upper layer" \
			"a program copied into an overlay mount runs, not killed by the backstop" "$(diag)"
		sv --ask none -- "$OV/merged/lower-echo" from the lower layer
		tap_is "$rc:$(cat "$OUT")" "0:from the lower layer" \
			"a program of the overlay's lower layer runs, not killed by the backstop" "$(diag)"
		tap_is "$(audit_count '"decided_by":"backstop"')" 0 "the backstop reported nothing"
	fi
else
	reason="cannot mount overlayfs: $(cat "$ERR")"
	tap_skip "overlayfs upper" "$reason"
	tap_skip "overlayfs lower" "$reason"
	tap_skip "overlayfs backstop" "$reason"
fi

tap_done
