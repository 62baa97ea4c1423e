/*
 * tests/tools/pool-io.c - drive regions through libpool for the tests:
 * write a seeded pattern, read it back and verify it, print checksums.
 *
 *	pool-io create NAME SIZE [placement [class [stripe]]]
 *	pool-io write NAME SEED        (whole region, 1 MiB per call)
 *	pool-io read NAME SEED         (verify; exit 1 on any wrong byte)
 *	pool-io zero NAME              (verify the region reads as zeros)
 *	pool-io map NAME SEED          (map and verify with loads; exit 3 if not mappable)
 *	pool-io anon NAME SIZE         (create an anonymous region, hold it until killed)
 *	pool-io stat NAME              (print what pool_region_stat() says)
 *	pool-io destroy NAME
 *	pool-io bounds NAME            (out-of-range access must fail with ERANGE)
 *	pool-io bread NAME SEED        (read and verify through a batch of 64 KiB pieces)
 *	pool-io count NAME N           (N fetch-adds of 1 on the word at offset 0; print it)
 *	pool-io watch NAME SEED SECS   (read and verify again and again for SECS seconds)
 * The socket is $POOL_SOCKET. With POOL_IO_BUF=1 in the environment, the
 * 1 MiB transfer buffer of write, read, zero and watch comes from
 * pool_buf_alloc() (moved in place by poold) instead of malloc().
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "libpool/libpool.h"

#define CHUNK (1u << 20)

static uint64_t pattern(uint64_t seed, uint64_t word)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + word + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t w = pattern(seed, (off + i) / 8);

		buf[i] = (uint8_t)(w >> (((off + i) % 8) * 8));
	}
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-io: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	return 1;
}

int main(int argc, char **argv)
{
	struct pool_region *r = NULL;
	struct pool *pool;
	const char *cmd, *name;
	uint8_t *buf = NULL, *want = NULL, *poolbuf = NULL;
	uint64_t size, off, seed = 0;
	XXH64_state_t *h = NULL;
	int status = 0;
	int rc;

	if (argc < 3) {
		fprintf(stderr,
			"usage: pool-io create|write|read|zero|map|destroy|bounds NAME ...\n");
		return 2;
	}
	cmd = argv[1];
	name = argv[2];
	if (argc > 3)
		seed = strtoull(argv[3], NULL, 0);
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("open pool", rc);
	if (strcmp(cmd, "create") == 0 || strcmp(cmd, "anon") == 0) {
		struct pool_region_opts *o;

		pool_region_opts_new(&o);
		pool_region_opts_set_size(o, strtoull(argv[3], NULL, 0));
		if (argc > 4)
			pool_region_opts_set_placement(o, argv[4]);
		if (argc > 5)
			pool_region_opts_set_class(o, argv[5]);
		if (argc > 6)
			pool_region_opts_set_stripe(o, strtoull(argv[6], NULL, 0));
		pool_region_opts_set_mode(o, 0644);
		rc = pool_region_create(pool, name, o, cmd[0] == 'a' ? POOL_REGION_ANONYMOUS : 0,
					&r);
		pool_region_opts_free(o);
		if (rc < 0) {
			status = fail("create", rc);
			goto out;
		}
		printf("created %s: %" PRIu64 " bytes at gva 0x%" PRIx64 "\n", name,
		       pool_region_size(r), pool_region_gva(r));
		fflush(stdout);
		if (cmd[0] == 'a')
			for (;;)
				pause();
		goto out;
	}
	if (strcmp(cmd, "stat") == 0) {
		struct pool_region_info *info;

		rc = pool_region_stat(pool, name, &info);
		if (rc < 0) {
			status = fail("stat", rc);
			goto out;
		}
		printf("stat %s: size %" PRIu64 " class %s placement %s mode %03o uid %u gid %u "
		       "leases %u nodes %u\n",
		       name, pool_region_info_size(info), pool_region_info_class(info),
		       pool_region_info_placement(info), pool_region_info_mode(info),
		       pool_region_info_uid(info), pool_region_info_gid(info),
		       pool_region_info_leases(info), pool_region_info_nodes(info));
		pool_region_info_free(info);
		goto out;
	}
	if (strcmp(cmd, "destroy") == 0) {
		rc = pool_region_destroy(pool, name);
		if (rc < 0)
			status = fail("destroy", rc);
		goto out;
	}
	rc = pool_region_open(
	    pool, name,
	    strcmp(cmd, "write") == 0 || strcmp(cmd, "count") == 0 ? POOL_REGION_WRITE : 0, &r);
	if (rc < 0) {
		status = fail("open region", rc);
		goto out;
	}
	size = pool_region_size(r);
	if (getenv("POOL_IO_BUF") != NULL && strcmp(getenv("POOL_IO_BUF"), "1") == 0) {
		void *pb;

		rc = pool_buf_alloc(pool, CHUNK, &pb);
		if (rc < 0) {
			status = fail("pool_buf_alloc", rc);
			goto out;
		}
		poolbuf = buf = pb;
	} else {
		buf = malloc(CHUNK);
	}
	want = malloc(CHUNK);
	h = XXH64_createState();
	XXH64_reset(h, 0);
	if (strcmp(cmd, "bounds") == 0) {
		rc = pool_region_read(r, size - 1, buf, 2);
		if (rc != -ERANGE) {
			fprintf(stderr, "pool-io: read past the end gave %d\n", rc);
			status = 1;
			goto out;
		}
		printf("out of range: %s\n", pool_errormsg());
		goto out;
	}
	if (strcmp(cmd, "watch") == 0) {
		time_t end = time(NULL) + (argc > 4 ? atoi(argv[4]) : 5);
		unsigned passes = 0;

		while (time(NULL) < end) {
			for (off = 0; off < size; off += CHUNK) {
				size_t n = size - off < CHUNK ? size - off : CHUNK;

				rc = pool_region_read(r, off, buf, n);
				if (rc < 0) {
					status = fail("read", rc);
					goto out;
				}
				fill(want, n, seed, off);
				if (memcmp(buf, want, n) != 0) {
					fprintf(stderr,
						"pool-io: pass %u: wrong bytes near offset %" PRIu64
						"\n",
						passes, off);
					status = 1;
					goto out;
				}
			}
			passes++;
		}
		printf("watch %s: %u passes, every byte right\n", name, passes);
		goto out;
	}
	if (strcmp(cmd, "count") == 0) {
		uint64_t i, old = 0;

		for (i = 0; i < seed; i++) {
			rc = pool_region_fetch_add(r, 0, 1, &old);
			if (rc < 0) {
				status = fail("fetch-add", rc);
				goto out;
			}
		}
		rc = pool_region_compare_swap(r, 0, old + 1, old + 1, &old);
		if (rc < 0) {
			status = fail("compare-swap", rc);
			goto out;
		}
		printf("counter %s: %" PRIu64 "\n", name, old);
		goto out;
	}
	if (strcmp(cmd, "bread") == 0) {
		struct pool_batch *b;
		uint8_t *all = malloc(size), *exp = malloc(size);

		if (all == NULL || exp == NULL || pool_batch_new(pool, &b) < 0) {
			status = 1;
			goto out;
		}
		for (off = 0; off < size; off += 65536) {
			rc = pool_batch_read(b, r, off, all + off,
					     size - off < 65536 ? size - off : 65536);
			if (rc < 0) {
				status = fail("batch read", rc);
				goto out;
			}
		}
		rc = pool_batch_wait(b);
		if (rc < 0) {
			status = fail("batch wait", rc);
			goto out;
		}
		fill(exp, size, seed, 0);
		if (memcmp(all, exp, size) != 0) {
			fprintf(stderr, "pool-io: batch read wrong bytes\n");
			status = 1;
			goto out;
		}
		XXH64_update(h, all, size);
		printf("bread %s: %" PRIu64 " bytes, xxh64 %016" PRIx64 "\n", name, size,
		       (uint64_t)XXH64_digest(h));
		pool_batch_free(b);
		free(all);
		free(exp);
		goto out;
	}
	if (strcmp(cmd, "map") == 0) {
		void *p;

		rc = pool_region_map(r, &p);
		if (rc < 0) {
			printf("not mappable: %s\n", pool_errormsg());
			status = 3;
			goto out;
		}
		for (off = 0; off < size; off += CHUNK) {
			size_t n = size - off < CHUNK ? size - off : CHUNK;

			fill(want, n, seed, off);
			if (memcmp((uint8_t *)p + off, want, n) != 0) {
				fprintf(stderr,
					"pool-io: mapped bytes differ near offset %" PRIu64 "\n",
					off);
				status = 1;
				goto out;
			}
			XXH64_update(h, (uint8_t *)p + off, n);
		}
		printf("mapped %s: %" PRIu64 " bytes verified, xxh64 %016" PRIx64 "\n", name, size,
		       (uint64_t)XXH64_digest(h));
		goto out;
	}
	for (off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? size - off : CHUNK;

		if (strcmp(cmd, "write") == 0) {
			fill(buf, n, seed, off);
			rc = pool_region_write(r, off, buf, n);
		} else {
			rc = pool_region_read(r, off, buf, n);
			if (strcmp(cmd, "zero") == 0)
				memset(want, 0, n);
			else
				fill(want, n, seed, off);
			if (rc == 0 && memcmp(buf, want, n) != 0) {
				fprintf(stderr, "pool-io: wrong bytes near offset %" PRIu64 "\n",
					off);
				status = 1;
				goto out;
			}
		}
		if (rc < 0) {
			status = fail(cmd, rc);
			goto out;
		}
		XXH64_update(h, buf, n);
	}
	printf("%s %s: %" PRIu64 " bytes, xxh64 %016" PRIx64 "\n", cmd, name, size,
	       (uint64_t)XXH64_digest(h));
out:
	if (poolbuf != NULL)
		pool_buf_free(pool, poolbuf);
	else
		free(buf);
	free(want);
	if (h != NULL)
		XXH64_freeState(h);
	pool_region_close(r);
	pool_close(pool);
	return status;
}
