# tests/bench/ab.sh - sourced by pool-bench fabric's scripts: the checked
# links set beside UCX's one-sided path, from pool-bench-fabric outputs of
# both (several runs each, alternated, appended to one file per way).

# best SIZE COLUMN FILE: the largest bandwidth figure of SIZE over the runs.
best() { awk -v s="$1" -v c="$2" '/^size/ { lat = /lat/ } !lat && $1 == s && $c > m { m = $c } END { print m }' "$3"; }
# lbest SIZE COLUMN FILE: the smallest latency figure of SIZE over the runs.
lbest() { awk -v s="$1" -v c="$2" '/^size/ { lat = /lat/ } lat && $1 == s && (m == "" || $c < m) { m = $c } END { print m }' "$3"; }
# pct A B: A as a percentage of B.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.0f", 100 * a / b }'; }

# ab_tables "BW SIZES" "LAT SIZES" RMA LINK RMA_W1 LINK_W1: the bandwidth and
# latency tables and the verdict of 1 MiB and 8 bytes.
ab_tables() {
	bw=$1 lat=$2 r=$3 l=$4 r1=$5 l1=$6
	printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" size rma_get link_get rma_get_w1 link_get_w1 \
		rma_put link_put rma_put_w1 link_put_w1
	for s in $bw; do
		printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" $s "$(best $s 2 "$r")" "$(best $s 2 "$l")" \
			"$(best $s 2 "$r1")" "$(best $s 2 "$l1")" "$(best $s 3 "$r")" "$(best $s 3 "$l")" \
			"$(best $s 3 "$r1")" "$(best $s 3 "$l1")"
	done
	echo "## latency us (a write: until it is at the target: rma put + flush, link write + its reply)"
	printf "%-9s %9s %9s %9s %9s\n" size rma_get link_get rma_put link_put
	for s in $lat; do
		printf "%-9s %9s %9s %9s %9s\n" $s "$(lbest $s 2 "$r")" "$(lbest $s 2 "$l")" \
			"$(lbest $s 3 "$r")" "$(lbest $s 3 "$l")"
	done
	echo "## verdict: checked within 10% of rma (>= 90%), 1 MiB:" \
		"get $(pct "$(best 1048576 2 "$l")" "$(best 1048576 2 "$r")")%," \
		"get_w1 $(pct "$(best 1048576 2 "$l1")" "$(best 1048576 2 "$r1")")%," \
		"put $(pct "$(best 1048576 3 "$l")" "$(best 1048576 3 "$r")")%," \
		"put_w1 $(pct "$(best 1048576 3 "$l1")" "$(best 1048576 3 "$r1")")%;" \
		"8-byte latency (<= 110%): get $(pct "$(lbest 8 2 "$l")" "$(lbest 8 2 "$r")")%," \
		"put $(pct "$(lbest 8 3 "$l")" "$(lbest 8 3 "$r")")%"
}
