#!/bin/bash
# Saves of a sandbox while its VMM runs, served by `poolctl snap serve
# --track` (userfaultfd write-protect): a VMM that restores as Firecracker
# does (tests/tools/fc-client) writes pages in rounds; after each round the
# test saves it (`poolctl snap save`) and the save must be, bit for bit,
# the memory the VMM had then. Each save copies only the pages written
# since the last one and stores the whole diff over the restored snapshot.
# Forks: the save restored by two more VMMs while the first runs on.
# Pages first touched by a write, a balloon's removed pages, 2 MiB pages,
# a server fetching from the store, saves asked at once, hibernation (save,
# then the VMM ends). The refusals: bad requests, a server without
# --track, a pid it does not serve, another uid's client, and a server that
# may not read the VMM's memory (uid nobody, a root VMM).
. "${top_srcdir:-.}/tests/integration/lib.sh"
FC="$top_builddir/tests/tools/fc-client"
SOCK="$TEST_DIR/uffd.sock"
PAGES=8192
SIZE=$((PAGES * 4096))
SERVE_PID=
VMM_PID=

pool_start -o lend.size=512M -o control.mode=0666 || exit 1
python3 -c 'import random, sys
random.seed(21)
sys.stdout.buffer.write(b"".join(bytes(4096) if p % 3 == 0 else random.randbytes(4096)
                                 for p in range(int(sys.argv[1]))))' $PAGES >"$TEST_DIR/img"
check "store the image" "$POOLCTL" snap put vm1 "$TEST_DIR/img" mode=0644
check "record a working set of every 7th page" "$top_builddir/tests/tools/pool-snap" record vm1 7

