"""Fixtures the pytest suites share (run by tests/integration/python.sh as root)."""
import itertools

import pytest

import pool

_names = itertools.count()


@pytest.fixture()
def namespace(request):
    """A fresh 16 MiB KV namespace, named after the test module, dropped after the test."""
    name = "py-%s-%d" % (request.module.__name__.replace("test_", ""), next(_names))
    with pool.Pool() as p:
        p.create_kv(name, 16 << 20)
        yield name
        p.drop_kv(name)
