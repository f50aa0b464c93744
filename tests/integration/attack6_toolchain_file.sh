#!/bin/sh
# Attack on the built-in protect list, as root and as an unprivileged user: rustup's toolchain
# file. Every rustup proxy (cargo, rustc, rust-analyzer, `rustc --version` run by a shell
# prompt such as starship's on cd) looks for rust-toolchain.toml (or the older rust-toolchain)
# from the working directory up, and `[toolchain] path = "/abs/dir"` there makes it run
# /abs/dir/bin/PROGRAM — any program. The agent writes one at the project's top naming a
# directory of its own in the project: the person's next `cargo --version` there (or the
# prompt, or the editor opening the folder) runs the agent's program, outside the sandbox,
# though the person ran no file of the project. The file is to rustup what .tool-versions is
# to asdf and mise, which the list protects.
# What must hold, like for those: an existing toolchain file stays read-only (the agent's write
# fails, the content is the person's), and one made during the run is moved aside at its end
# (rust-toolchain.toml.cloister-blocked): a host rustup in the project then runs its own
# toolchain (shown with root's rustup when it is installed). Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/confine_common.sh
. "$(dirname "$0")/../lib/confine_common.sh"

PLAN=12
run_needs_root $PLAN
run_needs_tools $PLAN setpriv
tap_plan $PLAN

attack_setup
cp "$SUPERVISOR" "$U/cloister-supervisor"
chown "$NOBODY:$NOBODY" "$U/cloister-supervisor"

# The agent, in the project ($U, the run's working directory): a "toolchain" of its own and the
# toolchain files naming it. Each write is tried; what failed is said.
cat >"$U/agent.sh" <<'EOF'
mkdir -p tc/bin
printf '#!/bin/sh\necho agent-code-ran >"%s/ran"\necho rustc 9.9.9\n' "$PWD" >tc/bin/rustc
chmod 755 tc/bin/rustc
cp tc/bin/rustc tc/bin/cargo
for f in rust-toolchain.toml rust-toolchain; do
	printf '[toolchain]\npath = "%s/tc"\n' "$PWD" >"$f" || echo "refused: $f"
done
EOF
chmod 644 "$U/agent.sh"

# host_rustc: what root's rustup runs for `rustc --version` in the project ("" without one).
host_rustc() {
	command -v rustup >/dev/null 2>&1 || return 0
	(cd "$U" && rustc --version 2>/dev/null)
}

for who in root nobody; do
	rm -rf "$U/tc" "$U/ran" "$U"/rust-toolchain*
	# 1. No toolchain file at the start: the agent makes both.
	sv_as "$who" --ask none -- /bin/sh "$U/agent.sh"
	tap_ok "$(test "$rc" -eq 0 && echo 0 || echo 1)" "$who, no file at the start: the agent ran" \
		"$(diag)"
	tap_ok "$([ ! -e "$U/rust-toolchain.toml" ] && [ ! -e "$U/rust-toolchain" ] &&
		[ -f "$U/rust-toolchain.toml.cloister-blocked" ] && echo 0 || echo 1)" \
		"$who, no file at the start: what the agent made is moved aside at the end" "$(diag)"
	tap_ok "$(grep -qF "created $U/rust-toolchain.toml, which is protected (fs.protect)" "$ERR" &&
		echo 0 || echo 1)" "$who, no file at the start: the run says so" "$(diag)"
	if [ "$who" = nobody ]; then
		tap_skip "$who: the host's rustc in the project runs no program of the agent's" \
			"shown with root's rustup only"
	elif command -v rustup >/dev/null 2>&1; then
		host_rustc >/dev/null
		tap_ok "$([ ! -e "$U/ran" ] && echo 0 || echo 1)" \
			"$who: the host's rustc in the project runs no program of the agent's"
	else
		tap_skip "$who: the host's rustc in the project runs no program of the agent's" \
			"rustup is not installed for root (the other cases do not need it)"
	fi
	# 2. The person's toolchain file exists: the agent's write is refused.
	rm -rf "$U/tc" "$U/ran" "$U"/rust-toolchain*
	printf '[toolchain]\nchannel = "stable"\n' >"$U/rust-toolchain.toml"
	printf 'stable\n' >"$U/rust-toolchain"
	chown "$NOBODY:$NOBODY" "$U/rust-toolchain.toml" "$U/rust-toolchain"
	sv_as "$who" --ask none -- /bin/sh "$U/agent.sh"
	tap_like "$(cat "$OUT")" "refused: rust-toolchain.toml" \
		"$who, the person's file: the agent's write is refused" "$(diag)"
	tap_is "$(cat "$U/rust-toolchain.toml" "$U/rust-toolchain")" "[toolchain]
channel = \"stable\"
stable" "$who, the person's file: its content is the person's"
done

tap_done
