/*
 * snapshot/fc.h - Firecracker's UFFD handshake: the one message a VMM sends
 * to its page server (a JSON array of guest region mappings, with the
 * userfaultfd passed as SCM_RIGHTS), received, parsed and checked.
 */
#ifndef POOL_SNAPSHOT_FC_H
#define POOL_SNAPSHOT_FC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FC_MSG_MAX 65536  /* bytes of JSON a handshake may carry */
#define FC_REGIONS_MAX 64 /* guest regions in one handshake */
#define FC_ERR_MAX 160	  /* room for an error message */

/* One guest memory region: where the VMM mapped it and where it lives in the image. */
struct fc_region {
	uint64_t base;	    /* base_host_virt_addr, in the VMM's address space */
	uint64_t size;	    /* bytes */
	uint64_t offset;    /* of the region's contents in the memory image */
	uint64_t page_size; /* bytes: page_size, else page_size_kib (also bytes), else 4096 */
};

struct fc_mappings {
	unsigned n;
	uint64_t page_size; /* the same for every region */
	struct fc_region r[FC_REGIONS_MAX];
};

/*
 * A handshake being received on a connected unix stream socket. Owns the
 * userfaultfd once it has arrived (uffd, else -1) until the caller takes it.
 */
struct fc_handshake {
	size_t len;
	int uffd;
	pid_t peer_pid; /* SO_PEERCRED at connect time, 0 when unknown */
	int peer_pidfd; /* SO_PEERPIDFD: that process, -1 when unknown; owned until taken */
	char buf[FC_MSG_MAX + 1];
};

/*
 * Parse a handshake message: 0, or -EINVAL / -E2BIG / -EMSGSIZE with a
 * message in err. Checks the syntax, the integer ranges, page alignment,
 * overflow and overlap; not the image (fc_validate() does).
 */
int fc_parse(const char *msg, size_t len, struct fc_mappings *ret, char *err, size_t errlen);
/* Check that the regions tile an image of image_size bytes: 0 or -EINVAL with err. */
int fc_validate(const struct fc_mappings *m, uint64_t image_size, char *err, size_t errlen);

void fc_handshake_init(struct fc_handshake *h);
/*
 * Read what sock has now (it may be non-blocking). 0: the message is
 * complete and parsed into ret_map, with h->uffd set; -EAGAIN: more to
 * come; any other -errno: the handshake failed, err says why.
 */
int fc_handshake_recv(struct fc_handshake *h, int sock, struct fc_mappings *ret_map, char *err,
		      size_t errlen);
/* Close what the handshake still owns (the userfaultfd and the pidfd, unless taken). */
void fc_handshake_clear(struct fc_handshake *h);
/*
 * The whole handshake on a connected socket, waiting at most timeout_ms:
 * 0 with *ret_uffd owned by the caller, or -errno (-ETIMEDOUT) with err.
 */
int fc_receive(int sock, int timeout_ms, struct fc_mappings *ret_map, int *ret_uffd, pid_t *ret_pid,
	       char *err, size_t errlen);

#endif
