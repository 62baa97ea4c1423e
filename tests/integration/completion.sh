#!/bin/bash
# poolctl's bash completion (cli/poolctl.bash, written by `poolctl
# completion bash` from its command table), driven as bash drives it:
# COMP_WORDS and COMP_CWORD set, _poolctl called, COMPREPLY read. Every
# command of poolctl --help completes; a family's second words; names
# from poold's listings (snapshots, namespaces, regions, nodes), also
# through -s; files; key= options of the synopsis and the help.
. "${top_srcdir:-.}/tests/integration/lib.sh"
SCRIPT="$top_builddir/cli/poolctl.bash"
[ -f "$SCRIPT" ] || { echo "completion.sh: $SCRIPT not built (make)"; exit 1; }
export PATH="$top_builddir/cli:$PATH"

check "the script is bash" bash -n "$SCRIPT"
"$POOLCTL" completion bash | cmp -s - "$SCRIPT" && ok "it is what poolctl completion bash writes now" ||
	not_ok "cli/poolctl.bash is not the table's (make)"

# comp LINE: what completes at the end of LINE (after "poolctl "), sorted, on one line.
comp() {
	bash -c '
		. "$1"
		read -ra COMP_WORDS <<<"poolctl $2"
		[[ $2 == *" " || -z $2 ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		compopt() { :; }
		_poolctl
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' _ "$SCRIPT" "$1"
}
# is LINE WANT: LINE completes with exactly WANT (sorted).
is() {
	local got
	got=$(comp "$1")
	[ "$got" = "$2" ] && ok "poolctl $1<TAB>: $2" || not_ok "poolctl $1<TAB>: got '$got', wanted '$2'"
}

want=$("$POOLCTL" --help | awk '/^  [a-z]/ { print $1 }' | sort -u | tr '\n' ' ' | sed 's/ $//')
is "" "$want"
is "snap " "copies gc get info ls place put rm save serve"
is "fabric " "probe"
is "kv create cache 64M " "evict= hint= replicas= tier="
is "kv create cache 64M ev" "evict="
is "snap serve base sock --t" "--track"
is "-" "--help --json --socket -h -s"
is "nodes " "-v"

# Names come from poold's listings.
pool_start -o lend.size=64M || exit 1
head -c 1M /dev/urandom >"$TEST_DIR/img"
check "put a snapshot" "$POOLCTL" snap put demo "$TEST_DIR/img"
check "make a namespace" "$POOLCTL" kv create cache 16M
is "snap rm " "demo"
is "snap info d" "demo"
is "kv stats " "$("$POOLCTL" kv ls | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')"
is "kv drop c" "cache"
is "region info snap/d" "snap/demo"
is "status " "1"
is "snap put " "" # a new name: nothing to offer
(cd "$TEST_DIR" && is "snap put other im" "img")
sock=$POOL_SOCKET
unset POOL_SOCKET
is "-s $sock snap get " "demo"
is "snap get " "" # no poold at the default socket: nothing, no error
(cd "$TEST_DIR" && is "-s $sock snap get demo im" "img")
pool_done
