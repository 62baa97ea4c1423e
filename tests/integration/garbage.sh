#!/bin/bash
# Bad input on the control socket: poold answers or closes that connection,
# and keeps serving everyone else.
. "${top_srcdir:-.}/tests/integration/lib.sh"

WIRE="python3 $top_srcdir/tests/integration/wire.py $POOL_SOCKET"
pool_start -o control.max_frame=64K || exit 1

check "garbage bytes get an error and a close" $WIRE garbage
check_out "protocol version [0-9]+ is not supported" "garbage is reported as a protocol mismatch"
check "truncated header: closed" $WIRE truncated
check "truncated payload: closed" $WIRE truncated-payload
check "oversize frame gets an error and a close" $WIRE oversize
check_out "exceeds control.max_frame \(65536\)" "oversize error names the limit"
check "wrong header version" $WIRE version
check_out "this poold speaks version 3" "version error says which version poold speaks"
check "wrong hello version" $WIRE hello-version
check "request before hello" $WIRE no-hello
check_out "first message must be hello" "no-hello error is clear"
check "malformed payload answered, connection kept" $WIRE bad-payload
check_out "malformed status message" "malformed payload error is clear"
check "unknown message type answered" $WIRE unknown-type
check "pipelined requests answered in order" $WIRE pipeline

# 200 connections of random garbage in a row.
python3 - "$POOL_SOCKET" <<'PY' && ok "200 garbage connections" || not_ok "200 garbage connections"
import os, socket, sys
for i in range(200):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(os.urandom(i * 7 + 1)); s.close()
PY
pool_alive && ok "poold survived" || not_ok "poold survived"
check "poold still serves" "$POOLCTL" status
check_out "clients +1$" "no connection leaked"
pool_done
