/* daemon/util/numa.c - the NUMA layout this node lends memory from, via libnuma. */
#include "config.h"

#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/util/util.h"

/*
 * One node_numa per NUMA node with memory: its size and its share of
 * total: the share lend.numa gives it, else an even part of what lend.numa
 * leaves. Without NUMA support, one node 0. Free the array with free().
 */
int numa_layout(const char *spec, uint64_t total, struct node_numa **ret_nodes, size_t *ret_n)
{
	struct node_numa *nodes;
	size_t n = 0, i, count;
	int max = 0, id;

	if (numa_available() >= 0)
		max = numa_max_node();
	nodes = calloc((size_t)max + 1, sizeof(*nodes));
	if (nodes == NULL)
		return -ENOMEM;
	for (id = 0; id <= max; id++) {
		long long size = 0;

		if (numa_available() >= 0) {
			size = numa_node_size64(id, NULL);
			if (size <= 0)
				continue;
		} else {
			size = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
		}
		nodes[n].id = (uint32_t)id;
		nodes[n].mem_total = (uint64_t)size;
		n++;
	}
	{
		uint64_t sum = 0, share, rest;
		size_t unlisted = 0;

		for (i = 0; i < n; i++)
			if (conf_numa_share(spec, (int)nodes[i].id, &share, &sum) <= 0)
				unlisted++;
		rest = total > sum ? total - sum : 0;
		count = unlisted ? unlisted : 1;
		for (i = 0; i < n; i++) {
			if (conf_numa_share(spec, (int)nodes[i].id, &share, NULL) > 0)
				nodes[i].lend_capacity = share;
			else
				nodes[i].lend_capacity = rest / count;
		}
	}
	*ret_nodes = nodes;
	*ret_n = n;
	return 0;
}
