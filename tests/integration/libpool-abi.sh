#!/bin/bash
# libpool's edges, as a client program and the Python binding meet them:
#  - the library links only what a client uses: no UCX, libevent, libnuma,
#    libpmem2 or libnftables (poold's; a client holds no fabric endpoint);
#  - it exports exactly the functions libpool.h declares, and the header
#    passes no volatile object;
#  - the Python binding's ctypes prototypes and the constants it copies
#    match the header (tests/tools/pyabi.py).
. "${top_srcdir:-.}/tests/integration/lib.sh"
so="$top_builddir/libpool/.libs/libpool.so.0"
hdr="$top_srcdir/libpool/libpool.h"

check "readelf reads libpool's dynamic section" readelf -d "$so"
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' "$TEST_DIR/out" | tr '\n' ' ')
echo "# libpool needs: $needed"
bad=$(printf '%s\n' $needed | grep -E '^lib(ucp|ucs|uct|ucm|event|numa|pmem2|nftables)[.-]')
[ -z "$bad" ] && ok "libpool links no library of poold's (UCX, libevent, libnuma, libpmem2, nftables)" ||
	not_ok "libpool links $(echo $bad)"
printf '%s\n' $needed | grep -q '^libprotobuf-c\.' && ok "and it does link what it uses (protobuf-c)" ||
	not_ok "no libprotobuf-c among libpool's libraries: is this the right file?"

nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$TEST_DIR/exported"
sed 's,/\*.*\*/,,' "$hdr" | tr '\n' ' ' | grep -o 'POOL_EXPORT[^;(]*\bpool_[a-z0-9_]*[[:space:]]*(' |
	grep -o 'pool_[a-z0-9_]*[[:space:]]*($' | tr -d '( ' | sort >"$TEST_DIR/declared"
if diff "$TEST_DIR/exported" "$TEST_DIR/declared" >"$TEST_DIR/out"; then
	ok "libpool exports the $(wc -l <"$TEST_DIR/declared") functions libpool.h declares, and no other"
else
	not_ok "exported (<) against declared (>)"; sed 's/^/  | /' "$TEST_DIR/out"
fi
! grep -n volatile "$hdr" >"$TEST_DIR/out" && ok "libpool.h passes no volatile object" ||
	{ not_ok "volatile in libpool.h"; sed 's/^/  | /' "$TEST_DIR/out"; }

if ! pool_pyenv; then
	echo "ok - # SKIP a sanitized libpool whose runtime python3 cannot preload"
else
	check "the Python binding's prototypes and constants match libpool.h" \
		"${PYENV[@]}" /usr/bin/python3 "$top_srcdir/tests/tools/pyabi.py" "$hdr" \
		"$top_srcdir/proto/pool_contract.h"
	sed 's/^/# /' "$TEST_DIR/out"
fi
pool_done
