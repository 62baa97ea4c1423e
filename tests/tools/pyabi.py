#!/usr/bin/python3
"""The Python binding (python/pool) against libpool's header: every ctypes
prototype of pool._lib names a function libpool.h declares, with as many
arguments, each of a type the C one can be passed as (an integer of the same
width and sign; for a pointer, c_void_p, c_char_p for char, or POINTER() of
the type pointed to), and the same return type; and every constant the
binding copies from the header (the POOL_E* codes, flags, limits) has the
header's value. Prints what it checked; exits 1 on any difference.

Usage: PYTHONPATH=python POOL_LIBPOOL=.../libpool.so.0 pyabi.py libpool.h pool_contract.h
"""
import ctypes
import importlib
import re
import sys

SCALARS = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "int64_t": ctypes.c_int64, "size_t": ctypes.c_size_t, "pid_t": ctypes.c_int,
    "float": ctypes.c_float, "double": ctypes.c_double, "char": ctypes.c_char,
}


def declarations(text):
    """{name: (return type, [parameter types])} of the POOL_EXPORT functions."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    found = {}
    for m in re.finditer(r"POOL_EXPORT\s+([^;(]*?)\b(pool_\w+)\s*\(([^)]*)\)\s*;", text):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        types = []
        for p in params.split(","):
            p = " ".join(p.split())
            if p in ("void", ""):
                continue
            # The parameter's name is the last word, after its type's words and stars.
            p = re.sub(r"\s*\b\w+$", "", p) if re.search(r"[\w*]\s*\w+$", p) else p
            types.append(p)
        found[name] = (" ".join(ret.split()), types)
    return found


def ctype_of(c):
    """What c (a C type) is: ("void",), ("scalar", ctypes type) or ("pointer", c of what)."""
    c = " ".join(c.replace("const", " ").split())
    if c.endswith("*"):
        return ("pointer", c[:-1].strip())
    if c == "void":
        return ("void",)
    if c in SCALARS:
        return ("scalar", SCALARS[c])
    raise ValueError("no rule for the C type '%s'" % c)


def fits(c, py):
    """Whether py (a ctypes type, or None) carries the C type c."""
    kind = ctype_of(c)
    if kind[0] == "void":
        return py is None
    if kind[0] == "scalar":
        return py is kind[1]
    target = kind[1]
    if py is ctypes.c_void_p:
        return True
    if py is ctypes.c_char_p:
        return " ".join(target.replace("const", " ").split()) == "char"
    if isinstance(py, type) and issubclass(py, ctypes._Pointer):
        inner = py._type_
        base = " ".join(target.replace("const", " ").split())
        if base.startswith("struct ") or base == "void" or base.endswith("_fn"):
            return inner is ctypes.c_void_p
        return fits(target, inner)
    return False


def value(expr):
    """The value of a header #define's simple expression (literals, <<, unary -)."""
    expr = expr.split("/*")[0].strip()
    if expr == "UINT64_MAX":
        return 2**64 - 1
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)(?:ull|ul|u|l)\b", r"\1", expr, flags=re.I)
    expr = re.sub(r"\b0([0-7]+)\b", r"0o\1", expr)
    if not re.fullmatch(r"[0-9a-fA-FxXo()<\s\-]+", expr):
        return None
    return eval(expr, {"__builtins__": {}})  # only digits, parentheses, << and -


def main(headers):
    text = "".join(open(h).read() for h in headers)
    decls = declarations(text)
    macros = {}
    for m in re.finditer(r"^#define\s+(POOL_\w+)\s+(.+)$", text, flags=re.M):
        v = value(m.group(2))
        if v is not None:
            macros[m.group(1)] = v
    lib = importlib.import_module("pool._lib")
    bad = []
    bound = 0
    for name in sorted(n for n in dir(lib.lib) if n.startswith("pool_")):
        fn = getattr(lib.lib, name)
        if name not in decls:
            bad.append("%s: bound in Python, not declared in libpool.h" % name)
            continue
        ret, params = decls[name]
        args = fn.argtypes or []
        if len(args) != len(params):
            bad.append("%s: %d arguments in Python, %d in C" % (name, len(args), len(params)))
            continue
        for i, (c, py) in enumerate(zip(params, args)):
            if not fits(c, py):
                bad.append("%s: argument %d is %s in C, %s in Python" % (name, i + 1, c, py))
        if not fits(ret, fn.restype):
            bad.append("%s: returns %s in C, %s in Python" % (name, ret, fn.restype))
        bound += 1
    # Constants: the codes by their own names; a module's NAME as POOL_NAME or POOL_MOD_NAME.
    consts = 0
    for code in (n for n in macros if re.fullmatch(r"POOL_E[A-Z]+", n)):
        if getattr(lib, code, None) != macros[code]:
            bad.append("%s: %s in Python, %d in C" % (code, getattr(lib, code, "missing"),
                                                      macros[code]))
        consts += 1
    for mod in ("client", "kv", "vec", "snap", "region"):
        m = importlib.import_module("pool." + mod)
        for n, v in vars(m).items():
            if not re.fullmatch(r"[A-Z][A-Z_0-9]*", n) or not isinstance(v, int):
                continue
            for c in ("POOL_" + n, "POOL_%s_%s" % (mod.upper(), n)):
                if c in macros:
                    consts += 1
                    if v != macros[c]:
                        bad.append("pool.%s.%s: %d, %s in C: %d" % (mod, n, v, c, macros[c]))
        for table, prefix in (("KINDS", "POOL_VEC_"), ("METRICS", "POOL_VEC_")):
            for k, v in getattr(m, table, {}).items():
                consts += 1
                if macros.get(prefix + k.upper()) != v:
                    bad.append("pool.%s.%s[%r]: %d, %s%s in C: %s" %
                               (mod, table, k, v, prefix, k.upper(), macros.get(prefix + k.upper())))
    for b in bad:
        print("FAIL:", b)
    print("%d prototypes checked (of %d functions libpool.h declares), %d constants" %
          (bound, len(decls), consts))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
