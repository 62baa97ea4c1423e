#!/bin/bash
# The RESP endpoint against a real redis-server (Debian's redis-server 7):
# the same bytes to both, the replies compared byte for byte
# (tests/integration/resp-compat.py): string commands and their options and
# errors, expiry, counters, ranges, MULTI/EXEC, HELLO and RESP3, inline
# commands, protocol errors. Then expiry as time passes: a key set with
# PX 300 is gone after it, from GET and from DBSIZE (active expiry), on
# both servers alike.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v redis-server >/dev/null || { echo "1..0 # SKIP: no redis-server"; exit 77; }
PORT=$(free_port)
RPORT=$(free_port)
pool_start -o lend.size=128M -o resp.listen=127.0.0.1:$PORT -o resp.capacity=32M || exit 1
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$TEST_DIR" \
	--daemonize no >"$TEST_DIR/redis.log" 2>&1 &
RPID=$!
trap 'kill $RPID 2>/dev/null; pool_cleanup' EXIT
for _ in $(seq 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.05; done

/usr/bin/python3 "$top_srcdir/tests/integration/resp-compat.py" "$PORT" "$RPORT" >"$TEST_DIR/compat" 2>&1
rc=$?
sed -n 's/^ok [0-9]* - /ok - same as redis-server: /p; s/^not ok [0-9]* - /not ok - same as redis-server: /p; /^#/p' \
	"$TEST_DIR/compat" | while IFS= read -r l; do echo "$l"; done
n_bad=$(grep -c '^not ok' "$TEST_DIR/compat")
FAILS=$((FAILS + n_bad)); PASSES=$((PASSES + $(grep -c '^ok' "$TEST_DIR/compat")))
[ "$rc" -eq 0 ] || [ "$n_bad" -gt 0 ] || { not_ok "resp-compat.py failed"; cat "$TEST_DIR/compat"; }

# redis-py as a cache client: the same results from both.
if /usr/bin/python3 -c 'import redis' 2>/dev/null; then
	/usr/bin/python3 "$top_srcdir/tests/integration/resp-py.py" "$PORT" >"$TEST_DIR/py.pool" 2>&1
	/usr/bin/python3 "$top_srcdir/tests/integration/resp-py.py" "$RPORT" >"$TEST_DIR/py.redis" 2>&1
	if cmp -s "$TEST_DIR/py.pool" "$TEST_DIR/py.redis" && [ "$(wc -l <"$TEST_DIR/py.pool")" -gt 40 ]; then
		ok "redis-py gets the same results from poold as from redis-server ($(wc -l <"$TEST_DIR/py.pool") lines)"
	else
		not_ok "redis-py: poold and redis-server differ"; diff "$TEST_DIR/py.pool" "$TEST_DIR/py.redis" | head -20
	fi
else
	echo "ok - # SKIP python3-redis is not installed"
fi

# hiredis as a C cache client: the same replies from both.
HIREDIS="$top_builddir/tests/tools/resp-hiredis"
if [ -x "$HIREDIS" ]; then
	"$HIREDIS" "$PORT" >"$TEST_DIR/hi.pool" 2>&1
	"$HIREDIS" "$RPORT" >"$TEST_DIR/hi.redis" 2>&1
	if cmp -s "$TEST_DIR/hi.pool" "$TEST_DIR/hi.redis" && grep -qF 'string 7:a\x00b' "$TEST_DIR/hi.pool"; then
		ok "hiredis reads the same replies from poold as from redis-server ($(wc -l <"$TEST_DIR/hi.pool") lines)"
	else
		not_ok "hiredis: poold and redis-server differ"; diff "$TEST_DIR/hi.pool" "$TEST_DIR/hi.redis" | head -20
	fi
else
	echo "ok - # SKIP built without hiredis"
fi

# Expiry as time passes, on both: lazy (GET) and active (DBSIZE, with no access).
for p in "$PORT" "$RPORT"; do
	redis-cli -p "$p" flushall >/dev/null
	redis-cli -p "$p" set lazy v px 300 >/dev/null
	redis-cli -p "$p" set active v px 300 >/dev/null
	redis-cli -p "$p" set stays v >/dev/null
done
sleep 1.5
for p in "$PORT" "$RPORT"; do
	name=$([ "$p" = "$PORT" ] && echo poold || echo redis-server)
	[ -z "$(redis-cli -p "$p" get lazy)" ] && ok "$name: a key set with PX 300 is gone from GET after it" ||
		not_ok "$name: the key is still there"
	[ "$(redis-cli -p "$p" dbsize)" = 1 ] && ok "$name: and the other one from DBSIZE, never touched" ||
		not_ok "$name: DBSIZE $(redis-cli -p "$p" dbsize)"
done
pool_alive && ok "poold still runs" || not_ok "poold died"
pool_done
