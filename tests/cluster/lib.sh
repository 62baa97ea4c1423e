# shellcheck shell=bash disable=SC2016,SC2317
#
# tests/cluster/lib.sh -- multi-host test cluster on one machine.
#
# Source this file from a bash test script:
#
#     . "$(dirname "$0")/../cluster/lib.sh"
#     cluster_create 3 || exit 1
#     for i in 1 2 3; do
#         cluster_spawn "$i" "$(cluster_dir "$i")/poold.log" \
#             ./daemon/poold --listen "$(cluster_addr "$i"):$(cluster_port "$i" 7400)" \
#                            --runtime-dir "$(cluster_dir "$i")/run" >/dev/null
#     done
#     cluster_wait_tcp 1 "$(cluster_addr 2)" "$(cluster_port 2 7400)" 10 || exit 1
#     rc=0; cluster_link_down 2 || rc=$?
#     if [ "$rc" -eq "$CLUSTER_SKIP" ]; then echo "partition case skipped"; fi
#     ...
#     # cluster_destroy runs automatically on EXIT/INT/TERM/HUP.
#   (poold's --listen/--runtime-dir above are placeholders for whatever the
#   daemon's real options are.)
#
# MODES
#   netns     (root, `ip netns add` works): every host I is a network
#             namespace "<prefix>hI" with one interface "eth0" (address
#             10.213.X.I/24).  eth0 is one end of a veth pair; the other end
#             ("hI") is a port of bridge "br0", which lives in a dedicated
#             switch namespace "<prefix>sw".  Interfaces are created directly
#             inside those namespaces, so nothing (no address, no interface)
#             ever appears in the root namespace.  lo is up in every namespace.
#   loopback  (fallback): every host is 127.0.0.1, cluster_exec runs the
#             command directly, hosts must use distinct ports
#             (cluster_port I BASE = BASE+I), and cluster_link_down/up return
#             CLUSTER_SKIP (77, the automake "skipped" status) without doing
#             anything.
#   The prefix is "plt<pid>-" where <pid> is the pid of the shell that called
#   cluster_create (BASHPID, so parallel subshells do not collide either).
#
# API (all hosts are 1-based)
#   cluster_create N        build N hosts (1..250).  Sets CLUSTER_MODE
#                           (netns|loopback), CLUSTER_N, CLUSTER_PREFIX,
#                           CLUSTER_TMP (per-run scratch dir), arrays
#                           CLUSTER_NS[I] and CLUSTER_ADDR[I]; installs the
#                           cleanup traps.  Returns 0, or 1 on a hard error
#                           (bad N, cluster already active, netns required
#                           but unavailable).
#   cluster_addr I          print host I's IPv4 address.
#   cluster_ns I            print host I's namespace name (empty in loopback).
#   cluster_dir I           print host I's private scratch directory
#                           ($CLUSTER_TMP/hI, created by cluster_create).
#   cluster_port I BASE     print the port host I should use: BASE in netns
#                           mode, BASE+I in loopback mode.
#   cluster_exec I CMD...   run CMD inside host I (ip netns exec).  CMD must
#                           be an executable, not a shell function; use
#                           `cluster_exec I bash -c '...'` for shell code.
#                           Returns CMD's exit status.
#   cluster_spawn I LOG CMD...
#                           start CMD in the background inside host I with
#                           stdout+stderr appended to LOG and stdin from
#                           /dev/null, in its own session/process group;
#                           record it for cleanup; print its pid.  Safe to use
#                           as pid=$(cluster_spawn ...).
#   cluster_kill PID [SIG]  signal a spawned process (default TERM) and its
#                           process group.
#   cluster_link_down I     cut host I off the switch (veth down on both ends).
#   cluster_link_up I       heal it.  Both return 0 on success, 1 on failure,
#                           CLUSTER_SKIP (77) in loopback mode.
#   cluster_wait_tcp I ADDR PORT [SECS]
#                           from inside host I, poll until a TCP connect to
#                           ADDR:PORT succeeds (default 10 s).  0 ok, 1 timeout.
#   cluster_tcp_ok I ADDR PORT [SECS]
#                           one TCP connect attempt from host I (default 1 s
#                           timeout).  0 connected, 1 not.
#   cluster_destroy         SIGTERM every spawned process (and, in netns mode,
#                           every process left in a cluster namespace), SIGKILL
#                           survivors after CLUSTER_KILL_WAIT seconds (default
#                           2), delete all namespaces (veths go with them) and
#                           CLUSTER_TMP (kept if CLUSTER_KEEP_TMP=1).
#                           Idempotent; preserves $?.  Sets
#                           CLUSTER_DESTROY_STATUS (0 = everything removed).
#   cluster_gc              delete namespaces "plt<pid>-*" whose <pid> is no
#                           longer running (killing anything still inside),
#                           and such runs' scratch dirs ${TMPDIR:-/tmp}/plt<pid>.*
#                           unless they were kept with CLUSTER_KEEP_TMP=1.
#                           Called automatically by cluster_create.
#
# ENVIRONMENT
#   CLUSTER_FORCE_LOOPBACK=1  never try namespaces.
#   CLUSTER_REQUIRE_NETNS=1   fail (return 1) instead of falling back.
#   CLUSTER_KEEP_TMP=1        keep CLUSTER_TMP (logs) after destroy.
#   CLUSTER_KILL_WAIT=SECS    grace period between SIGTERM and SIGKILL
#                             (whole seconds, default 2).
#   CLUSTER_QUIET=1           suppress informational messages (errors still
#                             go to stderr).
#
# TRAPS
#   cluster_create installs traps on EXIT, INT, TERM and HUP that call
#   cluster_destroy.  An EXIT trap that the sourcing script installed *before*
#   cluster_create is chained (it runs after cluster_destroy, with $? intact);
#   an INT/TERM/HUP trap installed before is run after cleanup, then the
#   script exits with 128+signal.  If the sourcing script installs its own
#   EXIT trap *after* cluster_create, that replaces ours: it must then call
#   cluster_destroy itself.  Bash runs a trap only once the current foreground
#   command finishes; for long waits prefer `sleep N & wait $!`.
#
# WHAT A HOST DOES AND DOES NOT ISOLATE (netns mode)
#   Only the network namespace differs between hosts (`ip netns exec` also
#   gives a private mount namespace, but it only remounts /sys).  So:
#   - per host: interfaces, IP addresses, ports, 127.0.0.1/lo, routes, and
#     *abstract* AF_UNIX socket names.
#   - shared by all hosts: the filesystem (including /run, /tmp, /var/run,
#     filesystem-path AF_UNIX sockets, pid/lock files), /dev/shm and POSIX
#     shm/sem names, SysV IPC, hostname, pids, uid.
#   A daemon run on several hosts therefore needs a per-host runtime dir
#   (use "$(cluster_dir I)/run"), config, socket path, and shm names, and
#   must not take its node identity from gethostname().  In loopback mode
#   it also needs a per-host port (cluster_port) and must not use fixed
#   abstract socket names.
#
# set -e / set -u: the library works under both.  Under set -e, guard calls
# whose non-zero status you want to inspect:  rc=0; cluster_link_down 2 || rc=$?

