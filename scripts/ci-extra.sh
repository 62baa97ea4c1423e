#!/bin/bash
# scripts/ci-extra.sh - the CI stages after the test suite: the C sources
# checked against the tree's .clang-format, `make distcheck` (the tarball
# builds out of tree, installs, uninstalls and cleans; its check runs the
# unit tests and a few integration tests, the full suite having just run),
# the whole suite again under AddressSanitizer and UndefinedBehaviorSanitizer
# (LeakSanitizer on; a test per CPU at once, as the suite's own stage), then each libFuzzer target for FUZZ_SECONDS (60) from
# its seed corpus, then the long trust runs (1,000 clients killed
# mid-transfer, a lender stopped for 60 s: tests/cluster/trust.sh) on the
# main build, then the Debian packages built, checked with lintian,
# installed, tried and purged (scripts/packages.sh). The sanitizer and fuzz stages build a copy of the tracked
# sources in its own directory under CI_WORK (default: a temporary one), so
# the main build is left as it is. Stages: CI_STAGES="style dist asan fuzz
# trust packages" (the default) or some; "chunks", not among them, runs
# tests/cluster/chunks.sh with a lender of CHUNKS_VALUES (3,000,000) values
# on the main build (some minutes, and a few GB of memory), with a ledger
# pass only as nodes register and a heartbeat window of 20 s: the
# coordinator compares a report of millions with its map in one pass of its
# loop, which takes seconds. "nodes", not among them either, runs
# tests/cluster/join-many.sh with 1,022 fake nodes beside the coordinator and
# a real node: 1,024 members, peer.max_nodes' default. "keys", not among
# them, runs tests/integration/kv-bulk.sh with KV_BULK_KEYS (25,000,000)
# keys: filled, flushed, filled and dropped while a prober times poold's
# answers (some 10 GB of memory, tens of minutes).
. "$(dirname "$0")/deps.sh"

deps_install "${PACKAGES[@]}" "${TEST_PACKAGES[@]}" clang libclang-rt-14-dev clang-format
work=${CI_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/pool-ci.XXXXXX")}
# The suite runs some checks as uid nobody, which must reach the build.
chmod 0755 "$work"
stages=${CI_STAGES:-style dist asan fuzz trust packages}

# copy_tree DIR: the tracked files of the source tree, into DIR.
copy_tree() {
	rm -rf "$1" && mkdir -p "$1"
	git -C "$TOP" ls-files -z | (cd "$TOP" && xargs -0 tar -cf - --) | tar -xf - -C "$1"
}

for stage in $stages; do
	case $stage in
	style)
		echo "==> clang-format --dry-run --Werror on the tracked C sources"
		(cd "$TOP" && git ls-files -z '*.c' '*.h' '*.cpp' | xargs -0 clang-format --dry-run --Werror) ||
			{ echo "ci-extra.sh: format them with clang-format -i (the tree's .clang-format)"; exit 1; }
		;;
	dist)
		echo "==> make distcheck"
		unit=$(grep -h '^TESTS +=' "$TOP"/*/local.mk "$TOP"/tests/unit/*.mk | grep -o 'tests/unit/test_[a-z_]*')
		(cd "$TOP" && make distcheck TESTS="$(echo $unit) tests/integration/daemon.sh \
			tests/integration/libpool.sh tests/integration/man.sh") || exit 1
		;;
	asan)
		echo "==> make check under --enable-asan"
		copy_tree "$work/asan"
		(cd "$work/asan" && ./autogen.sh >/dev/null && ./configure --enable-asan --enable-werror >/dev/null &&
			make -j"$(nproc)" >/dev/null) || exit 1
		# Every process's sanitizer report goes to a file of its own, so that
		# a leak at the exit of a poold the tests stop is seen too.
		rm -rf "$work/asan-reports" && mkdir -m 1777 "$work/asan-reports"
		# As many tests at once as the suite's own stage runs (scripts/test.sh).
		if ! (cd "$work/asan" && ASAN_OPTIONS=log_path="$work/asan-reports/r" make -j"$(nproc)" check); then
			find "$work/asan/tests" -name '*.trs' -exec grep -l '^:test-result: FAIL' {} + |
				while read -r t; do echo "--- ${t%.trs}.log"; tail -n 60 "${t%.trs}.log"; done
			cat "$work/asan-reports"/* 2>/dev/null
			exit 1
		fi
		if [ -n "$(ls -A "$work/asan-reports")" ]; then
			echo "==> sanitizer reports (LeakSanitizer must report nothing):"
			cat "$work/asan-reports"/*
			exit 1
		fi
		;;
	fuzz)
		echo "==> fuzzing each target for ${FUZZ_SECONDS:-60} s"
		copy_tree "$work/fuzz"
		(cd "$work/fuzz" && ./autogen.sh >/dev/null &&
			./configure CC=clang CXX=clang++ --enable-fuzzing --enable-werror >/dev/null &&
			make -j"$(nproc)" >/dev/null) || exit 1
		(cd "$work/fuzz" && FUZZ_SECONDS=${FUZZ_SECONDS:-60} make check TESTS=tests/fuzz/run.sh) ||
			{ cat "$work/fuzz/tests/fuzz/run.sh.log"; exit 1; }
		cat "$work/fuzz/tests/fuzz/run.sh.log"
		;;
	trust)
		echo "==> tests/cluster/trust.sh with 1000 kills and a 60 s stall"
		(cd "$TOP" && TRUST_KILLS=1000 TRUST_STALL_S=60 make check TESTS=tests/cluster/trust.sh) ||
			{ tail -n 80 "$TOP/tests/cluster/trust.sh.log"; exit 1; }
		grep -E '^(ok|not ok)' "$TOP/tests/cluster/trust.sh.log"
		;;
	packages)
		echo "==> the Debian packages (scripts/packages.sh)"
		bash "$TOP/scripts/packages.sh" || exit 1
		;;
	chunks)
		echo "==> tests/cluster/chunks.sh with ${CHUNKS_VALUES:-3000000} values"
		(cd "$TOP" && CHUNKS_VALUES=${CHUNKS_VALUES:-3000000} CHUNKS_LEDGER=0 CHUNKS_MISSES=40 \
			make check TESTS=tests/cluster/chunks.sh) ||
			{ tail -n 80 "$TOP/tests/cluster/chunks.sh.log"; exit 1; }
		grep -E '^(ok|not ok)' "$TOP/tests/cluster/chunks.sh.log"
		;;
	nodes)
		echo "==> tests/cluster/join-many.sh with 1,022 fake nodes (1,024 members)"
		(cd "$TOP" && JOIN_NODES=1022 make check TESTS=tests/cluster/join-many.sh) ||
			{ tail -n 80 "$TOP/tests/cluster/join-many.sh.log"; exit 1; }
		grep -E '^(ok|not ok|joined)' "$TOP/tests/cluster/join-many.sh.log"
		;;
	keys)
		echo "==> tests/integration/kv-bulk.sh with ${KV_BULK_KEYS:-25000000} keys"
		(cd "$TOP" && KV_BULK_KEYS=${KV_BULK_KEYS:-25000000} make check TESTS=tests/integration/kv-bulk.sh) ||
			{ tail -n 80 "$TOP/tests/integration/kv-bulk.sh.log"; exit 1; }
		grep -E '^(ok|not ok|#)' "$TOP/tests/integration/kv-bulk.sh.log"
		;;
	*)
		echo "ci-extra.sh: unknown stage '$stage'" >&2
		exit 2
		;;
	esac
done
[ -n "${CI_WORK:-}" ] || rm -rf "$work"
