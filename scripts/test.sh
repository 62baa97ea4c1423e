#!/bin/bash
# scripts/test.sh - install what is missing, build, and run the whole test
# suite (make check). Exits non-zero on any failure.
. "$(dirname "$0")/deps.sh"

deps_install "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"
deps_build
echo "==> make check"
if ! make -j"$(nproc)" check; then
	for f in $(find tests -name '*.log' -newer Makefile); do
		grep -qE '^(FAIL|ERROR)' "${f%.log}.trs" 2>/dev/null && { echo "--- $f"; tail -n 60 "$f"; }
	done
	exit 1
fi