# Guard against double sourcing.
if [ -n "${_CLUSTER_LIB_LOADED:-}" ]; then
    return 0 2>/dev/null || exit 0
fi
_CLUSTER_LIB_LOADED=1

CLUSTER_SKIP=77
# shellcheck disable=SC2034  # read by the sourcing script
CLUSTER_DESTROY_STATUS=0
CLUSTER_MODE=""
CLUSTER_N=0
CLUSTER_PREFIX=""
CLUSTER_TMP=""
CLUSTER_SUBNET=""
CLUSTER_SWITCH=""
CLUSTER_NS=()
CLUSTER_ADDR=()
_CLUSTER_ACTIVE=0
_CLUSTER_OWNER=""          # BASHPID of the shell that created the cluster
_CLUSTER_OLD_EXIT=""
_CLUSTER_OLD_INT=""
_CLUSTER_OLD_TERM=""
_CLUSTER_OLD_HUP=""
_CLUSTER_TRAPS=0

_cluster_msg() {
    [ "${CLUSTER_QUIET:-0}" = 1 ] || printf 'cluster: %s\n' "$*" >&2
}

_cluster_err() {
    printf 'cluster: ERROR: %s\n' "$*" >&2
}

# Run an `ip` command; on failure print the command and ip's message.
_cluster_ip() {
    local out
    if ! out=$(ip "$@" 2>&1); then
        _cluster_err "'ip $*' failed: ${out:-no message}"
        return 1
    fi
    [ -z "$out" ] || printf '%s\n' "$out"
    return 0
}

