#!/bin/sh
# The audit log is bounded whatever the agent does: an exec with a 1 MB argv is one short line
# that carries the argument count, the byte count and the SHA-256 of the whole list; a burst of
# auto-allowed execs writes at most the rate's lines, and every other one is counted in
# "suppressed" records (none lost, none written twice); asks a person answers, and their
# decisions, are all written even while automatic lines are being suppressed. As root and as
# an unprivileged user. Prints TAP.
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"

PLAN=31
run_needs_root $PLAN
run_needs_tools $PLAN setpriv sha256sum
tap_plan $PLAN

NOBODY=65534
U=$TMP/nobody
chmod 711 "$TMP"
mkdir -p "$U/cfg" "$U/r"
cp "$SUPERVISOR" "$U/cloister-supervisor"
cp "$HELPERS/execloop" "$U/execloop"
cat >"$U/cfg/config.yaml" <<'EOF'
exec:
  security: full
  defaults: false
EOF
cp "$U/cfg/config.yaml" "$CFG/config.yaml"
chown -R "$NOBODY:$NOBODY" "$U"

# The agents' files are under $TMP, which they see only from a run started there: their /tmp
# is private.
# Ten arguments of 100 000 bytes (one may not exceed 128 KiB): 1 MB of argv in one exec.
cat >"$U/big.sh" <<'EOF'
big=$(head -c 100000 /dev/zero | tr '\0' A)
/bin/true $big $big $big $big $big $big $big $big $big $big
EOF
chmod 644 "$U/big.sh"
big=$(head -c 100000 /dev/zero | tr '\0' A)
# shellcheck disable=SC2086 # ten words on purpose
want_sha=$(printf '%s\0' /bin/true $big $big $big $big $big $big $big $big $big $big |
	sha256sum | cut -d' ' -f1)
want_bytes=$((10 + 10 * 100001))

# as WHO RUN-OPTIONS… -- AGENT…: the supervisor as root or nobody; $aud is its audit log.
as() {
	who=$1
	shift
	if [ "$who" = root ]; then
		aud=$AUDIT
		rm -f "$aud"
		(cd "$TMP" && timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask none "$@") \
			</dev/null >"$OUT" 2>"$ERR"
	else
		aud=$U/state/cloister/audit.log
		rm -f "$aud"
		(cd "$U" && timeout -k 5 60 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			env HOME="$U" XDG_CONFIG_HOME="$U/.config" XDG_STATE_HOME="$U/state" \
			"$U/cloister-supervisor" run --config-dir "$U/cfg" --ask none "$@") \
			</dev/null >"$OUT" 2>"$ERR"
	fi
	rc=$?
}
now_ms() { date +%s%3N; }
# sum_suppressed: the lines the suppressed records of $aud count.
sum_suppressed() {
	sed -n 's/.*"verdict":"suppressed".*"suppressed":\([0-9]*\)}$/\1/p' "$aud" |
		awk '{ s += $1 } END { print s + 0 }'
}