# serve NAME SOCKET ARGS...: poolctl snap serve in the background, until its socket is there.
serve() {
	local name=$1 sock=$2; shift 2
	"$POOLCTL" snap serve "$name" "$sock" "$@" >"$TEST_DIR/serve.out" 2>"$TEST_DIR/serve.err" &
	SERVE_PID=$!
	for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.05; done
	not_ok "snap serve $name $* did not come up"; cat "$TEST_DIR/serve.err"; return 1
}
stop_server() { kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID"; SERVE_PID=; }

# vmm ARGS...: fc-client --rounds in the background, its stdin a fifo held open on fd 7.
vmm() {
	rm -f "$TEST_DIR/vmm.in"; mkfifo "$TEST_DIR/vmm.in"
	"$FC" --timeout 120 "$@" <"$TEST_DIR/vmm.in" >"$TEST_DIR/vmm.out" 2>"$TEST_DIR/vmm.err" &
	VMM_PID=$!
	exec 7>"$TEST_DIR/vmm.in"
}
# round K: wait until the VMM has written round K; print its memory's checksum line.
round() {
	for _ in $(seq 300); do
		grep -q "^round $1 " "$TEST_DIR/vmm.out" && break
		kill -0 "$VMM_PID" 2>/dev/null || break
		sleep 0.05
	done
	sed -n "s/^round $1 //p" "$TEST_DIR/vmm.out"
}
go_on() { echo go >&7; }
vmm_end() { exec 7>&-; wait "$VMM_PID"; }
# is_memory NAME SUM WHAT: snapshot NAME read back has checksum SUM.
is_memory() {
	"$POOLCTL" snap get "$1" "$TEST_DIR/got.img" >/dev/null 2>&1
	local got
	got=$("$FC" --sum "$TEST_DIR/got.img")
	[ -n "$2" ] && [ "$got" = "$2" ] && ok "$3" || not_ok "$3 (got '$got', wanted '$2')"
}
# written K N: how many distinct pages rounds 1..K of N writes touch, and round K alone (fc-client's formula).
written() {
	python3 -c 'import sys
k, n, pages = map(int, sys.argv[1:])
rnd = lambda r: {(j + r * 100) * 7919 % pages for j in range(n)}
print(len(set().union(*(rnd(r) for r in range(1, k + 1)))), len(rnd(k)))' "$1" "$2" $PAGES
}

# Three rounds of 300 pages, each writing again 200 of the last one's
# (protected again by the save before it); the first page read is 1,000
# pages in, so most writes of round 1 fault pages in (placed written, not
# protected).
serve vm1 "$SOCK" --track || exit 1
vmm --touch 1000 --rounds 3 --write 300 "$SOCK" $SIZE
sums=()
for k in 1 2 3; do
	sums[k]=$(round $k)
	read -r diff pages <<<"$(written $k 300)"
	check "save after round $k" "$POOLCTL" snap save "$SOCK" "$VMM_PID" "s$k"
	check_out "^saved s$k: $pages pages written since the last save, held [0-9.]+ ms; diff $diff pages\$" \
		"it copies the $pages pages of round $k; the diff is $diff"
	[ $k -lt 3 ] && go_on
done
if pool_pyenv; then
	check "a save with nothing written since, from Python" pool_python -c '
import sys, pool
print(pool.serve_save(sys.argv[1], int(sys.argv[2]), "s3b"))' "$SOCK" "$VMM_PID"
	check_out "^\{'pages': 0, 'diff': 500, 'held_us': [0-9]+\}\$" "copies nothing"
else
	check "a save with nothing written since" "$POOLCTL" snap save "$SOCK" "$VMM_PID" s3b
	check_out "^saved s3b: 0 pages written since the last save" "copies nothing"
fi
go_on; vmm_end && ok "the VMM ran on and ended well" || not_ok "the VMM ended badly: $(cat "$TEST_DIR/vmm.err")"
for k in 1 2 3; do is_memory "s$k" "${sums[k]}" "s$k is the memory after round $k"; done
is_memory s3b "${sums[3]}" "s3b is that memory too"
check "s3 names its parent" "$POOLCTL" snap info s3
check_out "^parent: +vm1\$" "vm1"
check_out "^working set: +1170 pages from 1 restores" "and starts with its working set"
check_out "^new pages: +[0-9]+ " "its put says what was new"

# Fork: s2 restored twice while a VMM restored from vm1 runs on.
vmm --rounds 1 --write 100 "$SOCK" $SIZE
[ -n "$(round 1)" ] && ok "a VMM runs from vm1" || not_ok "a VMM runs from vm1"
serve_pid=$SERVE_PID
serve s2 "$TEST_DIR/fork.sock" --max 2 || exit 1
for f in 1 2; do
	check "fork $f of s2" "$FC" "$TEST_DIR/fork.sock" $SIZE
	check_out "^${sums[2]}\$" "fork $f is s2, bit for bit"
done
wait "$SERVE_PID" && ok "the fork server ended well" || not_ok "the fork server ended badly"
SERVE_PID=$serve_pid

# Hibernate: save, then the VMM is killed; its store finishes and the
# server serves on.
check "save it" "$POOLCTL" snap save "$SOCK" "$VMM_PID" hib
kill -KILL "$VMM_PID"; exec 7>&-; wait "$VMM_PID" 2>/dev/null
read -r diff pages <<<"$(written 1 100)"
check_out "diff $diff pages\$" "its diff is the $diff pages written"
is_memory hib "$(sed -n 's/^round 1 //p' "$TEST_DIR/vmm.out")" "the hibernated sandbox is its memory"

# A balloon takes 512 pages; removed, they read as zeros: saved as zeros.
vmm --balloon 512 --rounds 1 --write 10 "$SOCK" $SIZE
sum=$(round 1)
check "save after a balloon" "$POOLCTL" snap save "$SOCK" "$VMM_PID" ball
check_out "^saved ball: 52[0-9] pages written" "the removed pages count as written"
go_on; vmm_end
is_memory ball "$sum" "the save has the removed pages as zeros"

# Two saves asked at once: one waits for the other.
vmm --rounds 1 --write 50 "$SOCK" $SIZE
sum=$(round 1)
"$POOLCTL" snap save "$SOCK" "$VMM_PID" twin1 >"$TEST_DIR/twin1.out" 2>&1 &
t1=$!
"$POOLCTL" snap save "$SOCK" "$VMM_PID" twin2 >"$TEST_DIR/twin2.out" 2>&1
r2=$?
wait $t1 && [ $r2 -eq 0 ] && ok "two saves at once both end well" ||
	not_ok "two saves at once: $(cat "$TEST_DIR/twin1.out" "$TEST_DIR/twin2.out")"
is_memory twin1 "$sum" "the first is the memory"
is_memory twin2 "$sum" "the second too"

# A save while the VMM writes on: it is of the instant the pages were
# taken ("taken" is answered then); round 2 starts at once and rewrites
# 7,800 of them while they are read, each write waiting for its page to be
# read first (the answer counts those as early).
vmm --rounds 2 --write 8000 "$SOCK" $SIZE
sum=$(round 1)
python3 - "$SOCK" "$VMM_PID" live "$TEST_DIR/vmm.in" >"$TEST_DIR/live.out" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(f"save {sys.argv[2]} {sys.argv[3]}\n".encode())
answer = s.makefile("r")
taken = answer.readline()
print(taken.strip(), flush=True)
if taken.startswith("taken"):
    with open(sys.argv[4], "w") as vmm:  # round 2, now
        vmm.write("go\n")
print(answer.readline().strip())
EOF
grep -q "^taken pages=8000 held_us=[0-9]*\$" "$TEST_DIR/live.out" && ok "the 8,000 pages are taken, then the VMM writes on" ||
	not_ok "taken: $(cat "$TEST_DIR/live.out")"
grep -q "^ok pages=8000 diff=8000 " "$TEST_DIR/live.out" && ok "the save ends well" ||
	not_ok "the save: $(cat "$TEST_DIR/live.out")"
early=$(sed -n 's/^ok .* early=\([0-9]*\)$/\1/p' "$TEST_DIR/live.out")
[ -n "$(round 2)" ] && ok "the VMM wrote round 2" || not_ok "the VMM wrote round 2"
is_memory live "$sum" "the save is the memory before round 2"
if [ "${early:-0}" -gt 0 ]; then ok "$early pages were read before a write to them"; else
	echo "ok - # SKIP no write of round 2 came before its page was read"; fi
go_on; vmm_end && ok "that VMM ended well" || not_ok "that VMM ended badly"

vmm --rounds 1 --write 50 "$SOCK" $SIZE
round 1 >/dev/null

# Refusals, each answered; the server serves on.
check_exit 1 "a pid the server does not serve" "$POOLCTL" snap save "$SOCK" 1 nope
check_out "no VMM of pid 1 is served here" "saying so"
check_exit 1 "a name the store refuses" "$POOLCTL" snap save "$SOCK" "$VMM_PID" "bad/name"
check_out "snapshot name 'bad/name': 1-58 characters" "saying why, before anything is copied"
check_exit 2 "a pid that is not one" "$POOLCTL" snap save "$SOCK" 12x nope
# ask LINE: send LINE and a newline on the socket, print the answer.
ask() { python3 - "$SOCK" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
s.shutdown(socket.SHUT_WR); print(s.recv(4096).decode().strip())
EOF
}
for req in bogus "save 1" "save $VMM_PID a b" "save -3 x" "save 99999999999 x"; do
	answer=$(ask "$req")
	[[ "$answer" == "error a request is one line: save PID NAME" || "$answer" == "error not a pid"* ]] &&
		ok "refused: '$req'" || not_ok "not refused: '$req': $answer"
done
[[ "$(ask "save $(printf 'x%.0s' $(seq 300))")" == "error a request is one line of at most"* ]] &&
	ok "refused: an overlong line" || not_ok "an overlong line"
go_on; vmm_end && ok "the VMM ran on through the refusals" || not_ok "the VMM ended badly"
if have_nobody "$POOLCTL"; then
	chmod 0777 "$TEST_DIR"
	check_exit 1 "uid nobody may not ask root's server for a save" as_nobody "$POOLCTL" snap save "$SOCK" 1 x
	check_out "Permission denied" "the socket is root's (0600)"
fi
stop_server

serve vm1 "$SOCK" || exit 1
vmm --rounds 1 --write 10 "$SOCK" $SIZE
round 1 >/dev/null
check_exit 1 "a server without --track refuses a save" "$POOLCTL" snap save "$SOCK" "$VMM_PID" x
check_out "does not see writes: serve with --track" "saying what to do"
go_on; vmm_end; stop_server

# The store's pages, fetched by the server: the save maps the node's copy for the rest.
serve vm1 "$SOCK" --track --remote || exit 1
vmm --rounds 1 --write 200 "$SOCK" $SIZE
sum=$(round 1)
check "save of a VMM served from the store" "$POOLCTL" snap save "$SOCK" "$VMM_PID" rem
go_on; vmm_end
is_memory rem "$sum" "it is the memory"
stop_server

# 2 MiB guest pages, where the kernel gives them.
trap '[ -n "$VMM_PID" ] && kill -KILL "$VMM_PID" 2>/dev/null; pool_cleanup' EXIT
hugepages_add 40
if [ "$(hugepages_free)" -ge 32 ]; then
	check "store it with 2 MiB pages" "$POOLCTL" snap put vmh "$TEST_DIR/img" page=2M
	serve vmh "$SOCK" --track || exit 1
	vmm --hugepages --rounds 2 --write 100 "$SOCK" $SIZE
	for k in 1 2; do
		sum=$(round $k)
		check "2 MiB pages: save after round $k" "$POOLCTL" snap save "$SOCK" "$VMM_PID" "h$k"
		is_memory "h$k" "$sum" "2 MiB pages: h$k is the memory"
		go_on
	done
	vmm_end && ok "2 MiB pages: the VMM ended well" || not_ok "2 MiB pages: the VMM ended badly"
	stop_server
else
	echo "ok - # SKIP no 2 MiB pages to be had"
fi
hugepages_restore

# A server that may not read the VMM's memory: uid nobody's, a root VMM.
if have_nobody "$POOLCTL"; then
	chmod 0777 "$TEST_DIR"; chmod 0755 "$TEST_DIR/run"; rm -f "$SOCK"
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$POOLCTL" snap serve vm1 "$SOCK" --track \
		>"$TEST_DIR/serve.out" 2>"$TEST_DIR/serve.err" &
	SERVE_PID=$!
	for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
	vmm --rounds 2 --write 10 "$SOCK" $SIZE
	round 1 >/dev/null
	check_exit 1 "uid nobody's server cannot read root's VMM" "$POOLCTL" snap save "$SOCK" "$VMM_PID" peek
	check_out "CAP_SYS_PTRACE" "saying what it needs"
	check_exit 1 "nor save it later" "$POOLCTL" snap save "$SOCK" "$VMM_PID" peek2
	check_exit 1 "nothing was stored" "$POOLCTL" snap info peek
	go_on; [ -n "$(round 2)" ] && ok "the VMM runs on" || not_ok "the VMM runs on"
	go_on; vmm_end && ok "and ends well" || not_ok "and ends badly"
	stop_server
else
	echo "ok - # SKIP uid nobody cannot run poolctl here"
fi
VMM_PID=
pool_done
