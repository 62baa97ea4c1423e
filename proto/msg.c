/* proto/msg.c - the table of message types and their protobuf-c descriptors. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "proto/wire.h"

static const struct {
	const char *name;
	const ProtobufCMessageDescriptor *desc;
} wire_types[WIRE_TYPE_MAX] = {
    [WIRE_HELLO] = {"hello", &pool__hello__descriptor},
    [WIRE_HELLO_REPLY] = {"hello-reply", &pool__hello_reply__descriptor},
    [WIRE_ERROR] = {"error", &pool__error__descriptor},
    [WIRE_OK] = {"ok", &pool__ok__descriptor},
    [WIRE_STATUS] = {"status", &pool__status_request__descriptor},
    [WIRE_STATUS_REPLY] = {"status-reply", &pool__status_reply__descriptor},
    [WIRE_CONFIG_SHOW] = {"config-show", &pool__config_show_request__descriptor},
    [WIRE_CONFIG_SHOW_REPLY] = {"config-show-reply", &pool__config_show_reply__descriptor},
    [WIRE_RELOAD] = {"reload", &pool__reload_request__descriptor},
    [WIRE_REGISTER] = {"register", &pool__register__descriptor},
    [WIRE_REGISTER_REPLY] = {"register-reply", &pool__register_reply__descriptor},
    [WIRE_HEARTBEAT] = {"heartbeat", &pool__heartbeat__descriptor},
    [WIRE_MEMBER_EVENT] = {"member-event", &pool__member_event__descriptor},
    [WIRE_NODES] = {"nodes", &pool__nodes_request__descriptor},
    [WIRE_NODES_REPLY] = {"nodes-reply", &pool__nodes_reply__descriptor},
    [WIRE_PROBE] = {"probe", &pool__probe_request__descriptor},
    [WIRE_PROBE_REPORT] = {"probe-report", &pool__probe_report__descriptor},
    [WIRE_FABRIC] = {"fabric", &pool__fabric_request__descriptor},
    [WIRE_FABRIC_REPLY] = {"fabric-reply", &pool__fabric_reply__descriptor},
    [WIRE_FORWARD] = {"forward", &pool__forward__descriptor},
    [WIRE_REGION_CREATE] = {"region-create", &pool__region_create__descriptor},
    [WIRE_REGION_OPEN] = {"region-open", &pool__region_name__descriptor},
    [WIRE_REGION_STAT] = {"region-stat", &pool__region_name__descriptor},
    [WIRE_REGION_DESTROY] = {"region-destroy", &pool__region_name__descriptor},
    [WIRE_REGION_REPLY] = {"region-reply", &pool__region_reply__descriptor},
    [WIRE_REGION_LIST] = {"region-list", &pool__region_list_request__descriptor},
    [WIRE_REGION_LIST_REPLY] = {"region-list-reply", &pool__region_list__descriptor},
    [WIRE_ARENA_FD] = {"arena-fd", &pool__arena_fd__descriptor},
    [WIRE_SCRUB] = {"scrub", &pool__scrub__descriptor},
    [WIRE_REGION_CLOSE] = {"region-close", &pool__region_name__descriptor},
    [WIRE_SESSION_END] = {"session-end", &pool__session_end__descriptor},
    [WIRE_REGION_NOTICE] = {"region-notice", &pool__region_notice__descriptor},
    [WIRE_LEND] = {"lend", &pool__lend_request__descriptor},
    [WIRE_ARENA_LIMIT] = {"arena-limit", &pool__arena_limit__descriptor},
    [WIRE_LEDGER] = {"ledger", &pool__ledger_request__descriptor},
    [WIRE_LEDGER_REPLY] = {"ledger-reply", &pool__ledger__descriptor},
    [WIRE_HOLD] = {"hold", &pool__holdings__descriptor},
    [WIRE_HOLDINGS] = {"holdings", &pool__holdings_request__descriptor},
    [WIRE_HOLDINGS_REPLY] = {"holdings-reply", &pool__holdings__descriptor},
    [WIRE_HOLDINGS_ACK] = {"holdings-ack", &pool__holdings_ack__descriptor},
    [WIRE_KV_HANDOVER] = {"kv-handover", &pool__kv_handover_request__descriptor},
    [WIRE_KV_HANDOVER_REPLY] = {"kv-handover-reply", &pool__kv_handover_reply__descriptor},
    [WIRE_KV_BACKUP] = {"kv-backup", &pool__kv_backup__descriptor},
    [WIRE_RESP_COMMAND] = {"resp-command", &pool__resp_command__descriptor},
    [WIRE_RESP_REPLY] = {"resp-reply", &pool__resp_reply__descriptor},
    [WIRE_KV_DEMAND] = {"kv-demand", &pool__kv_demand__descriptor},
    [WIRE_KV_DEMAND_REPLY] = {"kv-demand-reply", &pool__kv_demand_reply__descriptor},
    [WIRE_KV_PART] = {"kv-part", &pool__kv_part__descriptor},
    [WIRE_KV_NS] = {"kv-ns", &pool__kv_ns_request__descriptor},
    [WIRE_KV_NS_REPLY] = {"kv-ns-reply", &pool__kv_ns_reply__descriptor},
    [WIRE_KV] = {"kv", &pool__kv_request__descriptor},
    [WIRE_KV_REPLY] = {"kv-reply", &pool__kv_reply__descriptor},
    [WIRE_COPY] = {"copy", &pool__copy__descriptor},
    [WIRE_VEC] = {"vec", &pool__vec_request__descriptor},
    [WIRE_VEC_REPLY] = {"vec-reply", &pool__vec_reply__descriptor},
    [WIRE_EVENTS] = {"events", &pool__events_request__descriptor},
    [WIRE_EVENTS_REPLY] = {"events-reply", &pool__events_reply__descriptor},
    [WIRE_SNAP_COPY] = {"snap-copy", &pool__snap_copy__descriptor},
    [WIRE_SNAP_COPY_REPLY] = {"snap-copy-reply", &pool__snap_copy_reply__descriptor},
    [WIRE_SNAP_PLACE] = {"snap-place", &pool__snap_place__descriptor},
    [WIRE_SNAP_PLACE_REPLY] = {"snap-place-reply", &pool__snap_place_reply__descriptor},
    [WIRE_KV_NS_DEFS] = {"kv-ns-defs", &pool__kv_ns_reply__descriptor},
    [WIRE_CLIENT_STATS] = {"client-stats", &pool__client_stats__descriptor},
    [WIRE_XFER_WINDOW] = {"xfer-window", &pool__xfer_window__descriptor},
    [WIRE_XFER_WINDOW_REPLY] = {"xfer-window-reply", &pool__xfer_window_reply__descriptor},
    [WIRE_XFER] = {"xfer", &pool__xfer__descriptor},
    [WIRE_XFER_REPLY] = {"xfer-reply", &pool__xfer_reply__descriptor},
    [WIRE_REGION_FD] = {"region-fd", &pool__region_fd__descriptor},
    [WIRE_REGION_KEEP] = {"region-keep", &pool__region_name__descriptor},
    [WIRE_MEMBER_EVENTS] = {"member-events", &pool__member_events__descriptor},
    [WIRE_REGION_FD_REPLY] = {"region-fd-reply", &pool__region_fd_reply__descriptor},
};

/* The descriptor of a message type, or NULL for an unknown type. */
const ProtobufCMessageDescriptor *wire_type_descriptor(uint16_t type)
{
	return type < WIRE_TYPE_MAX ? wire_types[type].desc : NULL;
}

