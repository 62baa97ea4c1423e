#!/bin/bash
# The Grafana dashboard (etc/grafana/pool.json) against the metrics
# endpoint: every metric a panel queries is a family a poold serves (a
# coordinator elected through etcd, with a KV namespace and a snapshot, so
# that every family has samples), and every label a query groups by is on
# one of its metrics' samples.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/etcdlib.sh"
DASH="$top_srcdir/etc/grafana/pool.json"

etcd_cluster
port=$(free_port)
pool_start -o role=coordinator -o node.id=1 -o "peer.listen=127.0.0.1:$(free_port)" -o "coord.etcd=$ALL" \
	-o lend.size=64M -o "metrics.listen=127.0.0.1:$port" || exit 1
for _ in $(seq 100); do "$POOLCTL" status >/dev/null 2>&1 && break; sleep 0.1; done
check "a KV namespace" "$POOLCTL" kv create cache 16M
head -c 1M /dev/urandom >"$TEST_DIR/img"
check "a snapshot" "$POOLCTL" snap put demo "$TEST_DIR/img"
check "scrape the endpoint" curl -sf "http://127.0.0.1:$port/metrics" -o "$TEST_DIR/metrics"

cat >"$TEST_DIR/check.py" <<'PY'
import json, re, sys

dash = json.load(open(sys.argv[1]))
families, labels = {}, {}
for line in open(sys.argv[2]):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        families[m.group(1)] = m.group(2)
        continue
    m = re.match(r"([a-z_:][a-z0-9_:]*)(\{([^}]*)\})? ", line)
    if m and not line.startswith("#"):
        labels.setdefault(m.group(1), set()).update(
            re.findall(r'([a-z_]+)="', m.group(3) or ""))

def family(name):
    """The family a sample name belongs to (a histogram's _bucket, _sum, _count)."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and families.get(base) == "histogram":
            return base
    return name

exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
exprs.append(dash["templating"]["list"][1]["query"])
bad, checked = [], set()
for e in exprs:
    names = set(re.findall(r"\bpool_[a-z0-9_]+", e))
    for n in names:
        checked.add(n)
        if family(n) not in families:
            bad.append("%s: no such family served" % n)
    for group in re.findall(r"by \(([^)]*)\)", e):
        for label in (l.strip() for l in group.split(",")):
            if label == "instance":  # Prometheus's own
                continue
            if not any(label in labels.get(n, ()) for n in names):
                bad.append("%r groups by %r, on none of %s" % (e[:60], label, sorted(names)))
print("%d queries, %d metrics checked: %s" % (len(exprs), len(checked), ", ".join(sorted(checked))))
for b in bad:
    print("BAD", b)
sys.exit(1 if bad else 0)
PY
check "every metric and label the dashboard queries is served" \
	python3 "$TEST_DIR/check.py" "$DASH" "$TEST_DIR/metrics"
sed 's/^/  # /' "$TEST_DIR/out"
# The check itself: a metric the endpoint does not serve, or a label its
# samples do not have, is caught.
python3 - "$DASH" "$TEST_DIR" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = next(p for p in d["panels"] if p.get("targets"))["targets"][0]
expr = t["expr"]
t["expr"] = "pool_no_such_metric"
json.dump(d, open(sys.argv[2] + "/bad-metric.json", "w"))
t["expr"] = 'sum by (nosuchlabel) (pool_members)'
json.dump(d, open(sys.argv[2] + "/bad-label.json", "w"))
PY
check_exit 1 "a query of a metric not served fails the check" \
	python3 "$TEST_DIR/check.py" "$TEST_DIR/bad-metric.json" "$TEST_DIR/metrics"
check_exit 1 "a query grouping by a label its metric lacks fails it" \
	python3 "$TEST_DIR/check.py" "$TEST_DIR/bad-label.json" "$TEST_DIR/metrics"
pool_done
