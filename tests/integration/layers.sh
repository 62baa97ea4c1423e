#!/usr/bin/env bash
# tests/integration/layers.sh - poold's modules, its folders, call each
# other, or include each other's headers, in no cycle (doc/DESIGN.md section
# 9): the calls read from the objects of this build, the includes from the
# sources, by tests/tools/call-cycles.py, which names those of any cycle,
# and which fails a file that includes of another module anything but its
# interface header (kv/kv.h).
# And in poolctl, only cli/admin.c speaks the control protocol: no other
# object calls protobuf-c, the wire library or a generated descriptor. The
# cores of poold (doc/DESIGN.md's list) name no protobuf type either. And
# no function of poold or libpool is over 100 lines (its body, between the
# braces at the start of a line that the style gives a function; tables
# and protobuf-c's generated code are not functions).
# Exit status: 0 pass, 1 fail, 77 skip (no nm or python3, or a build
# without the static archive).
set -u

srcdir=${srcdir:-.}
archive=${top_builddir:-.}/daemon/.libs/libpoold.a
for tool in nm python3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done
[ -f "$archive" ] || { echo "SKIP: no $archive"; exit 77; }
python3 "$srcdir/tests/tools/call-cycles.py" "$archive" "$srcdir/daemon" || exit 1

rc=0
objects=$(ls "${top_builddir:-.}"/cli/poolctl-*.o 2>/dev/null)
[ -n "$objects" ] || { echo "FAIL: no poolctl objects in ${top_builddir:-.}/cli"; exit 1; }
for o in $objects; do
	case $o in */poolctl-admin.o) continue ;; esac
	wire=$(nm -u "$o" | awk '{print $NF}' | grep -E '^(pool__|protobuf_c_|wire_)' | tr '\n' ' ')
	[ -z "$wire" ] || { echo "FAIL: ${o##*/} speaks the protocol itself: $wire"; rc=1; }
done
[ "$rc" -eq 0 ] && echo "poolctl: only admin.o of $(echo "$objects" | wc -l) objects speaks the protocol"

# The cores: the address space, reclaim, the KV index and its shard map, the
# lenders' records and their reconciliation, lending, the member table.
cores="region region-rebuild reclaim kv kv-tier kv-dedup kv-replica kv-rebuild kv-local shardmap
	hold hold-sync reconcile lend member"
symbols=$(nm -A "$archive")
for c in $cores; do
	grep -q "^[^:]*:libpoold_la-$c\.o:" <<<"$symbols" || { echo "FAIL: no $c.o in $archive"; rc=1; continue; }
	wire=$(awk -v o=":libpoold_la-$c.o:" 'index($0, o) && $(NF-1) == "U" { print $NF }' <<<"$symbols" |
		grep -E '^(pool__|protobuf_c_|wire_)' | tr '\n' ' ')
	[ -z "$wire" ] || { echo "FAIL: the core $c.c names the wire: $wire"; rc=1; }
done
[ "$rc" -eq 0 ] && echo "poold: its $(echo $cores | wc -w) cores name no protobuf type"

nfiles=0
for f in "$srcdir"/daemon/*.c "$srcdir"/daemon/*/*.c "$srcdir"/libpool/*.c; do
	case $f in *.pb-c.c) continue ;; esac
	nfiles=$((nfiles + 1))
	awk -v f="${f#"$srcdir"/}" '
		/^\{$/ { start = NR; name = prev }
		/^\}$/ && start && NR - start - 1 > 100 {
			printf "FAIL: %s:%d: a function of %d lines (at most 100): %s\n", f, start, NR - start - 1, name
			bad = 1
		}
		/^\};?$/ { start = 0 }
		{ prev = $0 }
		END { exit bad }' "$f" || rc=1
done
[ "$rc" -eq 0 ] && echo "poold and libpool: no function over 100 lines in $nfiles files"
exit $rc