_cluster_check_host() {
    local i=${1:-}
    case $i in
        '' | *[!0-9]*)
            _cluster_err "${FUNCNAME[1]}: bad host index '$i'"
            return 1 ;;
    esac
    if [ "$_CLUSTER_ACTIVE" != 1 ]; then
        _cluster_err "${FUNCNAME[1]}: no active cluster (call cluster_create first)"
        return 1
    fi
    if [ "$i" -lt 1 ] || [ "$i" -gt "$CLUSTER_N" ]; then
        _cluster_err "${FUNCNAME[1]}: host $i out of range 1..$CLUSTER_N"
        return 1
    fi
    return 0
}

# Start time (clock ticks since boot) of a pid, from /proc/PID/stat field 22;
# used to make sure we never signal a recycled pid.
_cluster_starttime() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }                # drop "pid (comm) " (comm may hold spaces)
    # shellcheck disable=SC2086
    set -- $stat                     # $1 = state (field 3) ... $20 = field 22
    printf '%s\n' "${20}"
}

# True if pid exists and is not a zombie.
_cluster_alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# ---------------------------------------------------------------- traps

_cluster_trap_cmd() {      # print the command of the current trap for $1
    local spec
    spec=$(trap -p "$1")
    [ -n "$spec" ] || return 0
    local -a parts
    eval "parts=($spec)"     # trap -- 'CMD' SIG
    printf '%s' "${parts[2]}"
}

_cluster_rc() { return "$1"; }

_cluster_on_exit() {
    local rc=$?
    set +e                       # the script is exiting anyway
    cluster_destroy
    if [ -n "$_CLUSTER_OLD_EXIT" ]; then
        _cluster_rc "$rc"        # the chained trap sees the original $?
        eval "$_CLUSTER_OLD_EXIT"
    fi
    return "$rc"
}

_cluster_on_signal() {
    local sig=$1 code=$2 old
    set +e
    # Let a second Ctrl-C not interrupt the (bounded) cleanup.
    trap '' INT TERM HUP
    cluster_destroy
    case $sig in
        INT) old=$_CLUSTER_OLD_INT ;;
        TERM) old=$_CLUSTER_OLD_TERM ;;
        HUP) old=$_CLUSTER_OLD_HUP ;;
    esac
    if [ -n "$old" ]; then
        eval "$old"
    fi
    exit "$code"
}

_cluster_install_traps() {
    [ "$_CLUSTER_TRAPS" = 1 ] && return 0
    local cur
    cur=$(_cluster_trap_cmd EXIT)
    case $cur in
        *_cluster_on_exit*) ;;                       # already ours
        *) _CLUSTER_OLD_EXIT=$cur ;;
    esac
    _CLUSTER_OLD_INT=$(_cluster_trap_cmd INT)
    _CLUSTER_OLD_TERM=$(_cluster_trap_cmd TERM)
    _CLUSTER_OLD_HUP=$(_cluster_trap_cmd HUP)
    case $_CLUSTER_OLD_INT in *_cluster_on_signal*) _CLUSTER_OLD_INT= ;; esac
    case $_CLUSTER_OLD_TERM in *_cluster_on_signal*) _CLUSTER_OLD_TERM= ;; esac
    case $_CLUSTER_OLD_HUP in *_cluster_on_signal*) _CLUSTER_OLD_HUP= ;; esac
    trap _cluster_on_exit EXIT
    trap '_cluster_on_signal INT 130' INT
    trap '_cluster_on_signal TERM 143' TERM
    trap '_cluster_on_signal HUP 129' HUP
    _CLUSTER_TRAPS=1
}

# ---------------------------------------------------------------- gc

# Delete one namespace after killing whatever still runs inside it.
_cluster_ns_purge() {
    local ns=$1 pids p n
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null
        for ((n = 0; n < 20; n++)); do
            pids=$(ip netns pids "$ns" 2>/dev/null)
            [ -z "$pids" ] && break
            sleep 0.1
        done
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        for ((n = 0; n < 20; n++)); do
            pids=$(ip netns pids "$ns" 2>/dev/null)
            [ -z "$pids" ] && break
            sleep 0.05
        done
        if [ -n "$pids" ]; then
            for p in $pids; do
                _cluster_err "process $p still in namespace $ns after SIGKILL"
            done
        fi
    fi
    local out
    if ! out=$(ip netns del "$ns" 2>&1); then
        # Someone else (a parallel cluster_gc) may have deleted it meanwhile.
        [ -e "/run/netns/$ns" ] || return 0
        _cluster_err "'ip netns del $ns' failed: ${out:-no message}"
        return 1
    fi
    return 0
}

