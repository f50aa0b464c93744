#!/bin/sh
# fs.ask: on-write — a write outside fs.write is held as an ask of kind "file", as root and as
# an unprivileged user:
#   - approved from the CLI, it lands in the intended file through the fd the supervisor opened
#     (with the process's uid and umask);
#   - a directory symlink swapped while the ask is pending does not move the write: it lands
#     where the card said; a symlink put in the file's place makes it fail, the victim untouched;
#   - denied (the reason on the process's stderr) or timed out: EACCES;
#   - fs.protect and fs.hide are refused at once, never asked;
#   - reads and writes inside fs.write are never asked.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=36
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

setup() { # WHO: a home, a worktree, a config and a runtime directory of its own
	user_tree "$1"
	mkdir -p "$H/real" "$H/victim" "$WT/.git/hooks"
	cat >"$W/cfg/config.yaml" <<YAML
exec:
  defaults: false
  security: allowlist
  ask: off
  allow:
    - path: "/usr/bin/*"
fs:
  ask: on-write
YAML
	user_tree_own
	UID_=0
	[ -z "$AS" ] || UID_=$NOBODY
}

# start AGENT-SCRIPT [RUN OPTIONS]: the supervisor in the background (pid in $SV).
start() {
	script=$1
	shift
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 30 $AS $USER_ENV "$BIN" run \
		--config-dir "$W/cfg" --name "wa$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off "$@" -- sh -c "$script") \
		</dev/null >"$OUT" 2>"$ERR" &
	SV=$!
}
as_user() { # run a shell command as WHO, on the host (the person's side of a race)
	# shellcheck disable=SC2086
	$AS sh -c "$1"
}

for who in root nobody; do
	setup "$who"

	# ---- approved from the CLI: lands where it should, as the process ----
	start "umask 077; echo hello >'$H/.toolrc'; echo \"rc \$?\"" --ask web --ask-timeout 20s
	wait_pending "$H/.toolrc"
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "$who: a write to ~/.toolrc is held as an ask" "$out"
	cli approve "$id"
	finish
	tap_is "$(cat "$OUT")" "rc 0" "$who: approved from the CLI, the write succeeds" "$(diag)"
	tap_is "$(cat "$H/.toolrc" 2>&1)" "hello" "$who: ... and lands in the intended file"
	tap_is "$(stat -c '%u %a' "$H/.toolrc" 2>&1)" "$UID_ 600" \
		"$who: ... created with the process's uid and its umask (077)"
	tap_is "$(grep -c '"kind":"file".*"verdict":"ask"' "$AUD" 2>/dev/null)" 1 \
		"$who: the audit log has the ask, of kind file"

	# ---- a directory symlink swapped while the card is up ----
	as_user "ln -sfn '$H/real' '$H/link'"
	start "echo secret >'$H/link/f'; echo \"rc \$?\"" --ask web --ask-timeout 20s
	wait_pending "$H/real/f"
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" \
		"$who: the card names the resolved file ($H/real/f), not the symlink" "$out"
	as_user "ln -sfn '$H/victim' '$H/link.new' && mv -T '$H/link.new' '$H/link'"
	cli approve "$id"
	finish
	tap_is "$(cat "$OUT"):$(cat "$H/real/f" 2>&1)" "rc 0:secret" \
		"$who: after the swap, the approved write still lands where the card said" "$(diag)"
	tap_ok "$([ ! -e "$H/victim/f" ] && echo 0 || echo 1)" "$who: ... and nothing reached the swapped-in directory"

	# ---- the file itself replaced by a symlink while the card is up ----
	start "echo x >>'$H/g'; echo \"rc \$?\"" --ask web --ask-timeout 20s
	wait_pending "$H/g"
	as_user "ln -s '$H/victim/g2' '$H/g'"
	cli approve "$id"
	finish
	tap_like "$(cat "$OUT")" "^rc [12]\$" "$who: a symlink in the file's place: the write fails" "$(diag)"
	tap_ok "$([ ! -e "$H/victim/g2" ] && echo 0 || echo 1)" "$who: ... and the symlink's target was not created"

	# ---- denied with a reason: EACCES and the reason on the process's stderr ----
	start "(echo x >'$H/.d') 2>'$WT/e'; echo \"rc \$?\"; cat '$WT/e'" --ask web --ask-timeout 20s
	wait_pending "$H/.d"
	cli deny "$id" --reason "not today"
	finish
	tap_like "$(cat "$OUT")" "^rc [12]" "$who: denied from the CLI, the write fails" "$(diag)"
	tap_like "$(cat "$OUT")" "cloister: write to $H/.d refused: not today — ask the user to allow it" \
		"$who: ... and the process reads why on its stderr" "$(diag)"
	tap_ok "$([ ! -e "$H/.d" ] && echo 0 || echo 1)" "$who: ... and no file was made"

	# ---- timed out ----
	start "(echo x >'$H/.t') 2>'$WT/e'; echo \"rc \$?\"; cat '$WT/e'" --ask web --ask-timeout 1s
	finish
	tap_like "$(cat "$OUT")" "^rc [12]
cloister: write to $H/.t refused: No approval within 1s" "$who: an ask nobody answers times out: EACCES and why" "$(diag)"

	# ---- protect and hide: refused at once, never asked; inside fs.write: never asked ----
	rm -f "$AUD"
	start "(echo x >.git/hooks/pre-commit) 2>e1; echo \"rc \$?\"; (echo y >'$H/.ssh/id_x') 2>e2; echo \"rc \$?\"; echo z >inside; echo \"rc \$?\"; cat e1 e2" \
		--ask web --ask-timeout 20s
	finish
	tap_like "$(head -n 3 "$OUT" | tr '\n' ' ')" "^rc [12] rc [12] rc 0 \$" \
		"$who: fs.protect and fs.hide fail at once (no one answered), the worktree is written" "$(diag)"
	tap_like "$(cat "$OUT")" "cloister: write to $WT/.git/hooks/pre-commit refused: fs\\.protect\\[[0-9]*\\] \"\\{worktree\\}/\\.git/hooks\" \\(.*\\) — ask the user to allow it" \
		"$who: the protected write's reason names fs.protect" "$(diag)"
	tap_like "$(cat "$OUT")" "cloister: write to $H/.ssh/id_x refused: fs\\.hide" \
		"$who: the hidden write's reason names fs.hide" "$(diag)"
	tap_is "$(grep -c '"kind":"file".*"verdict":"ask"' "$AUD" 2>/dev/null)" 0 "$who: none of them was asked" \
		"$(head -c 2000 "$AUD" 2>&1)"
done
tap_done
