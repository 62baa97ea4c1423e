/*
 * pool_contract.h - what poold and its clients agree on besides the wire's
 * messages: the error codes every side returns (a negative errno, or one of
 * the POOL_E* codes here) and the limits both sides check. libpool.h, the
 * public API, includes it and it is installed beside it; proto/, common/
 * and daemon/ include it rather than libpool.h, so the library and the
 * daemon depend on the protocol, never on each other.
 */
#ifndef POOL_CONTRACT_H
#define POOL_CONTRACT_H

/* Library-only error codes; everything else is a negative errno. */
#define POOL_E_FIRST (-100000)
#define POOL_EVERSION (-100001)	 /* peer speaks another protocol version */
#define POOL_EPROTOCOL (-100002) /* peer sent a malformed or unexpected message */
#define POOL_ECOORD (-100003)	 /* coordinator unavailable */
#define POOL_ELOST (-100004)	 /* the data's lender is gone */
#define POOL_E_LAST (-100004)

#define POOL_REGION_NAME_MAX 63		/* bytes of a region's (or KV namespace's) name */
#define POOL_KV_KEY_MAX 256		/* bytes of a KV key */
#define POOL_KV_VALUE_MAX (64u << 20)	/* bytes of a KV value */
#define POOL_KV_INLINE_MAX (1u << 20)	/* bytes a KvRequest get or put moves in the loop */
#define POOL_VEC_DIM_MAX 4096		/* a vector's dimensions */
#define POOL_VEC_K_MAX 1024		/* nearest neighbours one search returns */
#define POOL_SNAP_NAME_MAX 58		/* bytes of a snapshot name */
#define POOL_SNAP_STATE_MAX (64u << 20) /* bytes of a snapshot's state blob */

#endif