cluster_gc() {
    local -; set +e +o pipefail
    local line ns pid rc=0
    [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1 &&
    while read -r line; do
        ns=${line%% *}
        case $ns in
            plt[0-9]*-*) ;;
            *) continue ;;
        esac
        pid=${ns#plt}
        pid=${pid%%-*}
        case $pid in *[!0-9]*) continue ;; esac
        [ -d "/proc/$pid" ] && continue          # owner still running
        _cluster_msg "gc: removing stale namespace $ns (pid $pid gone)"
        _cluster_ns_purge "$ns" || rc=1
    done < <(ip netns list 2>/dev/null)
    # Scratch directories of dead runs (unless kept with CLUSTER_KEEP_TMP=1).
    local d
    for d in "${TMPDIR:-/tmp}"/plt[0-9]*.??????; do
        [ -d "$d" ] || continue
        [ -e "$d/.keep" ] && continue
        pid=${d##*/plt}
        pid=${pid%%.*}
        case $pid in '' | *[!0-9]*) continue ;; esac
        [ -d "/proc/$pid" ] && continue
        [ -f "$d/pids" ] || continue             # not one of ours
        rm -rf -- "$d" 2>/dev/null
    done
    return $rc
}

# ---------------------------------------------------------------- create

_cluster_setup_netns() {
    local n=$1 i ns sw=${CLUSTER_PREFIX}sw out
    # Switch namespace with the bridge.  A failure here means namespaces are
    # unusable: report it and let the caller fall back.
    if ! out=$(ip netns add "$sw" 2>&1); then
        sleep 0.1                       # first-use race on /run/netns mount
        if ! out=$(ip netns add "$sw" 2>&1); then
            _cluster_msg "'ip netns add $sw' failed: $out"
            return 2
        fi
    fi
    CLUSTER_SWITCH=$sw
    _cluster_ip -n "$sw" link set lo up || return 1
    if ! out=$(ip -n "$sw" link add br0 type bridge 2>&1); then
        _cluster_msg "cannot create a bridge: $out"
        return 2
    fi
    # No STP: ports forward immediately after link up.
    _cluster_ip -n "$sw" link set br0 up || return 1
    for ((i = 1; i <= n; i++)); do
        ns=${CLUSTER_PREFIX}h$i
        if ! out=$(ip netns add "$ns" 2>&1); then
            _cluster_err "'ip netns add $ns' failed: $out"
            return 1
        fi
        CLUSTER_NS[i]=$ns
        CLUSTER_ADDR[i]=$CLUSTER_SUBNET.$i
        # Create the pair directly in its two namespaces: host side "eth0"
        # in the host namespace, switch side "hI" in the switch namespace.
        if ! out=$(ip -n "$sw" link add "h$i" type veth peer name eth0 netns "$ns" 2>&1); then
            if [ "$i" = 1 ]; then
                _cluster_msg "cannot create a veth pair: $out"
                return 2
            fi
            _cluster_err "'ip -n $sw link add h$i type veth peer name eth0 netns $ns' failed: $out"
            return 1
        fi
        _cluster_ip -n "$sw" link set "h$i" master br0 up || return 1
        _cluster_ip -n "$ns" link set lo up || return 1
        _cluster_ip -n "$ns" addr add "$CLUSTER_SUBNET.$i/24" dev eth0 || return 1
        _cluster_ip -n "$ns" link set eth0 up || return 1
    done
    return 0
}

# Remove every namespace of this run (used by destroy and on setup failure).
_cluster_del_namespaces() {
    local line ns rc=0
    while read -r line; do
        ns=${line%% *}
        case $ns in
            "$CLUSTER_PREFIX"*) _cluster_ns_purge "$ns" || rc=1 ;;
        esac
    done < <(ip netns list 2>/dev/null)
    return $rc
}

