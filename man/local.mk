# man/: the manual pages, installed with `make install` and shipped in the
# tarball. tests/integration/man.sh lints them and checks that poold.conf(5)
# lists exactly the options of common/options.c.
#
# Pages that document several functions list all of them in NAME, which
# man-db indexes, instead of .so alias pages (mandoc -T lint warns about .so).
dist_man_MANS += \
	man/poold.8 \
	man/poolctl.8 \
	man/poold.conf.5 \
	man/libpool.3 \
	man/pool_open.3 \
	man/pool_status.3 \
	man/pool_region_create.3 \
	man/pool_region_read.3 \
	man/pool_batch_new.3 \
	man/pool_strerror.3 \
	man/pool_kv_open.3 \
	man/pool_kv_put.3 \
	man/pool_kv_acquire.3 \
	man/pool-failures.7 \
	man/pool_vec_create.3 \
	man/pool_snap_put.3 \
	man/pool_snap_restore_lazy.3 \
	man/pool_snap_save.3 \
	man/pool-protocol.7 \
	man/pool-security.7 \
	man/pool_buf_alloc.3 \
	man/pool-python.3
