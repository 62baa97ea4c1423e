# cli/: poolctl, a file per family of commands, and the output helpers.
bin_PROGRAMS += cli/poolctl
cli_poolctl_SOURCES = cli/poolctl.h cli/poolctl.c cli/admin.h cli/admin.c cli/out.c cli/listing.c cli/cmd-status.c cli/cmd-version.c \
	cli/cmd-config.c cli/cmd-reload.c cli/cmd-nodes.c cli/cmd-fabric.c \
	cli/cmd-region.c cli/cmd-lend.c cli/cmd-kv.c cli/cmd-vec.c \
	cli/cmd-events.c cli/cmd-top.c cli/cmd-snap.c cli/cmd-snap-serve.c cli/cmd-completion.c
cli_poolctl_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
cli_poolctl_LDADD = libpool/libpool.la proto/libwire.la common/libconf.la common/libcommon.la $(PROTOBUF_C_LIBS)

# Its bash completion, written from its command table by the poolctl just
# built (poolctl completion bash); installed by etc/local.mk's install rule.
bashcompletiondir = $(datadir)/bash-completion/completions
noinst_DATA = cli/poolctl.bash
CLEANFILES += cli/poolctl.bash
cli/poolctl.bash: cli/poolctl$(EXEEXT)
	$(AM_V_GEN)cli/poolctl completion bash >$@
