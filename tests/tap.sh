# tests/tap.sh - what every shell test shares: its pass and fail counts, and
# running a command as another uid. Sourced by tests/integration/lib.sh and
# tests/cluster/pool.sh.

FAILS=0
PASSES=0
ok() { PASSES=$((PASSES + 1)); echo "ok - $*"; }
not_ok() { FAILS=$((FAILS + 1)); echo "not ok - $*"; }

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