cluster_create() {
    local -; set +e +o pipefail
    local n=${1:-}
    case $n in
        '' | *[!0-9]*) _cluster_err "cluster_create: bad host count '$n'"; return 1 ;;
    esac
    if [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
        _cluster_err "cluster_create: host count $n out of range 1..250"
        return 1
    fi
    if [ "$_CLUSTER_ACTIVE" = 1 ]; then
        _cluster_err "cluster_create: a cluster is already active (cluster_destroy first)"
        return 1
    fi
    local me=${BASHPID:-$$} i rc
    _CLUSTER_OWNER=$me
    CLUSTER_PREFIX="plt$me-"
    CLUSTER_N=$n
    CLUSTER_NS=()
    CLUSTER_ADDR=()
    CLUSTER_SWITCH=""
    # 10.213.X.0/24 with X from the pid; the subnet only exists inside this
    # run's isolated namespaces, so this is cosmetic rather than required.
    CLUSTER_SUBNET="10.213.$((me % 254 + 1))"
    CLUSTER_MODE=""
    CLUSTER_TMP=""
    # Traps first, so an interrupt at any later point cleans up.
    _CLUSTER_ACTIVE=1
    _cluster_install_traps
    CLUSTER_TMP=$(mktemp -d "${TMPDIR:-/tmp}/plt$me.XXXXXX") || {
        _cluster_err "cluster_create: mktemp failed"
        cluster_destroy
        return 1
    }
    : >"$CLUSTER_TMP/pids"
    for ((i = 1; i <= n; i++)); do
        mkdir -p "$CLUSTER_TMP/h$i" || { cluster_destroy; return 1; }
    done

    local why=""
    if [ "${CLUSTER_FORCE_LOOPBACK:-0}" = 1 ]; then
        why="CLUSTER_FORCE_LOOPBACK=1"
    elif [ "$(id -u)" != 0 ]; then
        why="not root"
    elif ! command -v ip >/dev/null 2>&1; then
        why="iproute2 'ip' not found"
    fi

    cluster_gc
    if [ -z "$why" ]; then
        # A leftover of an earlier process that had our pid: remove it.
        if ip netns list 2>/dev/null | grep -q "^$CLUSTER_PREFIX"; then
            _cluster_msg "removing leftover namespaces with prefix $CLUSTER_PREFIX"
            _cluster_del_namespaces
        fi
        CLUSTER_MODE=netns
        rc=0
        _cluster_setup_netns "$n" || rc=$?
        if [ "$rc" = 0 ]; then
            _cluster_msg "netns cluster: $n hosts, $CLUSTER_SUBNET.1-$n/24, prefix $CLUSTER_PREFIX"
            return 0
        fi
        _cluster_del_namespaces
        CLUSTER_NS=()
        CLUSTER_ADDR=()
        CLUSTER_SWITCH=""
        if [ "$rc" = 1 ]; then
            _cluster_err "cluster_create: network namespace setup failed"
            CLUSTER_MODE=""
            cluster_destroy
            return 1
        fi
        why="network namespaces unavailable"
    fi

    if [ "${CLUSTER_REQUIRE_NETNS:-0}" = 1 ]; then
        _cluster_err "cluster_create: netns mode required but unavailable ($why)"
        CLUSTER_MODE=""
        cluster_destroy
        return 1
    fi
    CLUSTER_MODE=loopback
    for ((i = 1; i <= n; i++)); do
        CLUSTER_NS[i]=""
        CLUSTER_ADDR[i]=127.0.0.1
    done
    _cluster_msg "loopback cluster: $n hosts on 127.0.0.1 ($why)"
    return 0
}

# ---------------------------------------------------------------- accessors

cluster_addr() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    printf '%s\n' "${CLUSTER_ADDR[$1]}"
}

cluster_ns() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    printf '%s\n' "${CLUSTER_NS[$1]}"
}

cluster_dir() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    printf '%s\n' "$CLUSTER_TMP/h$1"
}

cluster_port() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    local base=${2:-}
    case $base in
        '' | *[!0-9]*) _cluster_err "cluster_port: bad base port '$base'"; return 1 ;;
    esac
    if [ "$CLUSTER_MODE" = netns ]; then
        printf '%s\n' "$base"
    else
        printf '%s\n' "$((base + $1))"
    fi
}

# ---------------------------------------------------------------- exec/spawn

cluster_exec() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    local i=$1
    shift
    if [ $# -eq 0 ]; then
        _cluster_err "cluster_exec: no command"
        return 1
    fi
    if [ "$CLUSTER_MODE" = netns ]; then
        ip netns exec "${CLUSTER_NS[i]}" "$@"
    else
        "$@"
    fi
}

