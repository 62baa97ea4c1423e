#!/usr/bin/python3
"""Replies of poold's RESP endpoint against a real redis-server's, byte for byte.

    resp-compat.py POOL_PORT REDIS_PORT

Each case is sent, as the same bytes, on a fresh connection to each server
(both flushed first); the replies are read one by one and compared: exactly,
or, where a reply differs by nature (a time, an id, an order), by its shape
(types and lengths of arrays) or as an unordered set. Prints a TAP line per
case and exits non-zero on any difference.
"""
import socket
import sys

POOL, REDIS = int(sys.argv[1]), int(sys.argv[2])


def cmd(*args):
    """A command as a RESP array of bulk strings."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        """One reply as (raw bytes, parsed tree)."""
        line = self._line()
        t, rest = line[:1], line[1:]
        raw = line + b"\r\n"
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return raw, (t, rest)
        if t in (b"$", b"=", b"!"):
            n = int(rest)
            if n < 0:
                return raw, (t, None)
            data = self._take(n + 2)
            return raw + data, (t, data[:-2])
        if t in (b"*", b"%", b"~", b">"):
            n = int(rest)
            items = []
            for _ in range(n * (2 if t == b"%" else 1) if n > 0 else 0):
                r, tree = self.reply()
                raw += r
                items.append(tree)
            return raw, (t, items)
        raise ValueError("bad reply line %r" % line)

    def closed(self):
        try:
            self.s.settimeout(2)
            return self.s.recv(1) == b""
        except OSError:
            return True


def shape(tree):
    t, v = tree
    if isinstance(v, list):
        return (t, len(v), tuple(shape(x) for x in v))
    return (t,)


def unordered(tree):
    t, v = tree
    return (t, sorted(repr(unordered(x)) for x in v)) if isinstance(v, list) else tree


# (name, bytes to send, how many replies, how to compare: exact | shape | set | closes)
E, S, U = "exact", "shape", "set"
CASES = [
    ("PING", cmd("PING"), 1, E),
    ("PING with a message", cmd("PING", "hello"), 1, E),
    ("PING with too many", cmd("PING", "a", "b"), 1, E),
    ("ECHO of the empty string", cmd("ECHO", ""), 1, E),
    ("SET and GET an empty value", cmd("SET", "k", "") + cmd("GET", "k") + cmd("STRLEN", "k"), 3, E),
    ("the empty key", cmd("GET", "") + cmd("SET", "", "v") + cmd("GET", "") + cmd("DEL", ""), 4, E),
    ("SET NX, XX, GET", cmd("SET", "k", "v") + cmd("SET", "k", "w", "NX") + cmd("SET", "k2", "w", "XX") +
     cmd("SET", "k", "w", "XX", "GET") + cmd("SET", "k3", "x", "NX", "GET") + cmd("GET", "k"), 6, E),
    ("SET option errors", cmd("SET", "k", "v", "EX", "0") + cmd("SET", "k", "v", "EX", "-1") +
     cmd("SET", "k", "v", "EX", "abc") + cmd("SET", "k", "v", "EX", "10", "PX", "10") +
     cmd("SET", "k", "v", "KEEPTTL", "EX", "10") + cmd("SET", "k", "v", "NX", "XX") +
     cmd("SET", "k", "v", "FOO") + cmd("SET", "k", "v", "EX") + cmd("SET", "k", "v", "PXAT", "0"), 9, E),
    ("SET EX, KEEPTTL, and a SET that drops the TTL",
     cmd("SET", "k", "v", "EX", "100") + cmd("TTL", "k") + cmd("SET", "k", "v2", "KEEPTTL") + cmd("TTL", "k") +
     cmd("SET", "k", "v3") + cmd("TTL", "k") + cmd("SET", "k", "v", "PX", "100000") + cmd("TTL", "k"), 8, E),
    ("SETNX, SETEX, PSETEX, GETSET",
     cmd("SETNX", "k", "x") + cmd("SETNX", "n1", "x") + cmd("SETEX", "k", "0", "v") + cmd("SETEX", "k", "100", "v") +
     cmd("TTL", "k") + cmd("PSETEX", "k", "0", "v") + cmd("SETEX", "k", "x", "v") + cmd("GETSET", "k", "new") +
     cmd("GETSET", "nokey", "v") + cmd("TTL", "k"), 10, E),
    ("MSET, MSETNX, MGET",
     cmd("MSET", "a", "1", "b", "2") + cmd("MSET", "a") + cmd("MSET", "a", "1", "b") + cmd("MSETNX", "a", "1", "z", "2") +
     cmd("MSETNX", "y", "1", "z", "2") + cmd("MGET", "a", "b", "nokey", "y", "z"), 6, E),
    ("GETDEL, GETEX",
     cmd("SET", "a", "1") + cmd("GETDEL", "a") + cmd("GETDEL", "a") + cmd("SET", "b", "2") + cmd("GETEX", "b") +
     cmd("GETEX", "b", "EX", "100") + cmd("TTL", "b") + cmd("GETEX", "b", "PERSIST") + cmd("TTL", "b") +
     cmd("GETEX", "b", "FOO") + cmd("GETEX", "nokey", "EX", "10") + cmd("GETEX", "b", "EX", "0"), 12, E),
    ("APPEND, STRLEN, GETRANGE, SUBSTR",
     cmd("APPEND", "ap", "hello") + cmd("APPEND", "ap", " world") + cmd("GET", "ap") + cmd("STRLEN", "ap") +
     cmd("GETRANGE", "ap", "0", "4") + cmd("GETRANGE", "ap", "-5", "-1") + cmd("GETRANGE", "ap", "5", "2") +
     cmd("GETRANGE", "ap", "0", "100") + cmd("GETRANGE", "nokey", "0", "1") + cmd("GETRANGE", "ap", "a", "b") +
     cmd("SUBSTR", "ap", "1", "3") + cmd("GETRANGE", "ap", "-100", "-50") + cmd("STRLEN", "nokey"), 13, E),
    ("SETRANGE",
     cmd("SETRANGE", "sr", "5", "hi") + cmd("GET", "sr") + cmd("SETRANGE", "sr", "0", "") + cmd("SETRANGE", "no2", "0", "") +
     cmd("EXISTS", "no2") + cmd("SETRANGE", "sr", "-1", "x") + cmd("SETRANGE", "sr", "1", "ABC") + cmd("GET", "sr"), 8, E),
    ("INCR and DECR, and their errors",
     cmd("INCR", "cnt") + cmd("INCRBY", "cnt", "10") + cmd("DECR", "cnt") + cmd("DECRBY", "cnt", "5") +
     cmd("INCRBY", "cnt", "abc") + cmd("SET", "big", "9223372036854775807") + cmd("INCR", "big") +
     cmd("SET", "neg", "-9223372036854775808") + cmd("DECR", "neg") + cmd("DECRBY", "cnt", "-9223372036854775808") +
     cmd("SET", "nn", "abc") + cmd("INCR", "nn") + cmd("SET", "lead", "007") + cmd("INCR", "lead") +
     cmd("SET", "sp", " 1") + cmd("INCR", "sp") + cmd("SET", "e", "") + cmd("INCR", "e") + cmd("GET", "cnt"), 19, E),
    ("DEL, UNLINK, EXISTS, TYPE",
     cmd("MSET", "a", "1", "b", "2", "y", "3") + cmd("DEL", "a", "b", "nokey") + cmd("UNLINK", "y", "z") +
     cmd("SET", "k", "v") + cmd("EXISTS", "k", "k", "nokey") + cmd("TYPE", "k") + cmd("TYPE", "nokey"), 7, E),
    ("EXPIRE and its options, TTL, PERSIST",
     cmd("SET", "k", "v") + cmd("EXPIRE", "k", "100") + cmd("TTL", "k") + cmd("PEXPIRE", "k", "200000") + cmd("TTL", "k") +
     cmd("PERSIST", "k") + cmd("PERSIST", "k") + cmd("TTL", "k") + cmd("TTL", "nokey") + cmd("PTTL", "nokey") +
     cmd("PTTL", "k") + cmd("EXPIRE", "k", "100", "XX") + cmd("EXPIRE", "k", "100", "NX") + cmd("EXPIRE", "k", "200", "NX") +
     cmd("EXPIRE", "k", "50", "GT") + cmd("EXPIRE", "k", "500", "GT") + cmd("EXPIRE", "k", "600", "LT") +
     cmd("TTL", "k") + cmd("EXPIRE", "k", "10", "NX", "XX") + cmd("EXPIRE", "k", "10", "GT", "LT") +
     cmd("EXPIRE", "k", "10", "FOO") + cmd("EXPIRE", "k", "abc") + cmd("EXPIRE", "nokey", "10") +
     cmd("EXPIRETIME", "nokey") + cmd("PERSIST", "nokey") + cmd("EXPIREAT", "k", "1") + cmd("EXISTS", "k") +
     cmd("SET", "k", "v") + cmd("EXPIRE", "k", "-5") + cmd("EXISTS", "k") + cmd("SET", "k", "v") +
     cmd("EXPIRE", "k", "9223372036854775807") + cmd("SET", "k", "v") + cmd("EXPIRETIME", "k"), 34, E),
    ("KEYS, as a set", cmd("MSET", "h1", "a", "h2", "b", "x3", "c", "h[", "d") + cmd("KEYS", "h*") + cmd("KEYS", "h?") +
     cmd("KEYS", "[hx][0-9]") + cmd("KEYS", "*") + cmd("KEYS", "h\\[") + cmd("KEYS", "nomatch*"), 7, U),
    ("SCAN, by its shape", cmd("MSET", "s1", "a", "s2", "b") + cmd("SCAN", "0", "COUNT", "1000", "MATCH", "s*") +
     cmd("SCAN", "0", "TYPE", "hash") + cmd("SCAN", "abc") + cmd("SCAN", "0", "COUNT") + cmd("SCAN", "0", "COUNT", "0"), 6, S),
    ("DBSIZE, SELECT", cmd("SET", "k", "v") + cmd("DBSIZE") + cmd("SELECT", "1") + cmd("DBSIZE") + cmd("SELECT", "16") +
     cmd("SELECT", "-1") + cmd("SELECT", "abc") + cmd("SELECT", "0") + cmd("GET", "k"), 9, E),
    ("FLUSHDB options", cmd("FLUSHDB", "FOO") + cmd("FLUSHDB", "ASYNC") + cmd("DBSIZE"), 3, E),
    ("unknown commands and arity",
     cmd("FOO") + cmd("FOO", "a", "b") + cmd("GET") + cmd("GET", "a", "b") + cmd("SET", "a") + cmd("TTL") +
     cmd("EXPIRE", "k") + cmd("SETRANGE", "k", "1"), 8, E),
    ("CLIENT names", cmd("CLIENT", "GETNAME") + cmd("CLIENT", "SETNAME", "a b") + cmd("CLIENT", "SETNAME", "myname") +
     cmd("CLIENT", "GETNAME") + cmd("CLIENT"), 5, E),
    ("CLIENT ID, INFO, by their shape", cmd("CLIENT", "ID") + cmd("CLIENT", "INFO"), 2, S),
    ("MULTI and EXEC", cmd("MULTI") + cmd("SET", "m", "1") + cmd("INCR", "m") + cmd("GET", "m") + cmd("EXEC") +
     cmd("GET", "m"), 6, E),
    ("MULTI errors", cmd("MULTI") + cmd("MULTI") + cmd("DISCARD") + cmd("DISCARD") + cmd("EXEC") + cmd("MULTI") +
     cmd("FOO") + cmd("SET", "m", "2") + cmd("EXEC") + cmd("GET", "m") + cmd("MULTI") + cmd("GET") + cmd("EXEC"), 13, E),
    ("an error inside EXEC", cmd("SET", "t", "abc") + cmd("MULTI") + cmd("INCR", "t") + cmd("SET", "u", "1") +
     cmd("EXEC") + cmd("GET", "u"), 6, E),
    ("HELLO errors", cmd("HELLO", "4") + cmd("HELLO", "abc") + cmd("HELLO", "2", "FOO"), 3, E),
    ("HELLO 2 and 3, by their shape", cmd("HELLO", "2") + cmd("HELLO", "3"), 2, S),
    ("RESP3 replies after HELLO 3", cmd("HELLO", "3") + cmd("GET", "nokey") + cmd("MGET", "a", "nokey") +
     cmd("SET", "k", "v") + cmd("GET", "k") + cmd("CLIENT", "GETNAME") + cmd("SET", "k", "v", "NX"), 7, S),
    ("... their nulls exactly", cmd("HELLO", "3")[:0] + cmd("GET", "nokey"), 1, "resp3"),
    ("RESET", cmd("SELECT", "2") + cmd("RESET") + cmd("SET", "r", "1") + cmd("SELECT", "0") + cmd("GET", "r"), 5, E),
    ("COMMAND COUNT and TIME, by their shape", cmd("COMMAND", "COUNT") + cmd("TIME"), 2, S),
    ("inline commands", b"PING\r\nSET il 'a b'\r\nGET il\r\nECHO \"x\\ny\\x41\"\r\n\r\nGET   il  \n", 5, E),
    ("no command: empty and negative arrays", b"*0\r\n*-1\r\n" + cmd("PING"), 1, E),
    ("MGET of 5,000 keys", cmd("MGET", *["k%d" % i for i in range(5000)]), 1, E),
    ("SETBIT, GETBIT and their errors",
     cmd("SETBIT", "b", "7", "1") + cmd("SETBIT", "b", "100", "1") + cmd("GET", "b") + cmd("SETBIT", "b", "7", "0") +
     cmd("GETBIT", "b", "100") + cmd("GETBIT", "b", "99") + cmd("GETBIT", "b", "100000") + cmd("GETBIT", "nokey", "3") +
     cmd("SETBIT", "b", "-1", "1") + cmd("SETBIT", "b", "4294967296", "1") + cmd("SETBIT", "b", "1", "2") +
     cmd("SETBIT", "b", "1", "x") + cmd("GETBIT", "b", "abc") + cmd("SET", "n", "1") + cmd("SETBIT", "n", "6", "1") +
     cmd("GET", "n") + cmd("SET", "t", "v", "EX", "100") + cmd("SETBIT", "t", "0", "1") + cmd("TTL", "t"), 19, E),
    ("BITCOUNT and BITPOS, bytes and bits",
     cmd("SET", "s", "foobar") + cmd("BITCOUNT", "s") + cmd("BITCOUNT", "s", "0", "0") + cmd("BITCOUNT", "s", "1", "1") +
     cmd("BITCOUNT", "s", "1", "1", "BYTE") + cmd("BITCOUNT", "s", "5", "30", "BIT") + cmd("BITCOUNT", "s", "-2", "-1") +
     cmd("BITCOUNT", "s", "-1", "-2") + cmd("BITCOUNT", "s", "0") + cmd("BITCOUNT", "s", "0", "1", "FOO") +
     cmd("BITCOUNT", "s", "a", "1") + cmd("BITCOUNT", "nokey") + cmd("SET", "z", b"\xff\xf0\x00") +
     cmd("BITPOS", "z", "0") + cmd("BITPOS", "z", "1", "2") + cmd("BITPOS", "z", "1", "2", "-1", "BYTE") +
     cmd("BITPOS", "z", "0", "0", "-1") + cmd("BITPOS", "z", "0", "7", "15", "BIT") + cmd("BITPOS", "z", "1", "7", "15", "BIT") +
     cmd("BITPOS", "z", "2") + cmd("BITPOS", "nokey", "0") + cmd("BITPOS", "nokey", "1") +
     cmd("SET", "f", b"\xff\xff") + cmd("BITPOS", "f", "0") + cmd("BITPOS", "f", "0", "0", "1") +
     cmd("BITPOS", "f", "0", "3", "9", "BIT") + cmd("BITPOS", "z", "1", "5", "2"), 27, E),
    ("INCRBYFLOAT and its errors",
     cmd("INCRBYFLOAT", "f", "1.5") + cmd("INCRBYFLOAT", "f", "10") + cmd("INCRBYFLOAT", "f", "-11.5") + cmd("GET", "f") +
     cmd("SET", "f", "3.0e3") + cmd("INCRBYFLOAT", "f", "200") + cmd("INCRBYFLOAT", "f", "abc") +
     cmd("INCRBYFLOAT", "f", " 1") + cmd("INCRBYFLOAT", "f", "1 ") + cmd("INCRBYFLOAT", "f", "+inf") +
     cmd("INCRBYFLOAT", "f", "nan") + cmd("SET", "s", "x") + cmd("INCRBYFLOAT", "s", "1") +
     cmd("INCRBYFLOAT", "g", "0.024390243902439025") + cmd("INCRBYFLOAT", "g", "-0.024390243902439025") +
     cmd("INCRBYFLOAT", "h", "5.0e3") + cmd("INCRBYFLOAT", "h", "1e-5"), 17, E),
    ("LCS: the string, LEN, IDX with and without lengths",
     cmd("MSET", "a", "ohmytext", "b", "mynewtext") + cmd("LCS", "a", "b") + cmd("LCS", "a", "b", "LEN") +
     cmd("LCS", "a", "b", "IDX") + cmd("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") +
     cmd("LCS", "a", "b", "IDX", "LEN") + cmd("LCS", "a", "b", "FOO") + cmd("LCS", "a", "nokey") +
     cmd("LCS", "a", "b", "MINMATCHLEN", "x"), 9, E),
    ("RENAME, RENAMENX with expiry", cmd("SET", "a", "1", "EX", "100") + cmd("RENAME", "a", "b") + cmd("GET", "a") +
     cmd("GET", "b") + cmd("TTL", "b") + cmd("RENAME", "nokey", "x") + cmd("RENAME", "b", "b") +
     cmd("RENAMENX", "b", "b") + cmd("SET", "c", "2") + cmd("RENAMENX", "b", "c") + cmd("RENAMENX", "b", "d") +
     cmd("RENAME", "d", "c") + cmd("GET", "c") + cmd("EXISTS", "d") + cmd("RENAMENX", "nokey", "e"), 15, E),
    ("COPY and MOVE between databases",
     cmd("SET", "a", "1", "PX", "100000") + cmd("COPY", "a", "b") + cmd("GET", "b") + cmd("COPY", "a", "b") +
     cmd("COPY", "a", "b", "REPLACE") + cmd("COPY", "a", "a") + cmd("COPY", "nokey", "x") + cmd("COPY", "a", "a", "DB", "3") +
     cmd("COPY", "a", "b", "DB", "16") + cmd("COPY", "a", "b", "FOO") + cmd("MOVE", "a", "3") + cmd("MOVE", "b", "3") +
     cmd("MOVE", "b", "0") + cmd("MOVE", "b", "x") + cmd("MOVE", "nokey", "3") + cmd("SELECT", "3") + cmd("GET", "a") +
     cmd("DBSIZE") + cmd("SELECT", "0") + cmd("DBSIZE"), 20, E),
    ("SWAPDB: two databases trade values, an empty one too; WATCH sees it; its errors",
     cmd("SET", "a", "0") + cmd("SELECT", "1") + cmd("SET", "b", "1") + cmd("SELECT", "0") +
     cmd("SWAPDB", "0", "1") + cmd("GET", "a") + cmd("GET", "b") + cmd("DBSIZE") +
     cmd("SWAPDB", "0", "2") + cmd("DBSIZE") + cmd("SET", "c", "2") + cmd("SELECT", "2") + cmd("GET", "b") +
     cmd("GET", "c") + cmd("SELECT", "0") +
     cmd("SWAPDB", "0", "2") + cmd("GET", "b") + cmd("GET", "c") + cmd("SELECT", "2") + cmd("GET", "c") +
     cmd("SELECT", "0") +
     cmd("SWAPDB", "1", "1") + cmd("SWAPDB", "x", "1") + cmd("SWAPDB", "1", "y") + cmd("SWAPDB", "0", "16") +
     cmd("SWAPDB", "-1", "0") + cmd("SWAPDB", "0") +
     cmd("WATCH", "b") + cmd("SWAPDB", "0", "3") + cmd("MULTI") + cmd("PING") + cmd("EXEC") +
     cmd("SELECT", "3") + cmd("WATCH", "nokey") + cmd("SWAPDB", "3", "4") + cmd("MULTI") + cmd("PING") +
     cmd("EXEC") + cmd("SELECT", "4") + cmd("GET", "b"), 40, E),
    ("RANDOMKEY, OBJECT", cmd("RANDOMKEY") + cmd("SET", "k", "12") + cmd("RANDOMKEY") + cmd("OBJECT", "ENCODING", "k") +
     cmd("SET", "e", "short") + cmd("OBJECT", "ENCODING", "e") + cmd("SET", "r", "x" * 50) + cmd("OBJECT", "ENCODING", "r") +
     cmd("OBJECT", "ENCODING", "nokey") + cmd("OBJECT", "REFCOUNT", "r") + cmd("OBJECT", "FREQ", "r") +
     cmd("OBJECT", "FOO", "r") + cmd("OBJECT", "ENCODING") + cmd("SET", "i", "-0") + cmd("OBJECT", "ENCODING", "i"), 15, E),
    ("WATCH, UNWATCH and EXEC", cmd("SET", "w", "1") + cmd("WATCH", "w", "nokey") + cmd("MULTI") + cmd("INCR", "w") +
     cmd("WATCH", "x") + cmd("EXEC") + cmd("WATCH", "w") + cmd("SET", "w", "5") + cmd("MULTI") + cmd("INCR", "w") +
     cmd("EXEC") + cmd("GET", "w") + cmd("WATCH", "w") + cmd("EXPIRE", "w", "100") + cmd("MULTI") + cmd("PING") +
     cmd("EXEC") + cmd("WATCH", "w") + cmd("UNWATCH") + cmd("SET", "w", "7") + cmd("MULTI") + cmd("PING") + cmd("EXEC") +
     cmd("WATCH", "nokey") + cmd("FLUSHDB") + cmd("MULTI") + cmd("PING") + cmd("EXEC") + cmd("WATCH"), 29, E),
    ("FUNCTION FLUSH, CONFIG SET refused", cmd("FUNCTION", "FLUSH") + cmd("FUNCTION", "FLUSH", "SYNC") +
     cmd("FUNCTION", "LIST") + cmd("CONFIG", "GET", "databases") + cmd("CONFIG", "GET", "nosuchparam"), 5, E),
    ("INFO's sections, by their shape", cmd("INFO", "cpu") + cmd("INFO", "keyspace"), 2, S),
    ("OBJECT's arity", cmd("OBJECT", "HELP", "x") + cmd("OBJECT", "FREQ") + cmd("OBJECT"), 3, E),
    ("lists: push, pop, ranges, and WRONGTYPE both ways",
     cmd("RPUSH", "l", "a", "b", "c") + cmd("LPUSH", "l", "x", "y") + cmd("LRANGE", "l", "0", "-1") + cmd("LLEN", "l") +
     cmd("LPUSHX", "nokey", "a") + cmd("RPUSHX", "l", "z") + cmd("LPOP", "l") + cmd("RPOP", "l", "2") +
     cmd("LPOP", "l", "0") + cmd("LPOP", "l", "-1") + cmd("LPOP", "nokey", "2") + cmd("RPOP", "nokey") +
     cmd("LINDEX", "l", "-1") + cmd("LINDEX", "l", "99") + cmd("LSET", "l", "0", "X") + cmd("LSET", "l", "9", "X") +
     cmd("LSET", "nokey", "0", "X") + cmd("LINSERT", "l", "BEFORE", "X", "w") + cmd("LINSERT", "l", "AFTER", "q", "w") +
     cmd("LINSERT", "l", "MIDDLE", "X", "w") + cmd("LRANGE", "l", "0", "-1") + cmd("TYPE", "l") + cmd("GET", "l") +
     cmd("SET", "s", "v") + cmd("LPUSH", "s", "a") + cmd("APPEND", "l", "x") + cmd("INCR", "l") +
     cmd("MGET", "l", "s") + cmd("SET", "l", "w", "GET") + cmd("LLEN", "l") + cmd("OBJECT", "ENCODING", "l") +
     cmd("EXPIRE", "l", "100") + cmd("RPUSH", "l", "t") + cmd("TTL", "l"), 34, E),
    ("lists: LREM, LTRIM, LMOVE, RPOPLPUSH; an emptied list is no key",
     cmd("RPUSH", "l", "a", "b", "a", "c", "a") + cmd("LREM", "l", "-2", "a") + cmd("LRANGE", "l", "0", "-1") +
     cmd("LREM", "l", "0", "zz") + cmd("LTRIM", "l", "1", "-1") + cmd("LRANGE", "l", "0", "-1") +
     cmd("LMOVE", "l", "m", "LEFT", "RIGHT") + cmd("LMOVE", "l", "l", "RIGHT", "LEFT") + cmd("LRANGE", "l", "0", "-1") +
     cmd("RPOPLPUSH", "l", "m") + cmd("LRANGE", "m", "0", "-1") + cmd("EXISTS", "l") + cmd("LMOVE", "nokey", "m", "LEFT", "LEFT") +
     cmd("LMOVE", "m", "n", "UP", "LEFT") + cmd("SET", "s", "v") + cmd("LMOVE", "m", "s", "LEFT", "LEFT") +
     cmd("LTRIM", "m", "5", "1") + cmd("EXISTS", "m"), 18, E),
    ("sets: members, operations, STORE, WRONGTYPE",
     cmd("SADD", "a", "1", "2", "3", "2") + cmd("SADD", "b", "2", "3", "4") + cmd("SCARD", "a") + cmd("SISMEMBER", "a", "2") +
     cmd("SISMEMBER", "a", "9") + cmd("SMISMEMBER", "a", "1", "9", "3") + cmd("SREM", "a", "1", "9") + cmd("SCARD", "a") +
     cmd("SINTERSTORE", "i", "a", "b") + cmd("SUNIONSTORE", "u", "a", "b") + cmd("SDIFFSTORE", "d", "b", "a") +
     cmd("SCARD", "u") + cmd("SMOVE", "b", "a", "4") + cmd("SMOVE", "b", "a", "9") + cmd("SCARD", "a") +
     cmd("TYPE", "a") + cmd("OBJECT", "ENCODING", "a") + cmd("SADD", "t", "x") + cmd("OBJECT", "ENCODING", "t") +
     cmd("SET", "s", "v") + cmd("SADD", "s", "x") + cmd("SMEMBERS", "s") + cmd("GETRANGE", "a", "0", "1") +
     cmd("SRANDMEMBER", "nokey") + cmd("SRANDMEMBER", "nokey", "-3") + cmd("SPOP", "nokey") +
     cmd("SPOP", "a", "-1") + cmd("SINTERSTORE", "e", "a", "nokey") + cmd("EXISTS", "e") + cmd("SREM", "t", "x") +
     cmd("EXISTS", "t"), 31, E),
    ("sets and lists by content, as sets", cmd("SADD", "a", "1", "2", "3") + cmd("SADD", "b", "3", "4") +
     cmd("SMEMBERS", "a") + cmd("SUNION", "a", "b") + cmd("SINTER", "a", "b") + cmd("SDIFF", "a", "b") +
     cmd("SRANDMEMBER", "a", "5") + cmd("SPOP", "b", "5") + cmd("RPUSH", "l", "x") + cmd("SCAN", "0", "TYPE", "set") +
     cmd("SCAN", "0", "TYPE", "list") + cmd("KEYS", "*"), 12, U),
    ("SSCAN, as a set", cmd("SADD", "s", "foo", "fab", "1", "2") + cmd("SSCAN", "s", "0") +
     cmd("SSCAN", "s", "0", "MATCH", "f*", "COUNT", "100") + cmd("SSCAN", "nokey", "0"), 4, U),
    ("SSCAN errors, SAVE and SHUTDOWN inside MULTI", cmd("SSCAN", "s", "x") + cmd("SSCAN", "s", "0", "COUNT", "0") +
     cmd("SSCAN", "s", "0", "FOO", "1") + cmd("MULTI") + cmd("SET", "foo", "bar") + cmd("SAVE") + cmd("SHUTDOWN") +
     cmd("EXEC") + cmd("GET", "foo"), 9, E),
    ("unbalanced quotes", b"SET a \"b\r\n", 1, "closes"),
    ("a bulk without its $", b"*2\r\n$3\r\nGET\r\nfoo\r\n", 1, "closes"),
    ("a negative bulk length", b"*1\r\n$-2\r\n", 1, "closes"),
    ("a leading 0 in a count", b"*01\r\n$4\r\nPING\r\n", 1, "closes"),
    ("a leading 0 in a bulk length", b"*1\r\n$04\r\nPING\r\n", 1, "closes"),
    ("a space in a count", b"* 1\r\n$4\r\nPING\r\n", 1, "closes"),
    ("a + in a bulk length", b"*1\r\n$+4\r\nPING\r\n", 1, "closes"),
]


def main():
    failed = 0
    for i, (name, data, n, how) in enumerate(CASES, 1):
        got = {}
        for port in (POOL, REDIS):
            c = Conn(port)
            c.send(cmd("FLUSHALL"))
            c.reply()
            if how == "resp3":
                c.send(cmd("HELLO", "3"))
                c.reply()
            c.send(data)
            try:
                replies = [c.reply() for _ in range(n)]
            except (EOFError, OSError) as e:
                replies = [("EOF", str(e))]
            closed = c.closed() if how == "closes" else None
            got[port] = (replies, closed)
        (pr, pc), (rr, rc) = got[POOL], got[REDIS]
        if how in (E, "resp3", "closes"):
            same = [r[0] for r in pr] == [r[0] for r in rr] and pc == rc
        elif how == S:
            same = len(pr) == len(rr) and all(
                not isinstance(a[0], str) and shape(a[1]) == shape(b[1]) for a, b in zip(pr, rr))
        else:
            same = len(pr) == len(rr) and all(
                not isinstance(a[0], str) and unordered(a[1]) == unordered(b[1]) for a, b in zip(pr, rr))
        if same:
            print("ok %d - %s" % (i, name))
        else:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for a, b in zip(pr + [("", "")] * (len(rr) - len(pr)), rr + [("", "")] * (len(pr) - len(rr))):
                if a[0] != b[0]:
                    print("#   pool:  %r\n#   redis: %r" % (a[0][:300], b[0][:300]))
            if pc != rc:
                print("#   closed: pool %r, redis %r" % (pc, rc))
    print("1..%d" % len(CASES))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
