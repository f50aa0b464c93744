#!/bin/sh
# Who opened a connection, for the domain card. As root, eBPF programs on the sandbox's cgroup
# note it at connect and the proxy looks it up at accept: connects are not seccomp-notified.
# As an ordinary user (no eBPF), the connect notification names it. Either way the card names
# the process (pid, exe, argv); and the map the programs fill is out of the agent's reach.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=8
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl bpftool
tap_plan $PLAN

R=$TMP/r
mkdir -p "$R"
# Never dialled: the card comes before the upstream connection, and nobody answers it.
printf '192.0.2.1 unlisted.test\n' >"$TMP/hosts"
write_config <<'EOF'
proxy:
  unlisted_domain_behavior: request_approval
  defaults: false
exec:
  security: full
  defaults: false
EOF

# card_of RUNTIME_DIR: the pending domain cards of the supervisor whose API file is there, once
# one is pending (empty after 20 s).
card_of() {
	card_dir=$1
	card_body=""
	card_end=$(($(date +%s) + 20))
	while [ "$(date +%s)" -lt "$card_end" ]; do
		card_info=$(cat "$card_dir"/cloister/api/*.json 2>/dev/null)
		card_url=$(printf '%s' "$card_info" | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')
		card_tok=$(printf '%s' "$card_info" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
		if [ -n "$card_url" ]; then
			card_body=$(curl -s -H "Authorization: Bearer $card_tok" "$card_url/pending-domains")
			case $card_body in *unlisted.test*) break ;; esac
		fi
		sleep 0.05
	done
	printf '%s' "$card_body"
}

# ---- as root: the card names the process, in the sandbox's netns and on the host's network --
AGENT="curl -sS -m 30 http://unlisted.test/"
for mode in netns host; do
	rt=$TMP/xdg-$mode
	mkdir -p "$rt"
	chmod 700 "$rt"
	net=""
	[ "$mode" = host ] && net="--net host"
	# shellcheck disable=SC2086 # $net is one option or none
	(cd "$TMP" && XDG_RUNTIME_DIR=$rt exec timeout -k 5 40 "$SUPERVISOR" run --config-dir "$CFG" \
		--ask web $net --hosts "$TMP/hosts" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off -- $AGENT \
		</dev/null >"$TMP/$mode.out" 2>"$TMP/$mode.err") &
	bg=$!
	on_exit "kill $bg 2>/dev/null"
	card=$(card_of "$rt")
	kill "$bg" 2>/dev/null
	wait "$bg"
	tap_like "$card" '"exe":"[^"]*curl","args":\["curl","-sS"' \
		"root ($mode): the card names the process that connected" \
		"$card $(cat "$TMP/$mode.err")"
	tap_like "$card" '"pid":[1-9]' "root ($mode): ... with its pid" "$card"
done

# ---- as root, connects cost no notification --------------------------------------------------
# 300 connects of the agent to its own listener: with the seccomp connect notification each
# would be one (the exec of the helper is one).
sv -v -- "$HELPERS/connloop" 300
n=$(sed -n 's/.*: \([0-9]*\) exec notifications handled.*/\1/p' "$ERR")
tap_ok "$([ "$rc" = 0 ] && [ -n "$n" ] && [ "$n" -lt 300 ] && echo 0 || echo 1)" \
	"root: the agent's connects are not seccomp-notified ($n notifications for 300)" "$(diag)"

# ---- the agent cannot open the map (BPF_MAP_GET_FD_BY_ID needs CAP_SYS_ADMIN on the host) -----
rt=$TMP/xdg-map
mkdir -p "$rt"
chmod 700 "$rt"
(cd "$TMP" && XDG_RUNTIME_DIR=$rt exec timeout -k 5 40 "$SUPERVISOR" run -v --config-dir "$CFG" \
	--ask none -- sh -c "i=0; while [ ! -s $R/ids ] && [ \$i -lt 400 ]; do sleep 0.05; \
		i=\$((i + 1)); done; $HELPERS/bpfmapid \$(cat $R/ids) >$R/map 2>&1; echo \$? >$R/map.rc" \
	</dev/null >"$TMP/map.out" 2>"$TMP/map.err") &
bg=$!
on_exit "kill $bg 2>/dev/null"
# The map is found through the supervisor's own fds (an LRU hash of connattr's size), not by
# listing every map: `bpftool map show` stops at a map that goes away while it lists, which
# other runs' maps do all the time on a busy machine.
map_ids() {
	for m_pid in $(pgrep -P "$bg"); do
		for m_fd in /proc/"$m_pid"/fd/*; do
			[ "$(readlink "$m_fd" 2>/dev/null)" = anon_inode:bpf-map ] || continue
			m_info=/proc/$m_pid/fdinfo/${m_fd##*/}
			grep -q '^map_type:[[:space:]]*9$' "$m_info" 2>/dev/null || continue
			grep -q '^max_entries:[[:space:]]*16384$' "$m_info" 2>/dev/null || continue
			sed -n 's/^map_id:[[:space:]]*//p' "$m_info"
		done
	done
}
have_map() { [ -n "$(map_ids)" ]; }
wait_until 20 have_map
map_ids | tr '\n' ' ' >"$R/ids.tmp"
mv "$R/ids.tmp" "$R/ids"
wait "$bg"
tap_ok "$([ -s "$R/ids" ] && echo 0 || echo 1)" "root: the supervisor's map exists while the agent runs" \
	"$(cat "$TMP/map.err")"
tap_is "$(cat "$R/map.rc" 2>&1):$(grep -c opened "$R/map" 2>&1)" "0:0" \
	"root: the agent (root in its namespaces) cannot open it by id" "$(cat "$R/map" 2>&1)"

# ---- as nobody: the connect notification names the process ----------------------------------
NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/xdg"
chmod 700 "$U/xdg"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$CFG/config.yaml" "$U/cfg/config.yaml"
cp "$TMP/hosts" "$U/hosts"
chown -R "$NOBODY:$NOBODY" "$U"
# shellcheck disable=SC2086 # $AGENT is the command and its arguments
(cd "$U" && exec timeout -k 5 40 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" XDG_RUNTIME_DIR="$U/xdg" \
	"$U/cloister-supervisor" run --config-dir "$U/cfg" --hosts "$U/hosts" --ask web \
	--listen-approval 127.0.0.1:0 --listen-tokens off --listen-request off -- $AGENT \
	</dev/null >"$TMP/nobody.out" 2>"$TMP/nobody.err") &
bg=$!
on_exit "kill $bg 2>/dev/null"
card=$(card_of "$U/xdg")
kill "$bg" 2>/dev/null
wait "$bg"
tap_like "$card" '"exe":"[^"]*curl","args":\["curl","-sS".*"pid":[1-9]|"pid":[1-9].*"exe":"[^"]*curl","args":\["curl","-sS"' \
	"nobody: the card names the process that connected (pid, exe, argv)" \
	"$card $(cat "$TMP/nobody.err")"

tap_done
