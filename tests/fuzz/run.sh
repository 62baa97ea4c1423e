#!/bin/bash
# Replay every fuzz target's seed corpus (and past crashes) through the
# target. With FUZZ_SECONDS set and a --enable-fuzzing build, also fuzz each
# target for that long, e.g.: FUZZ_SECONDS=60 tests/fuzz/run.sh
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
fails=0 passes=0
for t in frame conf resp fc link; do
	corpus="$top_srcdir/tests/fuzz/corpus/$t"
	if "$top_builddir/tests/fuzz/replay_$t" "$corpus"/*; then
		passes=$((passes + 1)); echo "ok - replay $t corpus"
	else
		fails=$((fails + 1)); echo "not ok - replay $t corpus"
	fi
	bin="$top_builddir/tests/fuzz/fuzz_$t"
	if [ -n "${FUZZ_SECONDS:-}" ] && [ -x "$bin" ]; then
		work=$(mktemp -d)
		if "$bin" -max_total_time="$FUZZ_SECONDS" -max_len=65536 "$work" "$corpus" >"$work.log" 2>&1; then
			passes=$((passes + 1)); echo "ok - fuzz $t for ${FUZZ_SECONDS}s"
		else
			fails=$((fails + 1)); echo "not ok - fuzz $t"; tail -n 40 "$work.log"
		fi
		rm -rf "$work" "$work.log"
	fi
done
echo "fuzz: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
