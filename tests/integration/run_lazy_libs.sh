#!/bin/sh
# The libraries only a sandbox netns needs (libnftables for its rules, libnl for its routes;
# base/dynlib.h) are loaded while the supervisor sets it up, then unloaded: an idle supervisor,
# root or not, maps neither. When one cannot be loaded (here: its file shows /dev/null in a
# mount namespace of the test, the system's file untouched), run says which library, what
# needs it and why, and the agent runs without a network (fail closed); --net none needs
# neither and runs as usual. libgmp, which libnftables loads and GnuTLS keeps, gets its own
# allocator back from libnftables before the unload (tests/helpers/nftunload).
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=15
run_needs_root $PLAN
run_needs_tools $PLAN setpriv unshare curl ldconfig
lib_path() { ldconfig -p | awk -v n="$1" '$1 == n { print $NF; exit }'; }
NFT=$(lib_path libnftables.so.1)
NL=$(lib_path libnl-route-3.so.200)
if [ -z "$NFT" ] || [ -z "$NL" ]; then
	run_skip_all $PLAN "libnftables or libnl is not installed"
fi
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/w"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cat >"$U/cfg/config.yaml" <<'EOF'
proxy:
  defaults: false
exec:
  security: full
  defaults: false
EOF
chown -R "$NOBODY:$NOBODY" "$U"

# idle_maps AS: start `run` (AS: root or nobody) with an agent that waits for a file, and
# print which of the two libraries the supervisor maps while the agent idles.
idle_maps() {
	W=$U/w
	st=$U/state-$1
	rm -f "$W/ready" "$W/done"
	if [ "$1" = nobody ]; then
		set -- setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups
	else
		set --
	fi
	(cd "$W" && exec "$@" env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
		XDG_STATE_HOME="$st" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
		--ask none -- sh -c 'echo up >ready; while [ ! -e done ]; do sleep 0.05; done') \
		</dev/null >"$OUT" 2>"$ERR" &
	svpid=$!
	on_exit "kill $svpid 2>/dev/null"
	if wait_file 20 "$W/ready"; then
		grep -oE 'libnftables|libnl-[a-z-]*3' "/proc/$svpid/maps" | sort -u | tr '\n' ' '
	else
		echo "the agent did not start"
	fi
	touch "$W/done"
	wait_until 20 sh -c "! kill -0 $svpid 2>/dev/null" || kill -9 "$svpid"
	wait "$svpid"
}

maps=$(idle_maps root)
tap_is "$maps" "" "root: the idle supervisor maps neither libnftables nor libnl" "$maps $(diag)"
tap_ok "$(grep -q 'no network' "$ERR" && echo 1 || echo 0)" \
	"root: ... and the agent got its network (rules installed before the unload)" "$(diag)"
maps=$(idle_maps nobody)
tap_is "$maps" "" "non-root: the idle supervisor maps neither libnftables nor libnl" "$maps $(diag)"
tap_ok "$(grep -q 'no network' "$ERR" && echo 1 || echo 0)" \
	"non-root: ... and the agent got its network" "$(diag)"

# hidden LIB AS [RUN OPTIONS]: run an agent that tries to reach an address out of the netns,
# with LIB's file showing /dev/null to the supervisor (a private mount namespace).
hidden() {
	lib=$(readlink -f "$1")
	as=$2
	st=$U/state-$as
	shift 2
	if [ "$as" = nobody ]; then
		drop="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	else
		drop=""
	fi
	# shellcheck disable=SC2016,SC2086
	(cd "$U/w" && exec timeout -k 5 "$SV_TIMEOUT" unshare -m --propagation private sh -c '
		mount --bind /dev/null "$1" || exit 99
		shift
		exec "$@"' sh "$lib" $drop env HOME="$U" XDG_CONFIG_HOME="$U/.config" \
		XDG_STATE_HOME="$st" "$U/cloister-supervisor" run --config-dir "$U/cfg" \
		--ask none "$@" -- sh -c 'curl -sS -m 2 http://192.0.2.1/ >/dev/null 2>&1
			echo "agent ran, curl $?"') </dev/null >"$OUT" 2>"$ERR"
	rc=$?
}

hidden "$NFT" root
tap_like "$(cat "$ERR")" "no network for the agent: cannot load libnftables\\.so\\.1, needed for the sandbox's egress rules .*: .*libnftables\\.so\\.1.*: [a-z]" \
	"root, libnftables unloadable: run names the library, what needs it and the loader's reason" "$(diag)"
tap_like "$rc $(cat "$OUT")" "^0 agent ran, curl [1-9]" \
	"root, libnftables unloadable: the agent runs without a network (fail closed)" "$(diag)"

hidden "$NL" root
tap_like "$(cat "$ERR")" "no network for the agent: cannot load libnl-route-3\\.so\\.200, needed for the sandbox's network namespace" \
	"root, libnl unloadable: run names the library and what needs it" "$(diag)"
tap_like "$rc $(cat "$OUT")" "^0 agent ran, curl [1-9]" \
	"root, libnl unloadable: the agent runs without a network (fail closed)" "$(diag)"

hidden "$NFT" nobody
tap_like "$(cat "$ERR")" "no network for the agent: cannot load libnftables\\.so\\.1, needed for" \
	"non-root, libnftables unloadable: the same message" "$(diag)"
tap_like "$rc $(cat "$OUT")" "^0 agent ran, curl [1-9]" \
	"non-root, libnftables unloadable: the agent runs without a network" "$(diag)"

hidden "$NFT" root --net none
tap_like "$rc $(cat "$OUT")" "^0 agent ran, curl [1-9]" \
	"--net none without libnftables: the agent runs" "$(diag)"
tap_ok "$(grep -q 'libnftables' "$ERR" && echo 1 || echo 0)" \
	"--net none: no word of libnftables, which it does not need" "$(diag)"

hidden "$NL" nobody --net none
tap_like "$rc $(cat "$OUT")" "^0 agent ran, curl [1-9]" \
	"non-root, --net none without libnl: the agent runs" "$(diag)"
tap_ok "$(grep -q 'libnl' "$ERR" && echo 1 || echo 0)" \
	"non-root, --net none: no word of libnl" "$(diag)"

out=$("$HELPERS/nftunload" 2>&1)
st=$?
if [ "$st" -eq 77 ]; then
	tap_skip "libgmp allocates with its own allocator after the unload" "$out"
else
	tap_is "$st $out" "0 ok" \
		"after libnftables' unload, libgmp (kept by another library) allocates with its own allocator"
fi
