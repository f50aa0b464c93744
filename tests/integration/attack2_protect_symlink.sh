#!/bin/sh
# Attack on fs.protect for a path that is a symlink — dotfiles linked in by stow, chezmoi or
# home-manager (~/.bashrc -> dotfiles/bashrc) — as root and as an unprivileged user, in a run
# started in ~ (the whole home writable but for fs.protect). The mount layer resolves the
# entry and binds the TARGET read-only; the link itself lives in a writable directory and is
# no mount point: the agent removes ~/.bashrc and writes its own, which the person's next
# shell runs. It existed at the start, so the end-of-run sweep does not look at it either.
# Held: writing through the link fails (its target is read-only), a protected regular file
# (~/.gitconfig) cannot be renamed away (EBUSY), and the link itself is a read-only mount of
# itself: it cannot be removed or replaced (EBUSY). So is a symlink on the way to a protected
# path (~/.config -> dotfiles/config for ~/.config/systemd/user), even when the protected path
# does not exist yet. A hidden path that is a symlink (~/.ssh -> dotfiles/ssh) is held the same
# way, and one absent at the start (~/.kube) is moved aside at the end like a protected one.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=20
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

sv_agent_setup

for who in root nobody; do
	W=$TMP/$who
	H=$W/home
	mkdir -p "$W/cfg" "$H/dotfiles"
	printf 'exec:\n  security: full\n  defaults: false\n' >"$W/cfg/config.yaml"
	echo '# the real bashrc' >"$H/dotfiles/bashrc"
	ln -s dotfiles/bashrc "$H/.bashrc"
	echo '[user]' >"$H/.gitconfig"
	mkdir -p "$H/dotfiles/config/systemd" "$H/dotfiles/ssh"
	ln -s dotfiles/config "$H/.config"
	# Hidden (fs.hide) and a symlink; and ~/.kube, hidden, absent.
	echo 'the real key' >"$H/dotfiles/ssh/id_ed25519"
	ln -s dotfiles/ssh "$H/.ssh"
	cat >"$W/agent.sh" <<EOF
(echo 'echo agent' >>'$H/.bashrc') 2>/dev/null; echo "through \$?"
mv '$H/.gitconfig' '$H/gitconfig.old' 2>/dev/null; echo "gitconfig \$?"
rm -f '$H/.bashrc' && echo 'echo agent' >'$H/.bashrc'; echo "replaced \$?"
rm '$H/.config' && mkdir -p '$H/.config/systemd/user' &&
	echo '[Service]' >'$H/.config/systemd/user/agent.service'; echo "config \$?"
(mkdir -p '$H/.config/systemd/user' && echo '[Service]' >'$H/.config/systemd/user/b.service') \
	2>/dev/null; echo "unit \$?"
(rm '$H/.ssh' && mkdir '$H/.ssh' && echo 'ssh-ed25519 AAAA agent' >'$H/.ssh/authorized_keys') \
	2>/dev/null; echo "ssh \$?"
mkdir '$H/.kube' && printf 'users:\n- user:\n    exec:\n      command: sh\n' >'$H/.kube/config'
echo "kube \$?"
EOF
	chmod 644 "$W/agent.sh"
	sv_agent_who "$who"
	sv_agent "$H" --name "a2l$$" -- sh "$W/agent.sh"
	tap_like "$(grep '^through' "$OUT")" '^through [12]$' \
		"$who: writing through the ~/.bashrc link fails (its target is read-only)" "$(diag)"
	tap_like "$(grep '^gitconfig' "$OUT")" '^gitconfig [1-9]' \
		"$who: a protected regular file cannot be renamed away" "$(diag)"
	tap_like "$(grep '^replaced' "$OUT")" '^replaced [1-9]' \
		"$who: the agent cannot replace the ~/.bashrc link by a file of its own" "$(diag)"
	tap_is "$(cat "$H/.bashrc" 2>&1)" "# the real bashrc" \
		"$who: after the run, the person's next shell reads the real ~/.bashrc" "$(diag)"
	tap_like "$(grep '^config' "$OUT")" '^config [1-9]' \
		"$who: the ~/.config link on the way to a protected path cannot be replaced" "$(diag)"
	tap_ok "$([ -L "$H/.config" ] && [ ! -e "$H/.config/systemd/user/agent.service" ] &&
		[ ! -e "$H/.config/systemd/user/b.service" ] && echo 0 || echo 1)" \
		"$who: after the run, no unit of the agent's is where systemd looks" \
		"$(ls -laR "$H/dotfiles"; diag)"
	tap_like "$(grep '^ssh' "$OUT")" '^ssh [1-9]' \
		"$who: a hidden path that is a symlink (~/.ssh) cannot be replaced" "$(diag)"
	tap_ok "$([ -L "$H/.ssh" ] && [ ! -e "$H/dotfiles/ssh/authorized_keys" ] && echo 0 || echo 1)" \
		"$who: after the run, ~/.ssh is the person's, without a key of the agent's" "$(diag)"
	tap_like "$(grep '^kube' "$OUT")" '^kube 0$' \
		"$who: a hidden path absent at the start (~/.kube) can be made during the run" "$(diag)"
	tap_ok "$([ ! -e "$H/.kube" ] && [ -f "$H/.kube.cloister-blocked/config" ] &&
		grep -qF "created $H/.kube, which is hidden (fs.hide): moved to $H/.kube.cloister-blocked" "$ERR" &&
		echo 0 || echo 1)" "$who: ... and is moved aside at the end (kubectl runs its exec plugins)" \
		"$(diag)"
done
tap_done
