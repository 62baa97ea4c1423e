#!/usr/bin/env bash
# tests/integration/man.sh - check the manual pages in man/.
#
#  1. Every page lints clean: no output at all from `mandoc -T lint -W warning`
#     nor from `groff -t -man -ww -z`.
#  2. poold.conf(5) documents exactly the options of the table in
#     common/options.c: the names of the `.B name` tag lines of the .TP items
#     of its OPTIONS section, against the first string literal of each
#     `{"...",` entry of conf_options[].
#
# Works in a VPATH build: pages and sources are found under ${srcdir:-.}
# (automake sets srcdir for tests). MANDOC and GROFF may name the tools.
# Exit status: 0 pass, 1 fail (what failed is printed), 77 skip (a linter is
# not installed).
set -u

srcdir=${srcdir:-.}
mandir=$srcdir/man
options_c=$srcdir/common/options.c
conf_page=$mandir/poold.conf.5
MANDOC=${MANDOC:-mandoc}
GROFF=${GROFF:-groff}

fails=0
words() { printf '%s' "$1" | tr '\n' ' ' | sed 's/ $//'; }
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

for tool in "$MANDOC" "$GROFF"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed"
		exit 77
	fi
done
if [ ! -d "$mandir" ] || [ ! -f "$options_c" ]; then
	echo "FAIL: cannot find $mandir or $options_c (srcdir=$srcdir)"
	exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# 1. Lint every page (man/*.[1-9]).
pages=()
for page in "$mandir"/*.[1-9]; do
	[ -f "$page" ] && pages+=("$page")
done
if [ "${#pages[@]}" -eq 0 ]; then
	fail "no manual pages in $mandir"
fi
for page in "${pages[@]}"; do
	out=$("$MANDOC" -T lint -W warning "$page" 2>&1)
	rc=$?
	if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
		fail "mandoc -T lint -W warning $page (exit $rc):"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
	out=$("$GROFF" -t -man -ww -z "$page" 2>&1)
	rc=$?
	if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
		fail "groff -t -man -ww -z $page (exit $rc):"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
done

# 2. Option names: the table against poold.conf(5).
sed -n '/conf_options\[\][[:space:]]*=/,/^};/p' "$options_c" |
	sed -n 's/^[[:space:]]*{[[:space:]]*"\([^"]*\)"[[:space:]]*,.*/\1/p' |
	sort >"$tmp/code"
awk '
	/^\.SH/ { in_opts = ($0 ~ /^\.SH[[:space:]]+"?OPTIONS"?[[:space:]]*$/); next }
	!in_opts { next }
	/^\.TP/ { tag = 1; next }
	tag && /^\.B[[:space:]]/ { name = $2; gsub(/"/, "", name); print name }
	{ tag = 0 }
' "$conf_page" | sort >"$tmp/page"

if [ ! -s "$tmp/code" ]; then
	fail "found no options in the conf_options table of $options_c"
fi
if [ ! -s "$tmp/page" ]; then
	fail "found no .TP/.B option items in the OPTIONS section of $conf_page"
fi
dups=$(uniq -d "$tmp/page")
if [ -n "$dups" ]; then
	fail "options listed twice in poold.conf.5: $(words "$dups")"
fi
dups=$(uniq -d "$tmp/code")
if [ -n "$dups" ]; then
	fail "options listed twice in options.c: $(words "$dups")"
fi
sort -u "$tmp/code" -o "$tmp/code"
sort -u "$tmp/page" -o "$tmp/page"
missing=$(comm -23 "$tmp/code" "$tmp/page")
extra=$(comm -13 "$tmp/code" "$tmp/page")
if [ -n "$missing" ]; then
	fail "options in common/options.c missing from poold.conf.5: $(words "$missing")"
fi
if [ -n "$extra" ]; then
	fail "options in poold.conf.5 that common/options.c does not have: $(words "$extra")"
fi

if [ "$fails" -gt 0 ]; then
	echo "man.sh: FAIL ($fails problem(s); ${#pages[@]} pages, $(wc -l <"$tmp/code") options)"
	exit 1
fi
echo "man.sh: PASS (${#pages[@]} pages lint clean; poold.conf.5 lists all $(wc -l <"$tmp/code") options)"
exit 0