/* A short name for a message type, for logs. */
const char *wire_type_name(uint16_t type)
{
	if (type < WIRE_TYPE_MAX && wire_types[type].name != NULL)
		return wire_types[type].name;
	return "unknown";
}

/*
 * Whether every enum field of a message, and of the messages in it, holds a
 * value its enum names. protobuf-c keeps any number it reads in an enum field
 * (proto2 leaves unknown values to the receiver): an operation or a state no
 * handler knows is refused here, with the rest of a malformed message, so
 * that past the unpacking an enum field is always one of its values. And
 * no field numbered 0: protobuf-c keeps one whose tag came in more bytes
 * than it needs as an unknown field, which packs into a message it then
 * refuses (protobuf forbids the number).
 */
static bool wire_enums_known(const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	unsigned i;

	for (i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return false;

	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *at = (const char *)msg + f->offset;
		size_t k, n = 1;

		if (f->type != PROTOBUF_C_TYPE_ENUM && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)((const char *)msg + f->quantifier_offset);
			at = *(const char *const *)at;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   f->type == PROTOBUF_C_TYPE_ENUM) {
			n = *(const protobuf_c_boolean *)((const char *)msg + f->quantifier_offset);
		}
		for (k = 0; k < n; k++) {
			const ProtobufCMessage *sub;

			if (f->type == PROTOBUF_C_TYPE_ENUM) {
				if (protobuf_c_enum_descriptor_get_value(
					f->descriptor, ((const int *)at)[k]) == NULL)
					return false;
				continue;
			}
			sub = ((const ProtobufCMessage *const *)at)[k];
			if (sub != NULL && !wire_enums_known(sub))
				return false;
		}
	}
	return true;
}

