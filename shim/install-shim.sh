#!/bin/sh
# install-shim.sh: put cloister-shim into an image (run it as root inside the image: a
# Dockerfile RUN step, or chroot into a root filesystem). POSIX sh; busybox is enough.
#
# Usage: install-shim.sh [--shim PATH] [--tools a,b,...] [--lock-binaries a,b,...]
#                        [--lock-group NAME] [--user NAME]
#
#   --shim PATH            the static cloister-shim binary to install (default ./cloister-shim)
#   --tools LIST           tools to impersonate: /cloister/bin/<tool> -> cloister-shim
#   --lock-binaries LIST   also impersonated, and their real binaries locked away: every
#                          <dir>/<tool> on the standard PATH moves to <dir>/<tool>.original,
#                          owned root:<lock group> with mode 0750, and <dir>/<tool> becomes a
#                          link to the shim. A symlink (busybox applet) is replaced by a copy of
#                          what it points to, since a symlink's mode protects nothing. The
#                          agent's user must NOT be in the lock group: then it can run the tool
#                          only through the shim, while the supervisor's mirror strategy adds
#                          the group to the command it runs on the agent's behalf.
#   --lock-group NAME      the group of the locked originals (default cloister-locked; created
#                          if missing, with no members)
#   --user NAME            the agent's user: its ~/.profile and ~/.bashrc get the PATH line too
#
# Also: /cloister/bin goes first on PATH in /etc/profile, /etc/bash.bashrc, /etc/skel's and
# root's rc files (and zsh's zshenv when zsh is there); /var/run/cloister is created for the
# supervisor's socket. Running it again changes nothing.
set -eu

SHIM_DIR=/cloister/bin
SOCKET_DIR=/var/run/cloister
STD_DIRS="/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin"
MARK_BEGIN="# >>> cloister-shim >>>"
MARK_END="# <<< cloister-shim <<<"

shim=./cloister-shim
tools=""
lock=""
lock_group=cloister-locked
user=""

die() {
	echo "install-shim: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case "$1" in
	--shim) shim=${2:?--shim needs a path}; shift 2 ;;
	--tools) tools=${2?--tools needs a list}; shift 2 ;;
	--lock-binaries) lock=${2?--lock-binaries needs a list}; shift 2 ;;
	--lock-group) lock_group=${2:?--lock-group needs a name}; shift 2 ;;
	--user) user=${2:?--user needs a name}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done

[ "$(id -u)" = 0 ] || die "must run as root (inside the image)"
[ -f "$shim" ] || die "no shim binary at $shim"

# Names only: no path, no dot names, nothing a shell or sed would read as syntax.
check_name() {
	case "$1" in
	"" | . | .. | */* | *[!A-Za-z0-9._+-]*) die "bad tool name '$1'" ;;
	esac
}

list() { echo "$1" | tr ',' ' '; }

# ---- the shim and its links ------------------------------------------------------------------
mkdir -p "$SHIM_DIR" "$SOCKET_DIR"
chmod 0755 /cloister "$SHIM_DIR" "$SOCKET_DIR"
if [ "$(readlink -f "$shim")" != "$SHIM_DIR/cloister-shim" ]; then
	cp "$shim" "$SHIM_DIR/cloister-shim.new"
	chmod 0755 "$SHIM_DIR/cloister-shim.new"
	mv -f "$SHIM_DIR/cloister-shim.new" "$SHIM_DIR/cloister-shim"
fi
for t in $(list "$tools") $(list "$lock"); do
	check_name "$t"
	ln -sfn cloister-shim "$SHIM_DIR/$t"
done

# ---- PATH -------------------------------------------------------------------------------------
add_path_block() { # FILE: append the block once
	f=$1
	if [ -f "$f" ] && grep -qF "$MARK_BEGIN" "$f"; then
		return 0
	fi
	mkdir -p "$(dirname "$f")"
	cat >>"$f" <<EOF
$MARK_BEGIN
case ":\$PATH:" in
*:$SHIM_DIR:*) ;;
*) PATH="$SHIM_DIR:\$PATH" ;;
esac
export PATH
$MARK_END
EOF
}

add_path_block /etc/profile
[ -e /etc/bash.bashrc ] || [ -x /bin/bash ] || [ -x /usr/bin/bash ] && add_path_block /etc/bash.bashrc
[ -d /etc/skel ] && add_path_block /etc/skel/.bashrc
[ -d /etc/zsh ] && add_path_block /etc/zsh/zshenv
[ -d /root ] && add_path_block /root/.bashrc
if [ -n "$user" ]; then
	home=$(awk -F: -v u="$user" '$1 == u { print $6 }' /etc/passwd)
	[ -n "$home" ] || die "no user $user in /etc/passwd"
	if [ -d "$home" ]; then
		for rc in .profile .bashrc; do
			add_path_block "$home/$rc"
			chown "$user" "$home/$rc" 2>/dev/null || true
		done
	fi
fi

# ---- locking ----------------------------------------------------------------------------------
group_gid() { awk -F: -v g="$1" '$1 == g { print $3 }' /etc/group; }

ensure_group() {
	[ -n "$(group_gid "$lock_group")" ] && return 0
	if command -v groupadd >/dev/null 2>&1; then
		groupadd -r "$lock_group"
	elif command -v addgroup >/dev/null 2>&1; then
		addgroup -S "$lock_group"
	else
		gid=990
		while awk -F: -v g="$gid" '$3 == g { found = 1 } END { exit !found }' /etc/group; do
			gid=$((gid - 1))
		done
		echo "$lock_group:x:$gid:" >>/etc/group
	fi
	[ -n "$(group_gid "$lock_group")" ] || die "could not create group $lock_group"
}

if [ -n "$lock" ]; then
	ensure_group
	if [ -n "$user" ]; then
		members=$(awk -F: -v g="$lock_group" '$1 == g { print $4 }' /etc/group)
		case ",$members," in
		*",$user,"*) die "user $user is in $lock_group: the lock would not hold" ;;
		esac
	fi
fi

for t in $(list "$lock"); do
	found=0
	for d in $STD_DIRS; do
		p=$d/$t
		# A directory reached through a symlink (/bin -> usr/bin) holds the same files.
		[ -d "$d" ] || continue
		if [ -L "$d" ]; then
			continue
		fi
		if [ -e "$p.original" ]; then
			found=1 # locked by an earlier run
		elif [ -L "$p" ] && [ "$(readlink -f "$p")" = "$SHIM_DIR/cloister-shim" ]; then
			: # our own link, no original here
		elif [ -L "$p" ]; then
			target=$(readlink -f "$p") || die "$p: dangling link"
			cp "$target" "$p.original.new"
			rm -f "$p"
			mv "$p.original.new" "$p.original"
			found=1
		elif [ -f "$p" ]; then
			mv "$p" "$p.original"
			found=1
		else
			continue
		fi
		chown "root:$lock_group" "$p.original"
		chmod 0750 "$p.original"
		[ -e "$p" ] || ln -s "$SHIM_DIR/cloister-shim" "$p"
	done
	[ "$found" = 1 ] || echo "install-shim: $t: no binary to lock on $STD_DIRS" >&2
done

echo "install-shim: $SHIM_DIR holds cloister-shim and: $(list "$tools") $(list "$lock")"
[ -z "$lock" ] || echo "install-shim: locked (root:$lock_group 0750): $(list "$lock")"
