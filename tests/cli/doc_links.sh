#!/bin/sh
# The documentation stands alone: every relative link of every Markdown file in the
# repository leads to a file of the repository (a clone has nothing beside it). Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd -P)
files=$(git ls-files '*.md' 2>/dev/null)
n=0
for f in $files; do n=$((n + 1)); done
echo "1..$n"
i=0
failed=0
for f in $files; do
	i=$((i + 1))
	dir=$(dirname "$f")
	# Inline links and images: ](target) or ](target "title"); anchors and URLs aside.
	bad=$(grep -oE '\]\([^) ]+' "$f" | sed 's/^](//' | while read -r target; do
		case "$target" in
		http://* | https://* | mailto:* | '#'*) continue ;;
		esac
		path=${target%%#*}
		resolved=$(cd "$dir" 2>/dev/null && realpath -m -- "$path")
		case "$resolved" in
		"$root"/*) [ -e "$resolved" ] || printf ' %s' "$target" ;;
		*) printf ' %s' "$target" ;;
		esac
	done)
	if [ -z "$bad" ]; then
		echo "ok $i - $f: every relative link stays in the repository"
	else
		echo "not ok $i - $f: every relative link stays in the repository"
		echo "# leads nowhere or outside:$bad"
		failed=1
	fi
done
exit $failed