cluster_spawn() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    local i=$1 log=${2:-} pid st
    shift 2 || { _cluster_err "cluster_spawn: usage: cluster_spawn I LOGFILE CMD..."; return 1; }
    if [ -z "$log" ] || [ $# -eq 0 ]; then
        _cluster_err "cluster_spawn: usage: cluster_spawn I LOGFILE CMD..."
        return 1
    fi
    if ! : >>"$log"; then
        _cluster_err "cluster_spawn: cannot write log file '$log'"
        return 1
    fi
    # setsid: own session and process group (pgid == pid), so cleanup can
    # signal the whole group and Ctrl-C on the terminal reaches only us.
    # Without job control the background child is not a group leader, so
    # setsid does not fork and $! is the final pid.  With `set -m` it would
    # be, so in that case we skip setsid.
    local -a pre=()
    case $- in *m*) ;; *) command -v setsid >/dev/null 2>&1 && pre=(setsid) ;; esac
    if [ "$CLUSTER_MODE" = netns ]; then
        "${pre[@]}" ip netns exec "${CLUSTER_NS[i]}" "$@" </dev/null >>"$log" 2>&1 &
    else
        "${pre[@]}" "$@" </dev/null >>"$log" 2>&1 &
    fi
    pid=$!
    # Already gone (unreadable) => never signal this pid later.
    st=$(_cluster_starttime "$pid") || st=gone
    printf '%s %s %s\n' "$pid" "$st" "$i" >>"$CLUSTER_TMP/pids"
    printf '%s\n' "$pid"
}

# Is this pid one we spawned and is it still the same process?
_cluster_pid_ours() {
    local pid=$1 st=$2 cur
    [ "$st" != gone ] || return 1
    _cluster_alive "$pid" || return 1
    cur=$(_cluster_starttime "$pid") || return 1
    [ "$cur" = "$st" ]
}

_cluster_signal_pid() {         # pid sig: the process and, if it leads one, its group
    local pid=$1 sig=$2 pgid stat
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 0
    stat=${stat##*) }
    # shellcheck disable=SC2086
    set -- $stat                     # $3 = pgrp (field 5)
    pgid=$3
    if [ "$pgid" = "$pid" ]; then
        kill "-$sig" -- "-$pid" 2>/dev/null
    fi
    kill "-$sig" "$pid" 2>/dev/null
    return 0
}

cluster_kill() {
    local -; set +e +o pipefail
    local pid=${1:-} sig=${2:-TERM} p st _h
    [ "$_CLUSTER_ACTIVE" = 1 ] || { _cluster_err "cluster_kill: no active cluster"; return 1; }
    while read -r p st _h; do
        if [ "$p" = "$pid" ]; then
            _cluster_pid_ours "$p" "$st" || return 1
            _cluster_signal_pid "$p" "$sig"
            return 0
        fi
    done <"$CLUSTER_TMP/pids"
    _cluster_err "cluster_kill: $pid was not started by cluster_spawn"
    return 1
}

# ---------------------------------------------------------------- links

_cluster_link() {        # host up|down
    local i=$1 state=$2
    [ "$CLUSTER_MODE" = netns ] || return "$CLUSTER_SKIP"
    if [ "$state" = up ]; then
        # switch side first, so the host sees carrier as soon as it is up
        _cluster_ip -n "$CLUSTER_SWITCH" link set "h$i" up >/dev/null || return 1
        _cluster_ip -n "${CLUSTER_NS[i]}" link set eth0 up >/dev/null || return 1
    else
        _cluster_ip -n "${CLUSTER_NS[i]}" link set eth0 down >/dev/null || return 1
        _cluster_ip -n "$CLUSTER_SWITCH" link set "h$i" down >/dev/null || return 1
    fi
    return 0
}

cluster_link_down() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    _cluster_link "$1" down
}

cluster_link_up() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    _cluster_link "$1" up
}

# ---------------------------------------------------------------- tcp probes

cluster_tcp_ok() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    local i=$1 addr=${2:-} port=${3:-} secs=${4:-1}
    if [ -z "$addr" ] || [ -z "$port" ]; then
        _cluster_err "cluster_tcp_ok: usage: cluster_tcp_ok I ADDR PORT [SECS]"
        return 1
    fi
    cluster_exec "$i" timeout "$secs" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$addr" "$port" \
        >/dev/null 2>&1
}

