#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317  # quoted code is for bash -c; functions run via check
# Self-test of tests/cluster/lib.sh.
# Exit status: 0 pass, 77 skip (no network namespaces: loopback mode only
# had its basic API checked), 1 fail.  Prints one "selftest: RESULT" line.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cluster/lib.sh
# shellcheck disable=SC1091
. "$here/lib.sh"

fails=0
ok() { printf '  ok   %s\n' "$*"; }
bad() { printf '  FAIL %s\n' "$*"; fails=$((fails + 1)); }
check() {   # description command...
    local d=$1
    shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}
not() { ! "$@"; }
# A pid is gone when it does not exist or is a zombie (an orphan whose
# reaper has not run yet).
# With START (from starttime_of, taken while it ran), a recycled pid that now
# belongs to another process also counts as gone.
# shellcheck disable=SC2086
starttime_of() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; set -- $s; echo "${20}"; }
gone() {
    local st
    [ -e "/proc/$1" ] || return 0
    grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null && return 0
    if [ -n "${2:-}" ]; then
        st=$(starttime_of "$1") || return 0
        [ "$st" != "$2" ] && return 0
    fi
    echo "  pid $1 alive: $(ps -o pid=,ppid=,stat=,args= -p "$1" 2>/dev/null)"
    return 1
}
finish() {
    local code
    if [ "$fails" -gt 0 ]; then
        code=1
        echo "selftest: FAIL ($fails check(s) failed)"
    elif [ "$1" = skip ]; then
        code=77
        echo "selftest: SKIP (${2:-})"
    else
        code=0
        echo "selftest: PASS (${SECONDS}s)"
    fi
    exit "$code"
}

# Reachability of host J's address from host I: ping if iputils ping is
# usable, otherwise a TCP connect to the probe listener on host J.
PROBE_PORT=7911
have_ping=0
if command -v ping >/dev/null 2>&1; then have_ping=1; fi
reach() {   # I J
    local a
    a=$(cluster_addr "$2")
    if [ "$have_ping" = 1 ]; then
        cluster_exec "$1" ping -n -q -c 1 -W 1 "$a" >/dev/null 2>&1
    else
        cluster_tcp_ok "$1" "$a" "$(cluster_port "$2" "$PROBE_PORT")" 1
    fi
}

