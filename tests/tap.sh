# tests/tap.sh - what every shell test shares: its pass and fail counts,
# running a command as another uid, and python3 on the build tree's binding.
# Sourced by tests/integration/lib.sh and tests/cluster/pool.sh.

FAILS=0
PASSES=0
ok() { PASSES=$((PASSES + 1)); echo "ok - $*"; }
not_ok() { FAILS=$((FAILS + 1)); echo "not ok - $*"; }

# tap_relay FILE N [PREFIX]: count FILE's "ok"/"not ok" lines (a helper
# script's checks) as this test's, PREFIX before each, the others as
# comments; and fail unless N checks passed.
tap_relay() {
	local line n
	while read -r line; do
		case "$line" in
		"ok - "*) ok "${3:-}${line#ok - }" ;;
		"not ok - "*) not_ok "${3:-}${line#not ok - }" ;;
		*) echo "# $line" ;;
		esac
	done <"$1"
	n=$(grep -c '^ok - ' "$1")
	[ "$n" -eq "$2" ] || not_ok "${3:-}$n of $2 checks ran"
}

# as_nobody COMMAND...: run COMMAND as uid nobody, group nogroup, no others.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# have_nobody PROGRAM: whether as_nobody can run PROGRAM here. Without a
# nobody user or setpriv the checks are skipped; a build tree that other
# uids cannot reach fails, as it would turn every check into a refusal.
have_nobody() {
	if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
		echo "skip: no nobody user or setpriv"
		return 1
	fi
	as_nobody test -x "$1" && return 0
	not_ok "uid nobody cannot run $1: a directory above it is closed to other users"
	return 1
}

# pool_pyenv: PYENV becomes the env(1) command that runs /usr/bin/python3 with the build
# tree's binding (python/ and its libpool). A sanitized libpool needs its runtime loaded
# first: preloaded into python3, whose own leaks at exit are not ours to report (poold's
# still are). False when that runtime cannot be found.
pool_pyenv() {
	local rt
	PYENV=(env PYTHONPATH="$top_srcdir/python" POOL_LIBPOOL="$top_builddir/libpool/.libs/libpool.so.0")
	[ -n "${pool_sanitizers:-}" ] || return 0
	rt=$(ldd "$top_builddir/libpool/.libs/libpool.so.0" | awk '/lib(asan|tsan)\.so/ { print $3; exit }')
	[ -n "$rt" ] || return 1
	PYENV+=(LD_PRELOAD="$rt" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
}

# pool_python ARGS...: that python3 (after pool_pyenv).
pool_python() { "${PYENV[@]}" /usr/bin/python3 "$@"; }
