#!/bin/sh
# `cloister-supervisor policy check|show` from the command line: verdicts, exit statuses, the
# deciding rule's file:line, usage and config errors. Prints TAP.
#
# Runs against temporary config directories only; HOME and XDG_CONFIG_HOME point into a
# temporary directory too, and the last test checks that nothing was written there.
set -u

SUPERVISOR=${SUPERVISOR:-build/bin/cloister-supervisor}
case $SUPERVISOR in
/*) ;;
*) SUPERVISOR=$(pwd)/$SUPERVISOR ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloister-cli-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
HOME=$tmp/home
XDG_CONFIG_HOME=$tmp/home/.config
export HOME XDG_CONFIG_HOME
mkdir -p "$HOME"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for line in "$@"; do echo "#   $line"; done
	sed 's/^/#   stdout: /' "$tmp/out"
	sed 's/^/#   stderr: /' "$tmp/err"
}

# run ARGS...: run the supervisor, stdout to $tmp/out, stderr to $tmp/err, status in $rc.
run() {
	"$SUPERVISOR" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# expect NAME STATUS [GREP-PATTERN FILE]...: check the last run.
expect() {
	name=$1
	want=$2
	shift 2
	if [ "$rc" -ne "$want" ]; then
		not_ok "$name" "exit status $rc, expected $want"
		return
	fi
	while [ $# -ge 2 ]; do
		if ! grep -qF -- "$1" "$tmp/$2"; then
			not_ok "$name" "$2 lacks: $1"
			return
		fi
		shift 2
	done
	ok "$name"
}

cfg=$tmp/cfg
mkdir -p "$cfg/projects" "$cfg/decisions/projects"
cat >"$cfg/config.yaml" <<'EOF'
exec:
  defaults: false
  security: allowlist
  ask: on-miss
  allow:
    - command: "^true( |$)"
    - command: "^echo( |$)"
  deny:
    - command: "^false( |$)"
proxy:
  defaults: false
  allow:
    - domain: api.anthropic.com
    - pattern: "*.example.com"
  deny:
    - domain: evil.example.com
    - pattern: "*.tracker.test"
  unlisted_domain_behavior: request_approval
hostexec:
  auto_approve:
    - pattern: "^echo hi$"
EOF
cat >"$cfg/projects/web.yaml" <<'EOF'
proxy:
  allow:
    - domain: web-only.test
    - pattern: "*.example.com"
exec:
  deny:
    - command: "^echo secret"
EOF
cat >"$cfg/decisions/projects/web.yaml" <<'EOF'
denied_domains:
  - api.anthropic.com
EOF

echo "1..35"

run policy check --config-dir "$cfg" -- true
expect "an allowed exec exits 0 and names the rule with file:line" 0 \
	"exec: allow" out "exec.allow[0] command \"^true( |\$)\" ($cfg/config.yaml:6:7)" out \
	"warning: $cfg/config.yaml:6:7: exec.allow[0]: an allow rule with a command but no path" err

run policy check --config-dir "$cfg" -- false
expect "a denied exec exits 1 and names the deny rule" 1 \
	"exec: deny" out "exec.deny[0] command \"^false( |\$)\" ($cfg/config.yaml:9:7)" out

run policy check --config-dir "$cfg" -- ls -la
expect "an unlisted exec asks (exit 2) and says which setting decided" 2 \
	"exec: ask" out "exec.ask=on-miss ($cfg/config.yaml:4:8)" out "no answer: deny" out

run policy check --config-dir "$cfg" -- ls -la
ls_path=$(command -v ls)
expect "the command is resolved through PATH and shown canonically" 2 \
	"path:     $ls_path" out "command:  ls -la" out

run policy check --config-dir "$cfg" -- echo hi
expect "the hostexec verdict of the same command is printed, labelled" 0 \
	"hostexec (the same command run on the host through hostexec): allow" out \
	"hostexec.auto_approve[0] pattern \"^echo hi\$\" ($cfg/config.yaml:21:16)" out

run policy check --config-dir "$cfg" -- echo "a b"
expect "arguments are quoted canonically" 0 "command:  echo 'a b'" out \
	"Command doesn't match allowlist" out

run policy check --config-dir "$cfg" -- "$ls_path"
expect "a command given with a slash is used as it is" 2 "path:     $ls_path" out

run policy check --config-dir "$cfg" -- no-such-command-xyz
expect "a command not in PATH is reported and exits 1" 1 "no-such-command-xyz: not found in PATH" err

run policy check --config-dir "$cfg" --domain api.anthropic.com
expect "an allowed domain exits 0 with its rule" 0 "domain: allow" out \
	"host:     api.anthropic.com" out "proxy.allow[0] domain \"api.anthropic.com\" ($cfg/config.yaml:13:15)" out

run policy check --config-dir "$cfg" --domain API.Example.com:443
expect "a domain with a port matches a wildcard entry and is shown normalised" 0 \
	"host:     api.example.com:443" out "proxy.allow[1] pattern \"*.example.com\"" out

run policy check --config-dir "$cfg" --domain evil.example.com:443
expect "a denied domain exits 1 even though a wildcard allows it" 1 "domain: deny" out \
	"proxy.deny[0] domain \"evil.example.com\" ($cfg/config.yaml:16:15)" out

run policy check --config-dir "$cfg" --domain unknown.test
expect "an unlisted domain asks with request_approval" 2 "domain: ask" out \
	"proxy.unlisted_domain_behavior=request_approval" out

run policy check --config-dir "$cfg" --project web --domain api.anthropic.com
expect "a project decision denying a globally allowed domain wins" 1 \
	"denied_domains[0] domain \"api.anthropic.com\" ($cfg/decisions/projects/web.yaml:2:5)" out

run policy check --config-dir "$cfg" --project web -- echo secret
expect "a project deny rule beats a global allow rule" 1 \
	"($cfg/projects/web.yaml:7:7)" out

run policy check --config-dir "$cfg"
expect "nothing to check is a usage error" 64 "nothing to check" err

run policy check --config-dir "$cfg" --domain a.test -- true
expect "--domain and a command together is a usage error" 64 "not both" err

run policy check --config-dir "$cfg" --bogus -- true
expect "an unknown option is a usage error" 64 "unknown option --bogus" err

run policy check --config-dir
expect "an option without its argument is a usage error" 64 "option --config-dir needs an argument" err

run policy check --config-dir "$tmp/no-such-dir" -- true
expect "a --config-dir that does not exist is a config error, not the built-in policy" 78 \
	"no-such-dir: not a directory" err

run policy check --config-dir "$cfg" --project ../etc -- true
expect "a project name that could escape the directory is a usage error" 64 "--project" err

run policy check --config-dir "$cfg" --domain "bad domain"
expect "a malformed domain is a usage error" 64 "cloister-supervisor: policy check: --domain:" err

broken=$tmp/broken
mkdir -p "$broken"
printf 'exec:\n  security: paranoid\n' >"$broken/config.yaml"
run policy check --config-dir "$broken" -- true
expect "a broken config exits 78 with file:line:column and what was expected" 78 \
	"cloister-supervisor: $broken/config.yaml:2:13: exec.security: expected one of deny, allowlist, full, got \"paranoid\"" err

printf 'hostexec:\n  auto_approve:\n    - pattern: "^(x"\n    - pattern: "^true$"\n' >"$broken/config.yaml"
run policy check --config-dir "$broken" --lenient -- true
expect "--lenient skips an invalid regex with a warning" 0 \
	"cloister-supervisor: warning: $broken/config.yaml:3:16: hostexec.auto_approve[0].pattern: invalid regular expression" err \
	"hostexec.auto_approve[1]" out

printf 'proxy:\n  colour: red\n  defaults: false\n' >"$broken/config.yaml"
run policy check --config-dir "$broken" --domain api.anthropic.com
expect "an unknown key is a config error with its position, as in Cloister" 78 \
	"cloister-supervisor: $broken/config.yaml:2:3: proxy.colour: unknown key; expected one of" err
run policy check --config-dir "$broken" --lenient --domain api.anthropic.com
expect "--lenient makes an unknown key a warning" 0 \
	"cloister-supervisor: warning: $broken/config.yaml:2:3: proxy.colour: unknown key (ignored: --lenient)" err \
	"rule:     always-allowed[0] domain \"api.anthropic.com\" (<always-allowed>)" out
printf 'proxy:\n  dney:\n    - domain: evil.test\n' >"$broken/config.yaml"
run policy check --config-dir "$broken" --lenient --domain evil.test
expect "a misspelt deny list is an error even with --lenient" 78 \
	"$broken/config.yaml:2:3: proxy.dney: unknown key" err "not ignored even with --lenient" err

run policy check --config-dir "$cfg" --domain deep.x.tracker.test
expect "a denied pattern covers every depth, and the reason says so" 1 \
	"covers tracker.test and its subdomains at every depth" out
run policy check --config-dir "$cfg" --domain a.b.example.com
expect "an allowed pattern covers one level, and the reason says so" 2 \
	"the allowed pattern \"*.example.com\" covers one subdomain level only" out

mkdir -p "$XDG_CONFIG_HOME/cloister"
printf 'proxy:\n  unlisted_domain_behavior: reject\n' >"$XDG_CONFIG_HOME/cloister/config.yaml"
run policy check --domain unknown.test
expect "without --config-dir, \$XDG_CONFIG_HOME/cloister is read" 1 \
	"($XDG_CONFIG_HOME/cloister/config.yaml:2:29)" out
rm -rf "$XDG_CONFIG_HOME/cloister"

run policy show --config-dir "$cfg" --project web
expect "policy show prints every entry with its origin" 0 \
	"- domain: \"web-only.test\"  # $cfg/projects/web.yaml:3:15" out \
	"- command: \"^true( |\$)\"  # $cfg/config.yaml:6:7" out \
	"approval_timeout: \"60s\"  # <built-in>:" out \
	"- domain: \"api.anthropic.com\"  # $cfg/decisions/projects/web.yaml:2:5" out \
	"- domain: \"sum.golang.org\"  # <always-allowed>: Cloister's guardian allows it" out
if [ "$(grep -c -- '- pattern: "\*.example.com"' "$tmp/out")" = 1 ]; then
	ok "policy show lists an entry of both the global and the project file once"
else
	not_ok "policy show lists an entry of both the global and the project file once"
fi

roundtrip=$tmp/roundtrip
mkdir -p "$roundtrip"
"$SUPERVISOR" policy show --config-dir "$cfg" --project web >"$roundtrip/config.yaml" 2>/dev/null
run policy show --config-dir "$roundtrip"
# The fixture's command-only allow rules warn in the original too; nothing else may.
if [ "$rc" -eq 0 ] && ! grep -v "a command but no path" "$tmp/err" | grep -q . &&
	grep -qF -- "- domain: \"web-only.test\"  # $roundtrip/config.yaml:" "$tmp/out" &&
	grep -qF -- "rate_limit: 120  # $roundtrip/config.yaml:" "$tmp/out"; then
	ok "policy show output loads back as a config, without a warning"
else
	not_ok "policy show output loads back as a config, without a warning" "exit status $rc"
fi

run --version
expect "--version prints the version" 0 "cloister-supervisor " out

empty=$tmp/empty
mkdir -p "$empty"
run policy check --config-dir "$empty" -- true
expect "with no files the built-in default decides" 0 "(<built-in>:" out

if [ -z "$(find "$HOME" -mindepth 1 ! -path "$XDG_CONFIG_HOME" 2>/dev/null)" ]; then
	ok "nothing was written under HOME"
else
	not_ok "nothing was written under HOME" "$(find "$HOME" -mindepth 1)"
fi

[ "$failed" -eq 0 ]
