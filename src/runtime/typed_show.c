/*
 * Typed values as text, the way Julia's println shows them (issue 18):
 * numbers, strings, arrays as [1.5, 2.5], several values as a tuple,
 * none as `nothing`.  MessagePack describes itself, so no format is
 * needed.  Used by dw_future_println and by the built-in dwork_println
 * (typed_base.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mpack.h"
#include "runtime/typed_show.h"

#define SHOW_DEPTH 32 /* nesting a value may have */

static void
show_put(struct show_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = 1;
			return;
		}
		b->p = p, b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void show_fmt(struct show_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
show_fmt(struct show_buf *b, const char *fmt, ...)
{
	char t[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t, sizeof t, fmt, ap);
	va_end(ap);
	show_put(b, t, n < 0 ? 0 : (size_t)n);
}

/* The fewest significant digits that read back as v: "15" and its
 * decimal exponent for 1.5. */
static int
show_digits(double v, int bits, char *dig, size_t dlen)
{
	char t[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(t, sizeof t, "%.*e", p - 1, v);
		if (bits == 32 ? strtof(t, NULL) == (float)v
		               : strtod(t, NULL) == v)
			break;
	}
	char *e = strchr(t, 'e');
	size_t k = 0;
	for (char *c = t; c < e && k + 1 < dlen; c++)
		if (*c >= '0' && *c <= '9')
			dig[k++] = *c;
	while (k > 1 && dig[k - 1] == '0')
		k--;
	dig[k] = 0;
	return atoi(e + 1);
}

/* Julia's forms: 1.5, 2.0, 0.0001, 1.0e6, 1.5e-7 (1.5f0 for Float32). */
static void
show_float(struct show_buf *b, double v, int bits)
{
	const char *sfx = bits == 32 ? "32" : "";
	if (isnan(v) || isinf(v)) {
		show_fmt(b, "%s%s%s",
		         isnan(v) ? ""
		         : v < 0  ? "-"
		                  : "",
		         isnan(v) ? "NaN" : "Inf", sfx);
		return;
	}
	char dig[24];
	int e = show_digits(fabs(v), bits, dig, sizeof dig), n = strlen(dig);
	if (signbit(v))
		show_put(b, "-", 1);
	if (v == 0)
		e = 0;
	if (e <= -5 || e >= 6) { /* d.ddde±x */
		show_fmt(b, "%c.%s%s%d", dig[0], n > 1 ? dig + 1 : "0",
		         bits == 32 ? "f" : "e", e);
		return;
	}
	if (e < 0)
		show_fmt(b, "0.%.*s%s", -e - 1, "00000", dig);
	else if (n <= e + 1)
		show_fmt(b, "%s%.*s.0", dig, e + 1 - n, "000000");
	else
		show_fmt(b, "%.*s.%s", e + 1, dig, dig + e + 1);
	if (bits == 32)
		show_put(b, "f0", 2);
}

static void
show_str(struct show_buf *b, const unsigned char *s, size_t n, int quoted)
{
	if (!quoted) {
		show_put(b, (const char *)s, n);
		return;
	}
	show_put(b, "\"", 1);
	for (size_t k = 0; k < n; k++) {
		unsigned char c = s[k];
		if (c == '"' || c == '\\')
			show_fmt(b, "\\%c", c);
		else if (c == '\n')
			show_put(b, "\\n", 2);
		else if (c == '\t')
			show_put(b, "\\t", 2);
		else if (c < 0x20 || c == 0x7f)
			show_fmt(b, "\\x%02x", c);
		else
			show_put(b, (const char *)&c, 1);
	}
	show_put(b, "\"", 1);
}

static int show_value(struct show_buf *b, struct mp_r *r, int depth,
                      int quoted);

/* n values from r, separated by ", " (and " => " inside a map). */
static int
show_seq(struct show_buf *b, struct mp_r *r, uint64_t n, int depth, int map)
{
	if (n > r->len - r->pos) /* each takes a byte at least */
		return -1;
	for (uint64_t k = 0; k < n; k++) {
		if (k)
			show_put(b, map && k % 2 ? " => " : ", ",
			         map && k % 2 ? 4 : 2);
		if (show_value(b, r, depth - 1, 1) < 0)
			return -1;
	}
	return 0;
}

static int
show_value(struct show_buf *b, struct mp_r *r, int depth, int quoted)
{
	struct mp_obj o;
	if (depth <= 0 || mp_next(r, &o) < 0)
		return -1;
	switch (o.kind) {
	case MP_NIL:
		return show_put(b, "nothing", 7), 0;
	case MP_BOOL:
		return show_put(b, o.i ? "true" : "false", o.i ? 4 : 5), 0;
	case MP_INT:
		return show_fmt(b, "%lld", (long long)o.i), 0;
	case MP_UINT:
		return show_fmt(b, "%llu", (unsigned long long)o.u), 0;
	case MP_FLOAT:
		return show_float(b, o.f, o.fbits), 0;
	case MP_STR:
		return show_str(b, o.data, o.n, quoted), 0;
	case MP_BIN:
		show_put(b, "UInt8[", 6);
		for (uint32_t k = 0; k < o.n; k++)
			show_fmt(b, "%s0x%02x", k ? ", " : "", o.data[k]);
		return show_put(b, "]", 1), 0;
	case MP_EXT:
		return show_fmt(b, "%s",
		                o.ext == 1   ? "Future"
		                : o.ext == 2 ? "RemoteChannel"
		                             : "ext"),
		       0;
	}
	int map = o.kind == MP_MAP;
	show_put(b, map ? "Dict(" : "[", map ? 5 : 1);
	if (show_seq(b, r, map ? 2 * (uint64_t)o.n : o.n, depth, map) < 0)
		return -1;
	return show_put(b, map ? ")" : "]", 1), 0;
}

int
show_typed(struct show_buf *b, const void *buf, size_t len, int args)
{
	struct mp_r r = {buf, buf ? len : 0, 0};
	struct mp_obj o;
	if (mp_next(&r, &o) < 0 || o.kind != MP_ARRAY)
		return -1;
	if (!args && o.n == 0)
		show_put(b, "nothing", 7);
	if (!args && o.n > 1) { /* a result of several values: a tuple */
		show_put(b, "(", 1);
		if (show_seq(b, &r, o.n, SHOW_DEPTH, 0) < 0)
			return -1;
		show_put(b, ")", 1);
	} else {
		for (uint32_t k = 0; k < o.n; k++) /* println(a, b): a then b */
			if (show_value(b, &r, SHOW_DEPTH, 0) < 0)
				return -1;
	}
	show_put(b, "\n", 1);
	return r.pos == r.len && !b->err ? 0 : -1;
}