/*
 * The name of an enum value for messages and logs: the part of its name after
 * its enum's own (KvOp's KV_OP_LOOKUP is "lookup"), in lower case; a number
 * the enum does not name is "#N".
 */
const char *wire_enum_name(const ProtobufCEnumDescriptor *d, int value, char *buf, size_t len)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(d, value);
	const char *tail, *e;
	size_t i = 0;

	if (len == 0)
		return "";
	if (v == NULL) {
		snprintf(buf, len, "#%d", value);
		return buf;
	}
	/* Skip the enum's name as it is written in the values: KvOp -> KV_OP_. */
	for (tail = v->name, e = d->short_name; *e != '\0' && *tail != '\0'; e++, tail++) {
		if (e != d->short_name && isupper((unsigned char)*e) && *tail == '_')
			tail++;
		if (toupper((unsigned char)*e) != *tail)
			break;
	}
	if (*e != '\0' || *tail != '_')
		tail = v->name; /* a value not named after its enum: all of it */
	else
		tail++;
	while (tail[i] != '\0' && i + 1 < len) {
		buf[i] = (char)tolower((unsigned char)tail[i]);
		i++;
	}
	buf[i] = '\0';
	return buf;
}

/* Unpack a payload of the given type; -EBADMSG if it is not a valid message. */
int wire_msg_unpack(uint16_t type, const uint8_t *payload, size_t len, ProtobufCMessage **ret_msg)
{
	const ProtobufCMessageDescriptor *desc = wire_type_descriptor(type);
	ProtobufCMessage *msg;

	if (desc == NULL)
		return -ENOMSG;
	msg = protobuf_c_message_unpack(desc, NULL, len, payload);
	if (msg == NULL)
		return -EBADMSG;
	if (!wire_enums_known(msg)) {
		protobuf_c_message_free_unpacked(msg, NULL);
		return -EBADMSG;
	}
	*ret_msg = msg;
	return 0;
}

/* Free a message returned by wire_msg_unpack(); NULL is a no-op. */
void wire_msg_free(ProtobufCMessage *msg)
{
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
}

/* Bytes a message of len bytes packed takes as an element of a repeated field: tag, length, it. */
size_t wire_elem_len(size_t len)
{
	size_t n = 1;

	while (n < 10 && len >> (7 * n) != 0)
		n++;
	return 1 + n + len;
}

/*
 * How many of the n messages at msgs (each a ProtobufCMessage) fit in max
 * bytes as the elements of a repeated field: at least one when n > 0, so
 * that a list cut into chunks of max bytes always moves on.
 */
size_t wire_fit(void *const *msgs, size_t n, size_t max)
{
	size_t i, bytes = 0;

	for (i = 0; i < n; i++) {
		bytes += wire_elem_len(protobuf_c_message_get_packed_size(msgs[i]));
		if (i > 0 && bytes > max)
			break;
	}
	return i;
}
