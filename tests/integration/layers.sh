#!/usr/bin/env bash
# tests/integration/layers.sh - poold's files call each other in no cycle
# across modules (doc/DESIGN.md section 9): read from the objects of this
# build by tests/tools/call-cycles.py, which names the calls of any cycle.
# Exit status: 0 pass, 1 fail, 77 skip (no nm or python3, or a build
# without the static archive).
set -u

srcdir=${srcdir:-.}
archive=${top_builddir:-.}/daemon/.libs/libpoold.a
for tool in nm python3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done
[ -f "$archive" ] || { echo "SKIP: no $archive"; exit 77; }
python3 "$srcdir/tests/tools/call-cycles.py" "$archive"
