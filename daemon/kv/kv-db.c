/*
 * daemon/kv/kv-db.c - the namespaces behind a RESP endpoint's databases,
 * and SWAPDB. Database N of root (the default user) is the KV namespace
 * "redisN", of a user of resp.users "redisN-uUID". SWAPDB makes two
 * databases trade their namespaces without moving a value: each keeps its
 * name and is told the database it serves now (kv_ns.serves_db, in its
 * definition: journaled by the coordinator, told to every node, kept by
 * them for a coordinator that comes back). A database whose own name's
 * namespace serves another, and which no namespace serves, gets a new one
 * named after it with ".K" (redis0.1, redis0-u1000.1), made on first use.
 *
 * The coordinator swaps (resp_db_swap()): a SWAPDB on its endpoint in
 * one turn of its loop, as Redis does; one on a node's (sharded
 * databases) is asked of it, and answered once that node's definitions
 * show it (resp-shard.c).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/kv/kv-int.h"
#include "daemon/kv/kv.h"

/* Database db's name before any SWAPDB, "redisN" or "redisN-uUID", in name[32]; its length. */
static size_t resp_db_base(uid_t uid, int db, char *name)
{
	/* Once per command: not through snprintf(). db is 0-15 (SELECT). */
	char *p = name + 5, digits[12];
	unsigned d, u;

	memcpy(name, "redis", 5);
	if (db >= 10)
		*p++ = (char)('0' + db / 10);
	*p++ = (char)('0' + db % 10);
	if (uid != 0) {
		*p++ = '-';
		*p++ = 'u';
		for (u = uid, d = 0; d == 0 || u != 0; u /= 10)
			digits[d++] = (char)('0' + u % 10);
		while (d > 0)
			*p++ = digits[--d];
	}
	*p = '\0';
	return (size_t)(p - name);
}

/* name into ns[len], cut short if need be (once per command: not through snprintf()). */
static void resp_db_copy(char *ns, size_t len, const char *name)
{
	size_t n = MIN(strlen(name), len - 1);

	memcpy(ns, name, n);
	ns[n] = '\0';
}

/* The database name says, or -1 when it is no RESP database's name. */
static int resp_db_of_name(const char *name)
{
	int db = 0;

	if (strncmp(name, "redis", 5) != 0 || !isdigit((unsigned char)name[5]))
		return -1;
	for (name += 5; isdigit((unsigned char)*name) && db < KV_RESP_DBS; name++)
		db = db * 10 + (*name - '0');
	return db < KV_RESP_DBS ? db : -1;
}

/*
 * Whether name is of one of a uid's databases: "redis", digits, then that
 * uid's part of a name (part: "" or "-uUID"), then ".K" or not.
 */
static bool resp_db_of_uid(const char *name, const char *part)
{
	const char *p = name + 5;
	size_t n = strlen(part);

	if (resp_db_of_name(name) < 0)
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	if (strncmp(p, part, n) != 0)
		return false;
	p += n;
	if (*p == '\0')
		return true;
	if (*p++ != '.' || !isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	return *p == '\0';
}

/*
 * Once per command and more: after a SWAPDB, a look at the few namespaces
 * that moved (the swapped list), without a lookup by name.
 */
void resp_db_resolve(struct poold *pd, uid_t uid, int db, char *ns, size_t len)
{
	char name[48];
	const char *part = name + (db >= 10 ? 7 : 6); /* (uid's: after "redisN") */
	const struct kv_ns *x;
	size_t n = resp_db_base(uid, db, name);
	bool taken = false;
	unsigned i, k;

	if (pd->kv != NULL && pd->kv->nswapped > 0) {
		for (i = 0; i < pd->kv->nswapped; i++) {
			x = pd->kv->swapped[i];
			if (x->serves_db == db + 1 && resp_db_of_uid(x->name, part)) {
				resp_db_copy(ns, len, x->name);
				return;
			}
			taken |= strcmp(x->name, name) == 0;
		}
		/*
		 * None was moved here: the namespace of its name, unless that one
		 * was moved to another database; then one of a new name. (Each
		 * name taken is of a moved namespace: as many as they are, at most.)
		 */
		for (k = 1; taken; k++) {
			snprintf(name + n, sizeof(name) - n, ".%u", k);
			taken = (x = kv_ns_find(pd, name)) != NULL && x->serves_db != 0;
		}
	}
	resp_db_copy(ns, len, name);
}

int resp_db_swap(struct poold *pd, uid_t uid, int a, int b)
{
	char na[32], nb[32];
	struct kv_ns *x, *y;

	if (pd->kv == NULL)
		return -ENOTSUP;
	if (a < 0 || a >= KV_RESP_DBS || b < 0 || b >= KV_RESP_DBS)
		return -EINVAL;
	if (a == b)
		return 0;
	resp_db_resolve(pd, uid, a, na, sizeof(na));
	resp_db_resolve(pd, uid, b, nb, sizeof(nb));
	x = kv_ns_find(pd, na);
	y = kv_ns_find(pd, nb);
	if (x == NULL && y == NULL)
		return 0; /* (two empty databases) */
	if (x != NULL)
		kv_ns_serve(pd, x, resp_db_of_name(x->name) == b ? 0 : (unsigned)b + 1);
	if (y != NULL)
		kv_ns_serve(pd, y, resp_db_of_name(y->name) == a ? 0 : (unsigned)a + 1);
	log_info("RESP databases %d and %d of uid %u swapped: namespaces '%s' and '%s'", a, b,
		 (unsigned)uid, x != NULL ? x->name : "(none)", y != NULL ? y->name : "(none)");
	pd->kv->defined(pd);
	kv_defs_send(pd);
	return 0;
}
