#!/bin/sh
# shim/install-shim.sh inside two root filesystems built here, run through chroot:
#   - busybox: busybox-static with its applets as symlinks in /bin (an Alpine-like image);
#   - Debian-like: merged /usr (/bin -> usr/bin), the host's bash with its libraries, busybox
#     for the rest, /etc/skel and /etc/bash.bashrc.
# Checks the links, the PATH lines, and that a locked binary cannot be run directly by the
# agent's non-root user while the shim's path to it exists.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
: "${SHIM:?run through make (SHIM is not set)}"

PLAN=17
run_needs_root $PLAN
BUSYBOX=$(command -v busybox || true)
if [ -z "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked'; then
	tap_plan $PLAN
	i=0
	while [ $i -lt $PLAN ]; do
		tap_skip install_shim "busybox-static is not installed (scripts/install-deps installs it)"
		i=$((i + 1))
	done
	exit 0
fi
tap_plan $PLAN
SCRIPT=$(cd "$(dirname "$0")/../.." && pwd)/shim/install-shim.sh

# make_rootfs DIR BINDIR: busybox and its applets in BINDIR, users root and agent (1000).
make_rootfs() {
	r=$1
	mkdir -p "$r$2" "$r/etc" "$r/root" "$r/home/agent" "$r/tmp" "$r/dev"
	cp "$BUSYBOX" "$r$2/busybox"
	chroot "$r" "$2/busybox" --install -s "$2"
	printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/home/agent:/bin/sh\n' \
		>"$r/etc/passwd"
	printf 'root:x:0:\nagent:x:1000:\n' >"$r/etc/group"
	chown 1000:1000 "$r/home/agent"
	chmod 1777 "$r/tmp"
	touch "$r/dev/null"
	mount --bind /dev/null "$r/dev/null"
	on_exit "umount '$r/dev/null' 2>/dev/null"
	cp "$SHIM" "$r/tmp/cloister-shim"
	cp "$SCRIPT" "$r/tmp/install-shim.sh"
}

as_agent() { # ROOT CMD...
	r=$1
	shift
	chroot --userspec=1000:1000 "$r" "$@"
}

# ---- busybox rootfs ------------------------------------------------------------------------
R=$TMP/busybox
make_rootfs "$R" /bin
chroot "$R" /bin/sh /tmp/install-shim.sh --shim /tmp/cloister-shim --tools vi,make \
	--lock-binaries wget --user agent >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 0 "busybox: install-shim.sh runs under busybox sh" "$(cat "$ERR")"
tap_is "$(readlink "$R/cloister/bin/make"):$(readlink "$R/cloister/bin/wget")" \
	"cloister-shim:cloister-shim" "busybox: the tools link to the shim in /cloister/bin"
# shellcheck disable=SC2016 # the chroot's shell expands it
tap_like "$(chroot "$R" /bin/sh -lc 'echo $PATH')" '^/cloister/bin:' \
	"busybox: a login shell has /cloister/bin first on PATH"
tap_like "$(cat "$R/home/agent/.profile")" 'PATH="/cloister/bin:' "busybox: the agent's ~/.profile too"
tap_is "$(chroot "$R" /bin/stat -c '%a %U %G' /bin/wget.original)" "750 root cloister-locked" \
	"busybox: the locked original is root:cloister-locked 0750"
tap_is "$(readlink "$R/bin/wget")" "/cloister/bin/cloister-shim" \
	"busybox: /bin/wget now leads to the shim"
out=$(as_agent "$R" /bin/wget.original -q -O - http://127.0.0.1:9/ 2>&1)
rc=$?
tap_ok "$([ $rc -ne 0 ] && printf '%s' "$out" | grep -q 'Permission denied' && echo 0 || echo 1)" \
	"busybox: the agent cannot run wget.original directly" "status $rc: $out"
out=$(chroot "$R" /bin/wget.original --help 2>&1)
tap_like "$out" "applet not found|Usage: wget" "busybox: root still can (busybox only wants its applet name)"
out=$(as_agent "$R" /bin/sh -lc 'cd; wget -q -O - http://127.0.0.1:9/' 2>&1)
rc=$?
tap_is "$rc" 127 "busybox: the agent's wget goes through the shim (no supervisor here: 127)"
tap_like "$out" "cloister-shim: wget: cannot reach the Cloister supervisor" "busybox: and the shim says so"
tap_ok "$(grep -q '^cloister-locked:x:[0-9]*:$' "$R/etc/group" && echo 0 || echo 1)" \
	"busybox: the lock group exists with no members"
chroot "$R" /bin/sh /tmp/install-shim.sh --shim /tmp/cloister-shim --tools vi,make \
	--lock-binaries wget --user agent >"$OUT" 2>"$ERR"
tap_is "$?:$(grep -c 'cloister-shim >>>' "$R/etc/profile"):$(stat -c %a "$R/bin/wget.original")" \
	"0:1:750" "busybox: a second run changes nothing"

# ---- Debian-like rootfs (merged /usr, bash) --------------------------------------------------
D=$TMP/debian
mkdir -p "$D/usr/bin" "$D/etc/skel"
ln -s usr/bin "$D/bin"
ln -s usr/bin "$D/sbin"
make_rootfs "$D" /usr/bin
bash=$(command -v bash)
rm -f "$D/usr/bin/bash"
cp "$bash" "$D/usr/bin/bash"
for lib in $(ldd "$bash" | awk '/\//{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
	mkdir -p "$D$(dirname "$lib")"
	cp -L "$lib" "$D$lib"
done
printf '# system-wide .bashrc\n' >"$D/etc/bash.bashrc"
printf '# ~/.bashrc\n' >"$D/etc/skel/.bashrc"
chroot "$D" /bin/sh /tmp/install-shim.sh --shim /tmp/cloister-shim --tools git \
	--lock-binaries nc >"$OUT" 2>"$ERR"
rc=$?
tap_is "$rc" 0 "debian: install-shim.sh runs" "$(cat "$ERR")"
# shellcheck disable=SC2016 # the chroot's shell expands it
tap_like "$(chroot "$D" /bin/bash -ic 'echo $PATH' 2>/dev/null)" '^/cloister/bin:' \
	"debian: an interactive bash has /cloister/bin first (/etc/bash.bashrc)"
tap_ok "$(grep -qF 'cloister-shim >>>' "$D/etc/skel/.bashrc" && echo 0 || echo 1)" \
	"debian: /etc/skel/.bashrc gets the line for new users"
tap_is "$(chroot "$D" /bin/stat -c '%a %G' /usr/bin/nc.original):$(readlink "$D/usr/bin/nc")" \
	"750 cloister-locked:/cloister/bin/cloister-shim" \
	"debian: with /bin -> usr/bin the binary is locked once, in /usr/bin"
out=$(as_agent "$D" /bin/nc.original 127.0.0.1 9 2>&1 </dev/null)
rc=$?
tap_ok "$([ $rc -ne 0 ] && printf '%s' "$out" | grep -q 'Permission denied' && echo 0 || echo 1)" \
	"debian: the agent cannot run nc.original directly" "status $rc: $out"

tap_done
