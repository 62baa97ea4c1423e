#!/usr/bin/env python3
# tests/tools/mutants.py - put small bugs into the sources one at a time,
# each where a check stands between a tenant and something it must not do,
# and see whether the tests meant to catch it fail.
#
#   mutants.py [NAME...]     (make mutants: all of them)
#
# Run from the top of a configured build tree whose sources are the
# tree's own (not out of tree). Each mutant is exact text in one file
# replaced; the file is put back afterwards whatever happens, and the tree
# built again. A mutant whose text is not in its file (the code moved)
# is reported as stale: edit its entry. Prints a line per mutant and
# exits 1 when one was not caught or is stale.
import os
import subprocess
import sys

# (name, file, [(text, replacement), ...], tests that must fail)
MUTANTS = [
    ("grant-region-size", "daemon/control/grant.c",
     [("if (off > g->size || len > g->size - off || g->n == 0)", "if (g->n == 0)")],
     ["tests/unit/test_grant"]),
    ("grant-extent-length", "daemon/control/grant.c",
     [("if (loc > x->len || step > x->len - loc)", "if (loc > x->len && 0)")],
     ["tests/unit/test_grant"]),
    ("kv-reserve-needs-no-write", "daemon/kv/kv.c",
     [("\tcase KV_RESERVE:\n\tcase KV_COMMIT:", "\tcase KV_COMMIT:"),
      ("\tcase KV_RELEASE: /*", "\tcase KV_RESERVE:\n\tcase KV_RELEASE: /*")],
     ["tests/unit/test_kv"]),
    ("kv-local-op-ungated", "daemon/kv/kv-local.c",
     [("\tif (!mode_allows(uid, (gid_t)-1, ns->uid, ns->gid, ns->mode, kv_key_access(op)))\n"
       "\t\treturn -EACCES;\n\tkv_key_op(", "\tkv_key_op(")],
     ["tests/unit/test_kv"]),
    ("kv-no-lazy-expiry", "daemon/kv/kv.c",
     [("if (e != NULL && kv_expired(e, kv_expire_at(e) != 0 ? kv_unix_ms() : 0))",
       "if (e != NULL && kv_expired(e, kv_expire_at(e) != 0 ? kv_unix_ms() : 0) && 0)")],
     ["tests/unit/test_kv"]),
    ("lease-any-incarnation", "daemon/region/region.c",
     [("if (l->unconfirmed && l->incarnation != incarnation)",
       "if (l->unconfirmed && l->incarnation != incarnation && 0)")],
     ["tests/unit/test_region"]),
    ("resp-fast-path-bulk-unbounded", "daemon/resp/resp-parse.c",
     [("if (bulk < 0 || bulk > p->max_bulk || ", "if (bulk < 0 || ")],
     ["tests/unit/test_resp_parse", "tests/fuzz/run.sh"]),
    ("resp-count-nul-ends-number", "daemon/resp/resp-parse.c",
     [("if (!resp_ll(line + 1, (size_t)p.pos - 1, &v)",
       "if (!resp_ll(line + 1, strnlen(line + 1, (size_t)p.pos - 1), &v)")],
     ["tests/unit/test_resp_parse", "tests/fuzz/run.sh"]),
    ("lender-scrub-skipped", "daemon/lend/lend.c",
     [("\tlend_group_scrub();\n\tmemset((char *)a->base + off, 0, len);", "\tlend_group_scrub();")],
     ["tests/unit/test_hold"]),
    ("wire-field-zero-kept", "proto/msg.c",
     [("if (msg->unknown_fields[i].tag == 0)\n\t\t\treturn false;",
       "if (msg->unknown_fields[i].tag == 0)\n\t\t\tcontinue;")],
     ["tests/fuzz/run.sh"]),
    ("swapdb-forgotten-at-restart", "daemon/kv/kv-rebuild.c",
     [("|| (ns->flags & HOLD_NS_SHARDED) || ns->serves_db)", "|| (ns->flags & HOLD_NS_SHARDED))")],
     ["tests/unit/test_kv"]),
]

JOBS = str(os.cpu_count() or 2)


def make(*args):
    return subprocess.run(["make", "-j" + JOBS, *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.STDOUT).returncode


def run(name, path, edits, tests):
    with open(path) as f:
        original = f.read()
    text = original
    for old, new in edits:
        if text.count(old) != 1:
            return "stale (its text is not in %s once)" % path
        text = text.replace(old, new)
    try:
        with open(path, "w") as f:
            f.write(text)
        programs = [t for t in tests if not t.endswith(".sh")]
        # (one goal at a time: two goals of one make race to build libpoold)
        if make("all") != 0 or (programs and make(*programs) != 0):
            return "stale (the tree does not build with it)"
        failed = make("check", "TESTS=" + " ".join(tests)) != 0
        return "caught" if failed else "NOT CAUGHT by " + " ".join(tests)
    finally:
        with open(path, "w") as f:
            f.write(original)


def main():
    names = set(sys.argv[1:])
    unknown = names - {m[0] for m in MUTANTS}
    if unknown:
        sys.exit("mutants: no mutant " + ", ".join(sorted(unknown)))
    bad = 0
    for name, path, edits, tests in MUTANTS:
        if names and name not in names:
            continue
        result = run(name, path, edits, tests)
        bad += result != "caught"
        print("%-32s %s" % (name, result), flush=True)
    make("all")
    print("mutants: %d not caught or stale" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
