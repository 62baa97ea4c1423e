/*
 * common/common.h - pieces shared by poold and poolctl: logging, units,
 * error strings and the configuration option table.
 */
#ifndef POOL_COMMON_H
#define POOL_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* log.c */
enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };
void log_init(const char *ident, bool to_stderr, int level);
void log_set_level(int level);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct log_limit {
	uint64_t next_ms; /* when the next line may go out */
	unsigned held;	  /* lines held back since the last */
};
void log_warnx_limited(struct log_limit *l, unsigned interval_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* addr.c */
struct sockaddr_storage;
int addr_parse(const char *s, struct sockaddr_storage *ret_sa, unsigned *ret_len);
int addr_parse_numeric(const char *s, struct sockaddr_storage *ret_sa, unsigned *ret_len);
int addr_host(const char *s, char *host, size_t len);
int addr_check(const char *name, const char *s, char *errbuf, size_t errlen);
bool addr_is_loopback(const char *s);
void addr_format(const void *sa, char *buf, size_t len);

/* units.c */
int units_parse_size(const char *s, uint64_t *ret_bytes);
int units_parse_duration(const char *s, uint64_t *ret_ms);
void units_fmt_size(uint64_t bytes, char *buf, size_t len);
void units_fmt_duration(uint64_t ms, char *buf, size_t len);
uint64_t units_now_ms(void);
uint64_t units_now_us(void);
struct timeval units_timeval(uint64_t ms);
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"
bool name_ok(const char *name, size_t max, bool slash);

/* err.c */
const char *err_str(int code);

/* conf.c: the option table engine */
enum conf_type { CONF_BOOL, CONF_INT, CONF_SIZE, CONF_DURATION, CONF_STRING, CONF_ENUM, CONF_MODE };

#define CONF_MAX_OPTIONS 128
#define CONF_F_RESTART 0x1 /* a change takes effect only after a restart */
#define CONF_F_SECRET 0x2  /* never shown: config show prints whether it is set */

struct conf_option {
	const char *name;
	enum conf_type type;
	size_t offset;	     /* of the value in struct poold_conf */
	int64_t min, max;    /* numeric bounds; for strings, max is the length limit */
	const char *def;     /* default, as it would be written in the file */
	const char *choices; /* CONF_ENUM: "a|b|c", stored as the index */
	unsigned flags;
	const char *help;
};

struct conf_error {
	char file[256];
	int line;
	char msg[256];
};

/*
 * The daemon's configuration. Numbers of every type are int64_t (sizes in
 * bytes, durations in milliseconds, enums as the index of their choice),
 * strings are owned char *. Fields are listed in options.c's table.
 */
struct poold_conf {
	char *runtime_dir;
	char *socket;
	char *pidfile;
	int64_t control_mode;
	char *control_group;
	char *admin_group;
	int64_t max_clients;
	int64_t max_clients_per_uid;
	int64_t max_output_per_uid;
	int64_t max_window_bytes_per_uid;
	int64_t max_xfer_bytes_per_session;
	int64_t max_xfer_bytes_per_uid;
	int64_t max_frame;
	int64_t log_level;
	int64_t node_id;
	int64_t role;
	int64_t lend_size;
	int64_t lend_hugepages;
	char *lend_numa;
	int64_t lend_max;
	int64_t kv_shard_size;
	int64_t reclaim_grace_ms;
	int64_t ledger_interval_ms;
	int64_t watermark;
	char *resp_listen;
	char *metrics_listen;
	int64_t metrics_max_clients;
	int64_t metrics_max_clients_per_uid;
	int64_t metrics_max_clients_per_addr;
	int64_t metrics_timeout_ms;
	char *resp_password;
	int64_t resp_capacity;
	int64_t resp_placement;
	int64_t resp_replicas;
	int64_t snap_capacity;
	int64_t resp_max_clients;
	int64_t resp_max_clients_per_user;
	int64_t resp_max_request;
	int64_t resp_max_output;
	int64_t resp_max_buffers_per_user;
	int64_t resp_max_buffers;
	char *pmem_path;
	int64_t pmem_size;
	int64_t pmem_init;
	int64_t snap_copies;
	int64_t snap_copies_per_uid;
	char *coord_journal;
	int64_t coord_journal_size;
	char *coord_etcd;
	char *coord_etcd_prefix;
	char *coord_etcd_user;
	char *coord_etcd_password_file;
	char *coord_etcd_tls_ca;
	char *coord_etcd_tls_cert;
	char *coord_etcd_tls_key;
	int64_t coord_etcd_lease_ms;
	int64_t coord_etcd_timeout_ms;
	int64_t coord_etcd_rewrite;
	char *coord_advertise;
	int64_t lease_grace_ms;
	int64_t control_write_timeout_ms;
	int64_t quota_bytes;
	int64_t quota_share;
	int64_t quota_regions;
	int64_t max_regions;
	char *node_name;
	char *coordinator;
	char *peer_listen;
	char *peer_secret;
	char *peer_secret_file;
	int64_t peer_tls;
	char *peer_tls_cert;
	char *peer_tls_key;
	char *peer_tls_ca;
	int64_t max_nodes;
	int64_t peer_chunk_size;
	int64_t heartbeat_ms;
	int64_t heartbeat_misses;
	int64_t fabric_transfer;
	char *fabric_address;
	int64_t fabric_send_buffer;
	char *fabric_transports;
	char *fabric_devices;
	char *fabric_ports;
	int64_t fabric_firewall;
	int64_t probe_interval_ms;
	char *secret;	     /* derived: peer.secret, or the contents of peer.secret_file */
	char *etcd_password; /* derived: the contents of coord.etcd_password_file; NULL: none */
	char *resp_users_file;
	char *kv_events_endpoint;
	char *kv_events_replay_endpoint;
	char *kv_events_namespace;
	char *kv_events_topic;
	int64_t kv_events_format;
	int64_t kv_events_block_hash;
	int64_t kv_events_block_size;
	char *kv_events_medium;
	int64_t kv_events_buffer_steps;
	int64_t kv_events_buffer_bytes;
	int64_t kv_events_hwm;
	int64_t kv_events_max_subscribers;
	int64_t kv_events_max_subscribers_per_uid;
	int64_t kv_events_max_subscribers_per_addr;
	struct resp_user *resp_users; /* derived: the users of resp.users */
	size_t resp_nusers;
	bool set[CONF_MAX_OPTIONS]; /* set by the file or the command line */
};

enum conf_role { ROLE_COORDINATOR, ROLE_NODE };
enum conf_kv_events_format { KV_EVENTS_MAP, KV_EVENTS_ARRAY };
enum conf_resp_placement { RESP_PLACE_SPREAD, RESP_PLACE_LOCAL, RESP_PLACE_SHARDED };
enum conf_kv_events_hash { KV_EVENTS_HASH_INT, KV_EVENTS_HASH_BYTES };
enum conf_firewall { FIREWALL_AUTO, FIREWALL_YES, FIREWALL_NO }; /* fabric.firewall */
enum conf_transfer { TRANSFER_CHECKED, TRANSFER_RMA };		 /* fabric.transfer */

/* sslerr.c */
const char *ssl_error_text(void);

/* sha256.c */
#define SHA256_LEN 32
int sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

/* pagekey.c: a snapshot page's key in the store shared across uids; 0 or -EIO. */
#define PAGE_KEY_LEN 16
int page_key_shared(const void *page, size_t len, uint8_t out[PAGE_KEY_LEN]);

/* A user of the RESP endpoint: AUTH NAME PASSWORD acts as uid. */
#define RESP_USERS_MAX 4096
struct resp_user {
	char name[64];
	uint32_t uid;
	bool hashed; /* secret is the SHA-256 of the password, else the password */
	char secret[257];
};

extern const struct conf_option conf_options[];
extern const size_t conf_noptions;

const struct conf_option *conf_find(const char *name);
int conf_port_range(const char *s, unsigned *ret_lo, unsigned *ret_hi);
const char *conf_type_name(enum conf_type type);
int conf_defaults(struct poold_conf **ret_conf);
int conf_parse_file(const char *path, struct poold_conf **ret_conf, struct conf_error *err);
int conf_parse_text(const char *name, const char *text, struct poold_conf **ret_conf,
		    struct conf_error *err);
int conf_load(const char *path, char *const *overrides, size_t noverrides,
	      struct poold_conf **ret_conf, struct conf_error *err);
int conf_set(struct poold_conf *conf, const char *name, const char *value, char *errbuf,
	     size_t errlen);
void conf_format(const struct poold_conf *conf, const struct conf_option *opt, char *buf,
		 size_t len);
bool conf_is_default(const struct poold_conf *conf, const struct conf_option *opt);
int conf_finish(struct poold_conf *conf, struct conf_error *err);
void conf_free(struct poold_conf *conf);
FILE *conf_fopen(const char *path);
int conf_open_file(const char *option, const char *path, bool secret, FILE **ret,
		   struct conf_error *err);
int conf_load_resp_users(struct poold_conf *conf, struct conf_error *err);
int conf_numa_share(const char *spec, int node, uint64_t *ret_bytes, uint64_t *ret_sum);

#endif
