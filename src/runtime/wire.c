/* Wire protocol encoding and decoding (docs/wire-protocol.md). */
#include <stdio.h>
#include <string.h>

#include "runtime/wire.h"

static int
wire_fail(char *why, size_t len, const char *msg, unsigned long long v)
{
	if (why && len)
		snprintf(why, len, msg, v);
	return -1;
}

void
wire_put_hdr(unsigned char *p, uint8_t type, uint64_t ref, uint32_t payload)
{
	wire_put_u32(p, payload + 12u);
	p[4] = type;
	p[5] = 0;
	wire_put_u16(p + 6, 0);
	wire_put_u64(p + 8, ref);
}

int
wire_parse_hdr(const unsigned char *p, uint32_t max_payload, struct wire_hdr *h,
               char *why, size_t whylen)
{
	uint64_t len = wire_get_u32(p);
	if (len < 12)
		return wire_fail(
		    why, whylen,
		    "frame length %llu is below the 12-byte minimum", len);
	if (len - 12u > (uint64_t)max_payload) {
		if (why && whylen)
			snprintf(why, whylen,
			         "frame payload of %llu bytes exceeds the "
			         "limit of %u bytes",
			         (unsigned long long)(len - 12u), max_payload);
		return -1;
	}
	if (p[4] == 0 || p[4] > WIRE_TYPE_MAX)
		return wire_fail(why, whylen, "unknown frame type %llu", p[4]);
	int flags_ok =
	    p[5] == 0 || (p[4] == WIRE_RESULT &&
	                  (p[5] == WIRE_FLAG_ERROR ||
	                   p[5] == (WIRE_FLAG_ERROR | WIRE_FLAG_CODE)));
	if (!flags_ok || wire_get_u16(p + 6) != 0)
		return wire_fail(why, whylen,
		                 "reserved header bits set (flags %llu)", p[5]);
	h->payload = (uint32_t)(len - 12u);
	h->type = p[4];
	h->flags = p[5];
	h->ref = wire_get_u64(p + 8);
	return 0;
}

void
wire_too_big(char *buf, size_t len, const char *what, uint64_t size,
             uint64_t limit)
{
	snprintf(buf, len,
	         "%s of %llu bytes exceeds the link's limit of %llu bytes "
	         "(DWORK_MAX_PAYLOAD, dw_options.max_payload)",
	         what, (unsigned long long)size, (unsigned long long)limit);
}

size_t
wire_call_prefix(size_t name_len)
{
	return 4 + name_len;
}

void
wire_put_call(unsigned char *p, uint8_t mode, const char *name, size_t name_len)
{
	p[0] = mode;
	p[1] = 0;
	wire_put_u16(p + 2, (uint16_t)name_len);
	memcpy(p + 4, name, name_len);
}

int
wire_parse_call(const unsigned char *p, size_t len, struct wire_call *c,
                char *why, size_t whylen)
{
	if (len < 4)
		return wire_fail(why, whylen, "call of %llu bytes is too short",
		                 len);
	c->mode = p[0];
	if (c->mode < WIRE_MODE_FETCH || c->mode > WIRE_MODE_DO || p[1])
		return wire_fail(why, whylen, "unknown call mode %llu", p[0]);
	c->name_len = wire_get_u16(p + 2);
	if (c->name_len == 0 || c->name_len > WIRE_NAME_MAX ||
	    4u + c->name_len > len)
		return wire_fail(why, whylen,
		                 "call name length %llu is invalid",
		                 c->name_len);
	c->name = (const char *)p + 4;
	c->arg = p + 4 + c->name_len;
	c->arg_len = len - 4 - c->name_len;
	return 0;
}
