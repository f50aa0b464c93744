#!/bin/sh
# Attack on a file ask (fs.ask: on-write) from a web page: the ask is answered, for every run
# (scope global), by a request the person's browser sends for a page of another origin. Each
# request carries the API token (the worst case: what the session cookie gives a browser), so
# only the origin rules stand in the way: an Origin of another site, of another port of
# 127.0.0.1 (a dev server: the same site, not the same origin), a cross-site fetch without an
# Origin (Sec-Fetch-Site), a DNS-rebound Host. As root and as nobody.
# Held: each is refused (403), the ask still waits, nothing is written to the decisions file;
# the person's own approval (no Origin: the CLI) then lets the write through.
# Prints TAP.
set -u
# shellcheck source=tests/lib/run_common.sh
. "$(dirname "$0")/../lib/run_common.sh"
# shellcheck source=tests/lib/ask_common.sh
. "$(dirname "$0")/../lib/ask_common.sh"

PLAN=18
run_needs_root $PLAN
run_needs_tools $PLAN setpriv curl /usr/bin/python3
tap_plan $PLAN

PROJECT=a3f$$
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

for who in root nobody; do
	user_tree "$who"
	cat >"$W/cfg/config.yaml" <<'YAML'
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
	# shellcheck disable=SC2086 # words on purpose
	(cd "$WT" && exec timeout -k 5 30 $AS $USER_ENV "$BIN" run --config-dir "$W/cfg" \
		--project "$PROJECT" --name "a3f$$" --listen-approval 127.0.0.1:0 \
		--listen-tokens off --listen-request off --ask web --ask-timeout 25s -- \
		sh -c "echo agent >>'$H/.toolrc'; echo \"rc \$?\"") </dev/null >"$OUT" 2>"$ERR" &
	SV=$!
	on_exit "kill $SV 2>/dev/null"
	wait_pending "$H/.toolrc"
	tap_ok "$([ -n "$id" ] && echo 0 || echo 1)" "$who: the write to ~/.toolrc is asked" "$out"
	for json in "$W"/rt/cloister/api/[0-9]*.json; do break; done
	URL=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$json")
	TOKEN=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$json")
	post() { # HEADER…: the status of a global approval of the ask with these headers
		set -- -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"
		curl -s -o /dev/null -w '%{http_code}' "$@" --data '{"scope":"global"}' \
			"$URL/approve/$id"
	}
	tap_is "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		-H "Origin: $URL" "$URL/pending")" 200 \
		"$who: the token and the dashboard's own origin are accepted (the control)"
	OTHER=$(free_port)
	tap_is "$(post -H 'Origin: https://evil.example')" 403 \
		"$who: an approval from another site's page is refused"
	tap_is "$(post -H "Origin: http://127.0.0.1:$OTHER")" 403 \
		"$who: ... from a page on another port of 127.0.0.1 (not a dashboard of the user)"
	tap_is "$(post -H 'Sec-Fetch-Site: cross-site')" 403 \
		"$who: ... a cross-site fetch without an Origin"
	HOSTPORT=${URL#http://127.0.0.1:}
	tap_is "$(post -H "Host: evil.example:$HOSTPORT")" 403 \
		"$who: ... a DNS-rebound name"
	cli pending
	tap_ok "$(printf '%s\n' "$out" | grep -qF "$H/.toolrc" && echo 0 || echo 1)" \
		"$who: the ask still waits" "$out"
	cli approve "$id"
	finish
	tap_is "$(cat "$OUT"):$(cat "$H/.toolrc" 2>&1)" "rc 0:agent" \
		"$who: the person's approval lets the write through" "$(diag)"
	tap_ok "$([ ! -e "$W/cfg/decisions/global.yaml" ] && echo 0 || echo 1)" \
		"$who: nothing was remembered for the next runs" "$(cat "$W/cfg/decisions/global.yaml" 2>&1)"
done
tap_done
