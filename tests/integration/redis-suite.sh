#!/bin/bash
# Redis 7.0.15's own tests (tests/redis: its test helper and unit files, as
# they are in the Redis source) in Redis's external mode, against poold's
# RESP endpoint and against Debian's redis-server, side by side: the
# number of tests each passes, file by file. poold must pass at least as
# many as the floor below for each file (what it passed when the floor
# was set), and the real server all it runs. Tags: tests that need DEBUG,
# replication or CONFIG SET maxmemory are left out, on both; a test for
# jemalloc runs only against a server that says it has it (redis-server).
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v redis-server >/dev/null && command -v tclsh >/dev/null ||
	{ echo "1..0 # SKIP: needs redis-server and tclsh"; exit 77; }
# FILE FLOOR (of the file's tests, poold passes at least FLOOR)
FILES="unit/type/string 74
unit/type/incr 23
unit/expire 58
unit/keyspace 45
unit/scan 10
unit/multi 29
unit/info-command 3"
PORT=$(free_port)
RPORT=$(free_port)
pool_start -o lend.size=256M -o resp.listen=127.0.0.1:$PORT -o resp.capacity=128M || exit 1
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$TEST_DIR" \
	--daemonize no >"$TEST_DIR/redis.log" 2>&1 &
RPID=$!
trap 'kill $RPID 2>/dev/null; pool_cleanup' EXIT
for _ in $(seq 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
# (a copy: the helper writes its tmp/ beside its files)
cp -r "$top_srcdir/tests/redis" "$TEST_DIR/redis"
chmod -R u+w "$TEST_DIR/redis"

# suite PORT FILE: the helper's counts of FILE against the server at PORT, "ok err exception".
suite() {
	(cd "$TEST_DIR/redis" && timeout 600 tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$1" \
		--single "$2" --clients 1 --durable --tags -needs:debug --tags -needs:repl \
		--tags -needs:config-maxmemory) >"$TEST_DIR/out.$1" 2>&1
	sed 's/\x1b\[[0-9;]*m//g' "$TEST_DIR/out.$1" >"$TEST_DIR/log.$1"
	echo "$(grep -c '^\[ok\]' "$TEST_DIR/log.$1") $(grep -c '^\[err\]' "$TEST_DIR/log.$1")" \
		"$(grep -c '^\[exception\]' "$TEST_DIR/log.$1")"
}
while read -r file floor; do
	read -r ok err exc <<<"$(suite "$PORT" "$file")"
	cp "$TEST_DIR/log.$PORT" "$TEST_DIR/$(basename "$file").pool"
	read -r rok rerr rexc <<<"$(suite "$RPORT" "$file")"
	total=$((rok + rerr + rexc))
	if [ "$ok" -ge "$floor" ] && [ "$rerr$rexc" = 00 ]; then
		ok "$file: poold passes $ok of the $((ok + err + exc)) tests it ran; redis-server $rok of $total (floor $floor)"
	else
		not_ok "$file: poold $ok passed, $err failed, $exc exceptions; redis-server $rok of $total (floor $floor)"
		grep -A2 '^\[err\]\|^\[exception\]' "$TEST_DIR/$(basename "$file").pool" | head -20
	fi
	grep '^\[err\]' "$TEST_DIR/$(basename "$file").pool" | sed 's/^\[err\]: /#   fails: /; s/ in tests\/.*//'
done <<<"$FILES"
pool_alive && ok "poold still running" || not_ok "poold died"
pool_done