# Start a TCP listener on every host (used when there is no ping, and to
# test cluster_spawn/cluster_destroy process cleanup in any case).
listener_cmd=()
if command -v python3 >/dev/null 2>&1; then
    listener_cmd=(python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
print("listening", sys.argv[1], sys.argv[2], flush=True)
while True:
    c, _ = s.accept()
    c.close()
')
elif command -v socat >/dev/null 2>&1; then
    listener_cmd=(sh -c 'exec socat "TCP-LISTEN:$2,bind=$1,reuseaddr,fork" SYSTEM:true' sh)
fi
start_listeners() {
    local i
    LISTENER_PIDS=()
    LISTENER_START=()
    for ((i = 1; i <= CLUSTER_N; i++)); do
        LISTENER_PIDS[i]=$(cluster_spawn "$i" "$(cluster_dir "$i")/probe.log" \
            "${listener_cmd[@]}" "$(cluster_addr "$i")" "$(cluster_port "$i" "$PROBE_PORT")")
        LISTENER_START[i]=$(starttime_of "${LISTENER_PIDS[i]}")
    done
    for ((i = 1; i <= CLUSTER_N; i++)); do
        cluster_wait_tcp "$i" "$(cluster_addr "$i")" "$(cluster_port "$i" "$PROBE_PORT")" 5 ||
            return 1
    done
}

ns_left() {  # prints namespaces of this run's prefix, if any
    ip netns list 2>/dev/null | grep "^$1" || true
}

# ------------------------------------------------------------ 4-host cluster
echo "selftest: 4-host cluster"
t0=$SECONDS
if ! cluster_create 4; then
    bad "cluster_create 4"
    finish fail
fi
ok "cluster_create 4 (mode $CLUSTER_MODE, $((SECONDS - t0))s)"
prefix=$CLUSTER_PREFIX

if [ "$CLUSTER_MODE" = loopback ]; then
    # Basic API checks, then skip: the multi-host part needs namespaces.
    check "addr is 127.0.0.1" [ "$(cluster_addr 3)" = 127.0.0.1 ]
    check "ports differ per host" [ "$(cluster_port 1 7000)" != "$(cluster_port 2 7000)" ]
    check "cluster_exec runs" cluster_exec 2 true
    rc=0; cluster_link_down 2 || rc=$?
    check "link_down returns CLUSTER_SKIP" [ "$rc" = "$CLUSTER_SKIP" ]
    if [ ${#listener_cmd[@]} -gt 0 ]; then
        check "listeners start and answer" start_listeners
    else
        LISTENER_PIDS=([1]="$(cluster_spawn 1 "$(cluster_dir 1)/sleep.log" sleep 600)")
        LISTENER_START=([1]="$(starttime_of "${LISTENER_PIDS[1]}")")
    fi
    cluster_destroy
    for i in "${!LISTENER_PIDS[@]}"; do
        check "spawned pid ${LISTENER_PIDS[i]} killed" gone "${LISTENER_PIDS[i]}" "${LISTENER_START[i]}"
    done
    finish skip "network namespaces unavailable; loopback API checked"
fi

check "switch namespace exists" ip netns exec "${prefix}sw" true
for ((i = 1; i <= 4; i++)); do
    check "host $i: addr $(cluster_addr "$i"), port $(cluster_port "$i" 7000)" \
        [ "$(cluster_port "$i" 7000)" = 7000 ]
    check "host $i: lo and eth0 up" cluster_exec "$i" bash -c \
        'ip -o link show lo | grep -q "UP" && ip -o link show eth0 | grep -q "state UP"'
done

# Nothing of ours is visible in the root namespace.
root_addrs=$(ip -o addr)
root_links=$(ip -o link)
leak=0
for ((i = 1; i <= 4; i++)); do
    a=$(cluster_addr "$i")
    if grep -qw -- "${a//./\\.}" <<<"$root_addrs"; then leak=1; fi
done
check "no host address visible in root namespace" [ "$leak" = 0 ]
check "no bridge/veth of ours in root namespace" \
    bash -c '! grep -Eq ": (br0|h[0-9]+)[@:]" <<<"$1"' _ "$root_links"

if [ "$have_ping" = 0 ] && [ ${#listener_cmd[@]} -eq 0 ]; then
    cluster_destroy
    finish skip "neither ping nor python3/socat available for reachability checks"
fi
if [ "$have_ping" = 1 ]; then echo "  (reachability via ping)"; else echo "  (reachability via TCP connect)"; fi
if [ ${#listener_cmd[@]} -gt 0 ]; then
    check "probe listeners up on all hosts" start_listeners
else
    LISTENER_PIDS=()
    LISTENER_START=()
fi

# Full mesh.
mesh_ok=1
for ((i = 1; i <= 4; i++)); do
    for ((j = 1; j <= 4; j++)); do
        [ "$i" = "$j" ] && continue
        if ! reach "$i" "$j"; then
            mesh_ok=0
            bad "host $i cannot reach host $j"
        fi
    done
done
check "every host reaches every other host (12 pairs)" [ "$mesh_ok" = 1 ]

# Partition host 2, then heal.
check "cluster_link_down 2" cluster_link_down 2
check "host 1 cannot reach host 2" not reach 1 2
for j in 1 3 4; do
    if reach 2 "$j"; then bad "host 2 still reaches host $j while cut"; else ok "host 2 cannot reach host $j"; fi
done
if reach 3 4; then ok "host 3 still reaches host 4"; else bad "host 3 cannot reach host 4 during host 2 cut"; fi
check "cluster_link_up 2" cluster_link_up 2
healed=0
for ((k = 0; k < 30; k++)); do
    if reach 1 2 && reach 2 1 && reach 2 4; then healed=1; break; fi
    sleep 0.1
done
check "host 2 reachable again after heal" [ "$healed" = 1 ]

# A process that ignores SIGTERM must be SIGKILLed by destroy.
stubborn=$(cluster_spawn 3 "$(cluster_dir 3)/stubborn.log" bash -c 'trap "" TERM; while :; do sleep 0.2; done')
stubborn_start=$(starttime_of "$stubborn")
sleep 0.2
check "stubborn process running" [ -e "/proc/$stubborn" ]

t0=$SECONDS
CLUSTER_KILL_WAIT=1 cluster_destroy
check "cluster_destroy reports complete cleanup" [ "$CLUSTER_DESTROY_STATUS" = 0 ]
echo "  (destroy took $((SECONDS - t0))s)"
check "no namespace with prefix $prefix remains" [ -z "$(ns_left "$prefix")" ]
all_gone=1
LISTENER_PIDS[0]=$stubborn
LISTENER_START[0]=$stubborn_start
for i in "${!LISTENER_PIDS[@]}"; do
    if ! gone "${LISTENER_PIDS[i]}" "${LISTENER_START[i]}"; then
        bad "spawned pid ${LISTENER_PIDS[i]} still alive"
        all_gone=0
    fi
done
check "spawned processes (incl. one ignoring SIGTERM) gone" [ "$all_gone" = 1 ]
cluster_destroy
check "cluster_destroy is idempotent" [ "$CLUSTER_DESTROY_STATUS" = 0 ]

# ------------------------------------------------------------ 8-host cluster
echo "selftest: 8-host cluster"
t0=$SECONDS
if cluster_create 8; then
    ok "cluster_create 8 ($((SECONDS - t0))s)"
    check "8 host namespaces + switch" [ "$(ns_left "$prefix" | wc -l)" = 9 ]
    check "host 8 address $(cluster_addr 8)" [ "$(cluster_addr 8)" = "$CLUSTER_SUBNET.8" ]
    if [ "$have_ping" = 1 ]; then
        check "host 1 reaches host 8" reach 1 8
        check "host 8 reaches host 5" reach 8 5
    elif [ ${#listener_cmd[@]} -gt 0 ]; then
        cluster_spawn 8 "$(cluster_dir 8)/probe.log" "${listener_cmd[@]}" \
            "$(cluster_addr 8)" "$(cluster_port 8 "$PROBE_PORT")" >/dev/null
        check "host 1 reaches host 8 (tcp)" cluster_wait_tcp 1 "$(cluster_addr 8)" "$(cluster_port 8 "$PROBE_PORT")" 5
    fi
    check "cluster_create refuses a second active cluster" not cluster_create 2 2>/dev/null
    cluster_destroy
    check "cluster_destroy (8 hosts) complete" [ "$CLUSTER_DESTROY_STATUS" = 0 ]
    check "no namespace with prefix $prefix remains" [ -z "$(ns_left "$prefix")" ]
else
    bad "cluster_create 8"
fi

# ------------------------------------------------------------ cluster_gc
# A stale namespace of a dead run (pid that cannot exist) must be collected.
dead=$(( $(cat /proc/sys/kernel/pid_max) + $$ ))
if ip netns add "plt$dead-h1" 2>/dev/null; then
    cluster_gc 2>/dev/null
    check "cluster_gc removes stale namespace plt$dead-h1" [ -z "$(ns_left "plt$dead-")" ]
    ip netns del "plt$dead-h1" 2>/dev/null
else
    bad "could not create a fake stale namespace"
fi

finish pass