cluster_wait_tcp() {
    local -; set +e +o pipefail
    _cluster_check_host "${1:-}" || return 1
    local i=$1 addr=${2:-} port=${3:-} secs=${4:-10}
    if [ -z "$addr" ] || [ -z "$port" ]; then
        _cluster_err "cluster_wait_tcp: usage: cluster_wait_tcp I ADDR PORT [SECS]"
        return 1
    fi
    local deadline=$((SECONDS + secs))
    while :; do
        cluster_tcp_ok "$i" "$addr" "$port" 1 && return 0
        [ "$SECONDS" -ge "$deadline" ] && break
        sleep 0.1
    done
    _cluster_err "host $i: $addr:$port not reachable within ${secs}s"
    return 1
}

# ---------------------------------------------------------------- destroy

cluster_destroy() {
    local rc_saved=$? rc=0
    local -; set +e +o pipefail
    [ "$_CLUSTER_ACTIVE" = 1 ] || return $rc_saved
    # Only the shell that created the cluster tears it down (a subshell
    # exiting, e.g. $(...), must not).
    if [ -n "$_CLUSTER_OWNER" ] && [ "${BASHPID:-$$}" != "$_CLUSTER_OWNER" ]; then
        return $rc_saved
    fi
    # _CLUSTER_ACTIVE stays 1 until the end: if a signal interrupts us, the
    # trap's cluster_destroy redoes the (idempotent) work.

    # 1. SIGTERM everything we spawned, plus anything left in our namespaces.
    local -a live=()
    local p st _h ns n pids
    if [ -n "$CLUSTER_TMP" ] && [ -f "$CLUSTER_TMP/pids" ]; then
        while read -r p st _h; do
            [ -n "$p" ] || continue
            if _cluster_pid_ours "$p" "$st"; then
                live+=("$p")
                _cluster_signal_pid "$p" TERM
            fi
        done <"$CLUSTER_TMP/pids"
    fi
    if [ "$CLUSTER_MODE" = netns ] && command -v ip >/dev/null 2>&1; then
        for ns in "${CLUSTER_NS[@]}" "$CLUSTER_SWITCH"; do
            [ -n "$ns" ] || continue
            pids=$(ip netns pids "$ns" 2>/dev/null)
            for p in $pids; do
                live+=("$p")
                kill -TERM "$p" 2>/dev/null
            done
        done
    fi
    # 2. Wait up to CLUSTER_KILL_WAIT seconds, then SIGKILL survivors.
    if [ ${#live[@]} -gt 0 ]; then
        local wait_ticks=$(( ${CLUSTER_KILL_WAIT:-2} * 10 )) any
        for ((n = 0; n < wait_ticks; n++)); do
            any=0
            for p in "${live[@]}"; do
                _cluster_alive "$p" && { any=1; break; }
            done
            [ "$any" = 0 ] && break
            sleep 0.1
        done
        for p in "${live[@]}"; do
            if _cluster_alive "$p"; then
                _cluster_msg "pid $p ignored SIGTERM, sending SIGKILL"
                _cluster_signal_pid "$p" KILL
            fi
        done
    fi
    # 3. Delete namespaces (veth pairs and the bridge die with them).
    if [ -n "$CLUSTER_PREFIX" ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
        _cluster_del_namespaces || rc=1
        if ip netns list 2>/dev/null | grep -q "^$CLUSTER_PREFIX"; then
            _cluster_err "namespaces with prefix $CLUSTER_PREFIX remain after destroy"
            rc=1
        fi
    fi
    # 4. Scratch directory.
    if [ -n "$CLUSTER_TMP" ] && [ -d "$CLUSTER_TMP" ]; then
        if [ "${CLUSTER_KEEP_TMP:-0}" = 1 ]; then
            : >"$CLUSTER_TMP/.keep"
            _cluster_msg "kept $CLUSTER_TMP"
        else
            rm -rf -- "$CLUSTER_TMP"
        fi
    fi
    CLUSTER_N=0
    CLUSTER_NS=()
    CLUSTER_ADDR=()
    CLUSTER_SWITCH=""
    CLUSTER_TMP=""
    _CLUSTER_ACTIVE=0
    # shellcheck disable=SC2034
    CLUSTER_DESTROY_STATUS=$rc
    [ "$rc" = 0 ] || _cluster_err "cluster_destroy: cleanup incomplete"
    return $rc_saved
}