for who in root nobody; do
	# ---- one exec, 1 MB of argv ----
	# Its verdict does not matter here (a deny rule on the command line cannot be ruled out
	# on so long a one, so it is asked, and nobody answers): every line of it is bounded.
	as "$who" -- sh "$U/big.sh"
	longest=$(grep '"exe":"/usr/bin/true"' "$aud" 2>/dev/null | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
	n=$(grep -c '"exe":"/usr/bin/true"' "$aud" 2>/dev/null)
	tap_ok "$([ "$n" -ge 1 ] && echo 0 || echo 1)" "$who: an exec with 1 MB of argv is in the audit log ($n lines)" "$(diag)"
	tap_ok "$([ "$longest" -gt 0 ] && [ "$longest" -lt 16384 ] && echo 0 || echo 1)" \
		"$who: its audit lines are bounded (the longest: $longest bytes)" "$(head -c 300 "$aud" 2>/dev/null)"
	line=$(grep '"exe":"/usr/bin/true"' "$aud" 2>/dev/null | head -n 1)
	tap_like "$line" "\"argv_summary\":\\{\"argc\":11,\"bytes\":$want_bytes," \
		"$who: ... and carries the argument count and the full length" "$(printf '%s' "$line" | tail -c 300)"
	tap_like "$line" "\"sha256\":\"$want_sha\",\"last_cut\":true,\"complete\":true\\}" \
		"$who: ... and the SHA-256 of the whole list, each argument with its NUL"
	tap_like "$line" '"argv":\["/bin/true","AAAAAAAAAA' "$who: ... and its start"

	# ---- a burst of auto-allowed execs over the rate ----
	loop=$U/execloop
	t0=$(now_ms)
	as "$who" --audit-rate 1 --audit-burst 20 -- "$loop" 200 /bin/true
	secs=$((($(now_ms) - t0) / 1000 + 1))
	tap_is "$rc" 0 "$who: 200 auto-allowed execs run under --audit-rate 1 --audit-burst 20" "$(diag)"
	written=$(grep -c '"decided_by":"policy"' "$aud" 2>/dev/null)
	counted=$(sum_suppressed)
	records=$(grep -c '"verdict":"suppressed"' "$aud" 2>/dev/null)
	tap_is "$((written + counted))" 201 \
		"$who: every automatic verdict is written or counted, once ($written + $counted)"
	tap_ok "$([ "$written" -ge 20 ] && [ "$written" -le $((20 + secs)) ] && echo 0 || echo 1)" \
		"$who: at most the burst and the rate's lines are written ($written in ${secs} s)"
	tap_ok "$([ "$records" -ge 1 ] && [ "$records" -le "$secs" ] && echo 0 || echo 1)" \
		"$who: the rest are counted in $records suppressed record(s), one per lift" \
		"$(grep '"verdict":"suppressed"' "$aud")"
done

# ---- the count is written when the limit lifts, not only at the end ----
# A burst, then the agent blocks in a shell builtin (no exec) until the test lets it go: the
# burst's count must appear meanwhile (the lift is 1 s later at 1 line a second), and before
# the line of the agent's next exec.
mkfifo "$TMP/go"
chmod 666 "$TMP/go"
rm -f "$AUDIT"
(cd "$TMP" && timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask none --audit-rate 1 \
	--audit-burst 5 -- sh -c "$U/execloop 30 /bin/true; read x <$TMP/go; /bin/true after-the-lift" \
	</dev/null >"$OUT" 2>"$ERR") &
svpid=$!
aud=$AUDIT
i=0
while ! grep -q '"verdict":"suppressed"' "$aud" 2>/dev/null && [ $i -lt 100 ] &&
	kill -0 "$svpid" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
tap_ok "$(grep -q '"verdict":"suppressed"' "$aud" 2>/dev/null && kill -0 "$svpid" 2>/dev/null && echo 0 || echo 1)" \
	"a burst's count is written when the limit lifts, while the agent still runs" "$(diag)"
# Bounded: a supervisor that is already gone has no reader on the fifo.
timeout 10 sh -c "echo go >\"$TMP/go\""
wait "$svpid"
first_count=$(grep -n '"verdict":"suppressed"' "$aud" | head -n 1 | cut -d: -f1)
after=$(grep -n '"summary":"true after-the-lift"' "$aud" | head -n 1 | cut -d: -f1)
tap_ok "$([ -n "$first_count" ] && [ -n "$after" ] && [ "$first_count" -lt "$after" ] && echo 0 || echo 1)" \
	"... before the line of the next exec (lines $first_count, $after)" \
	"$(grep -E '"verdict":"suppressed"|after-the-lift' "$aud")"
tap_is "$(($(grep -c '"decided_by":"policy"' "$aud") + $(sum_suppressed)))" 33 \
	"... and every automatic verdict is written or counted (sh, execloop, 30 true, true)"

# ---- asks a person answers in the middle of a burst: all of them are written ----
export XDG_RUNTIME_DIR="$TMP/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
cat >"$CFG/config.yaml" <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/true"
    - path: "$U/execloop"
  defaults: false
EOF
rm -f "$AUDIT"
(cd "$TMP" && timeout -k 5 60 "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 30s \
	--audit-rate 1 --audit-burst 5 --listen-approval 127.0.0.1:0 --listen-tokens off \
	--listen-request off -- sh -c "$U/execloop 60 /bin/true; /usr/bin/id -u >/dev/null
		echo id \$? >$TMP/asks; $U/execloop 60 /bin/true; /usr/bin/whoami >/dev/null
		echo whoami \$? >>$TMP/asks; $U/execloop 60 /bin/true" \
	</dev/null >"$OUT" 2>"$ERR") &
svpid=$!
on_exit "kill $svpid 2>/dev/null"
# decide CMD VERB: wait for CMD's ask in `pending`, then approve or deny it with the CLI.
decide() {
	id=
	i=0
	while [ -z "$id" ] && [ $i -lt 200 ] && kill -0 "$svpid" 2>/dev/null; do
		id=$("$SUPERVISOR" pending 2>/dev/null | awk -v c="$1" '$NF == c || $(NF-1) == c { print $1 }' | head -n 1)
		[ -n "$id" ] || sleep 0.05
		i=$((i + 1))
	done
	"$SUPERVISOR" "$2" "$id" >/dev/null 2>&1
}
decide "-u" approve
decide whoami deny
wait "$svpid"
rc=$?
tap_is "$rc" 0 "a run whose asks a person answers between bursts ends normally" "$(diag)"
tap_is "$(tr '\n' ' ' <"$TMP/asks" 2>/dev/null)" "id 0 whoami 126 " \
	"the approved ask ran, the denied one did not"
tap_is "$(audit_count '"exe":"/usr/bin/id".*"verdict":"ask"')" 1 "the ask for id is written"
tap_is "$(audit_count '"exe":"/usr/bin/id".*"verdict":"approved".*"decided_by":"cli"')" 1 \
	"... and the person's approval"
tap_is "$(audit_count '"exe":"/usr/bin/whoami".*"verdict":"ask"')" 1 "the ask for whoami is written"
tap_is "$(audit_count '"exe":"/usr/bin/whoami".*"verdict":"denied".*"decided_by":"cli"')" 1 \
	"... and the person's denial"
aud=$AUDIT
tap_ok "$([ "$(sum_suppressed)" -gt 100 ] && echo 0 || echo 1)" \
	"meanwhile the automatic lines were suppressed ($(sum_suppressed) counted)" \
	"$(grep -c '"decided_by":"policy"' "$AUDIT") written"

# ---- asks that come and go: an agent that asks and kills the asking process at once ----
# Nobody decides them, and the agent can repeat it as fast as it likes: those lines have a
# rate of their own (apart from the automatic verdicts', so a flood of those never hides an
# ask), and what is over is counted.
cat >"$CFG/config.yaml" <<EOF
exec:
  security: allowlist
  ask: on-miss
  ask_fallback: deny
  allow:
    - path: "/usr/bin/dash"
    - path: "/usr/bin/sleep"
  defaults: false
EOF
rm -f "$AUDIT"
cd "$TMP" || exit 1 # the run's directory stays visible in its private /tmp
# shellcheck disable=SC2016 # the agent's shell expands it
timeout -k 5 90 "$SUPERVISOR" run --config-dir "$CFG" --ask web --ask-timeout 30s \
	--audit-rate 1 --audit-burst 5 --listen-approval 127.0.0.1:0 --listen-tokens off \
	--listen-request off -- sh -c 'i=0; while [ $i -lt 150 ]; do /usr/bin/id $i &
		sleep 0.02; kill -9 $!; i=$((i + 1)); done; wait' </dev/null >"$OUT" 2>"$ERR"
rc=$?
aud=$AUDIT
written=$(audit_count '"exe":"/usr/bin/id".*"verdict":"(ask|cancelled)"')
counted=$(sed -n 's/.*unanswered ask lines not written.*"suppressed":\([0-9]*\)}$/\1/p' "$aud" |
	awk '{ s += $1 } END { print s + 0 }')
tap_is "$rc" 0 "an agent that makes 150 asks and kills each asking process ends normally" "$(diag)"
tap_ok "$([ "$written" -le 40 ] && echo 0 || echo 1)" \
	"its asks and their cancellations are held to the rate ($written lines written)"
tap_ok "$([ "$counted" -gt 0 ] && [ $((written + counted)) -ge 150 ] && echo 0 || echo 1)" \
	"... and what is over is counted ($counted in suppressed records)"
tap_done
