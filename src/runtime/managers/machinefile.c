/*
 * Host specs and machine files: `[count*][user@]host[:port]
 * [bind_addr[:port]]`, as `julia --machine-file` reads them.  Pure
 * parsing, no I/O except mf_read, so that the parser can be fuzzed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/managers/mgr.h"

static int
mf_fail(char *why, size_t whylen, const char *fmt, const char *s, size_t n)
{
	if (why && whylen) {
		char tok[80];
		snprintf(tok, sizeof tok, "%.*s%s", n > 60 ? 60 : (int)n, s,
		         n > 60 ? "..." : "");
		snprintf(why, whylen, fmt, tok);
	}
	return -1;
}

static int
mf_name_char(int c)
{
	return isalnum(c) || c == '.' || c == '-' || c == '_';
}

static int
mf_v6_char(int c)
{
	return isxdigit(c) || c == ':' || c == '.' || c == '%' || isalnum(c);
}

/* A decimal number in [lo, hi]; -1 when it is not one. */
static long
mf_number(const char *s, size_t n, long lo, long hi)
{
	if (n == 0 || n > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= lo && v <= hi ? v : -1;
}

/*
 * Splits "host[:port]" or "[v6][:port]": copies the host (without
 * brackets) into out and returns the port text through *ps and *pn (n 0 when
 * none).  Returns 0 or -1 with why.
 */
static int
mf_host_port(const char *s, size_t n, char *out, size_t outlen, const char **ps,
             size_t *pn, const char *what, char *why, size_t whylen)
{
	const char *h = s, *colon = NULL;
	size_t hn;
	*pn = 0;
	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return mf_fail(why, whylen, "'%s': missing ']'", s, n);
		h = s + 1;
		hn = (size_t)(close - h);
		size_t rest = n - (size_t)(close + 1 - s);
		if (rest && close[1] != ':')
			return mf_fail(why, whylen,
			               "'%s': expected ':port' after ']'", s,
			               n);
		if (rest)
			colon = close + 1;
		for (size_t i = 0; i < hn; i++)
			if (!mf_v6_char((unsigned char)h[i]))
				return mf_fail(why, whylen,
				               "'%s': not an IPv6 address", s,
				               n);
		if (hn == 0 || !memchr(h, ':', hn))
			return mf_fail(why, whylen,
			               "'%s': brackets hold an IPv6 address", s,
			               n);
	} else {
		colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
		if (colon && memchr(colon + 1, ':', n - hn - 1))
			return mf_fail(why, whylen,
			               "'%s': an IPv6 address goes in "
			               "brackets",
			               s, n);
		if (hn == 0) {
			char msg[64];
			snprintf(msg, sizeof msg, "'%%s': no %s", what);
			return mf_fail(why, whylen, msg, s, n);
		}
		if (h[0] == '-')
			return mf_fail(why, whylen,
			               "'%s': a host name cannot start with "
			               "'-'",
			               s, n);
		for (size_t i = 0; i < hn; i++)
			if (!mf_name_char((unsigned char)h[i]))
				return mf_fail(why, whylen,
				               "'%s': bad character in the "
				               "host name",
				               s, n);
	}
	if (hn >= outlen)
		return mf_fail(why, whylen, "'%s': host name too long", s, n);
	memcpy(out, h, hn);
	out[hn] = 0;
	if (colon) {
		*ps = colon + 1;
		*pn = n - (size_t)(colon + 1 - s);
		if (*pn == 0)
			return mf_fail(why, whylen, "'%s': empty port", s, n);
	}
	return 0;
}

int
mf_parse_dest(const char *s, size_t n, struct mf_host *h, char *why,
              size_t whylen)
{
	const char *at = memchr(s, '@', n);
	h->user[0] = 0;
	h->port = 0;
	if (at) {
		size_t un = (size_t)(at - s);
		if (un == 0 || un >= sizeof h->user || s[0] == '-')
			return mf_fail(why, whylen, "'%s': bad user name", s,
			               n);
		for (size_t i = 0; i < un; i++)
			if (!mf_name_char((unsigned char)s[i]))
				return mf_fail(why, whylen,
				               "'%s': bad character in the "
				               "user name",
				               s, n);
		memcpy(h->user, s, un);
		h->user[un] = 0;
		n -= un + 1;
		s = at + 1;
	}
	const char *ps;
	size_t pn;
	if (mf_host_port(s, n, h->host, sizeof h->host, &ps, &pn, "host", why,
	                 whylen) < 0)
		return -1;
	if (pn && (h->port = (int)mf_number(ps, pn, 1, 65535)) < 0)
		return mf_fail(why, whylen,
		               "'%s': the port is not a number from 1 to "
		               "65535",
		               s, n);
	return 0;
}

int
mf_parse_bind(const char *s, size_t n, struct mf_host *h, char *why,
              size_t whylen)
{
	const char *ps;
	size_t pn;
	h->bind_port = 0;
	if (mf_host_port(s, n, h->bind, sizeof h->bind, &ps, &pn,
	                 "bind address", why, whylen) < 0)
		return -1;
	if (pn && (h->bind_port = (int)mf_number(ps, pn, 1, 65535)) < 0)
		return mf_fail(why, whylen,
		               "'%s': the bind port is not a number from 1 "
		               "to 65535",
		               s, n);
	return 0;
}

/* The next blank-separated token of s[*i..n); 0 when none is left or a
 * comment starts. */
static size_t
mf_token(const char *s, size_t n, size_t *i, const char **tok)
{
	while (*i < n && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r'))
		(*i)++;
	if (*i >= n || s[*i] == '#')
		return 0;
	*tok = s + *i;
	size_t start = *i;
	while (*i < n && s[*i] != ' ' && s[*i] != '\t' && s[*i] != '\r')
		(*i)++;
	return *i - start;
}

static int
mf_count(const char *s, size_t n, struct mf_host *h, char *why, size_t whylen)
{
	if (n == 4 && !memcmp(s, "auto", 4)) {
		h->count = DW_AUTO;
		return 0;
	}
	long c = mf_number(s, n, 1, MF_COUNT_MAX);
	if (c < 0) {
		char msg[96];
		snprintf(msg, sizeof msg,
		         "'%%s': the count is not a number from 1 to %d or "
		         "'auto'",
		         MF_COUNT_MAX);
		return mf_fail(why, whylen, msg, s, n);
	}
	h->count = (int)c;
	return 0;
}

int
mf_parse_line(const char *s, size_t n, struct mf_host *h, char *why,
              size_t whylen)
{
	size_t i = 0;
	const char *tok = NULL, *extra = NULL;
	memset(h, 0, sizeof *h);
	h->count = 1;
	if (n > MF_LINE_MAX)
		return mf_fail(why, whylen, "line too long (%s bytes max)",
		               "4096", 4);
	for (size_t k = 0; k < n; k++)
		if (((unsigned char)s[k] < 0x20 && s[k] != '\t' &&
		     s[k] != '\r') ||
		    s[k] == 0x7f)
			return mf_fail(why, whylen, "%scontrol character", "",
			               0);
	size_t tn = mf_token(s, n, &i, &tok);
	if (tn == 0)
		return 0;
	const char *star = memchr(tok, '*', tn);
	if (star) {
		if (mf_count(tok, (size_t)(star - tok), h, why, whylen) < 0)
			return -1;
		tn -= (size_t)(star + 1 - tok);
		tok = star + 1;
		if (tn == 0)
			return mf_fail(why, whylen, "%sno host after the count",
			               "", 0);
	}
	if (mf_parse_dest(tok, tn, h, why, whylen) < 0)
		return -1;
	size_t bn = mf_token(s, n, &i, &tok);
	if (bn && mf_parse_bind(tok, bn, h, why, whylen) < 0)
		return -1;
	size_t en = mf_token(s, n, &i, &extra);
	if (en)
		return mf_fail(why, whylen,
		               "'%s': unexpected text after the bind address",
		               extra, en);
	return 1;
}

int
mf_parse(const char *text, size_t len, const char *name, struct mf_host **hosts,
         int *n, char *why, size_t whylen)
{
	struct mf_host *v = NULL, h;
	int cap = 0, count = 0, line = 0;
	char lwhy[200];
	*hosts = NULL;
	*n = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - text - pos) : len - pos;
		line++;
		int r = mf_parse_line(text + pos, ll, &h, lwhy, sizeof lwhy);
		pos += ll + (nl != NULL);
		if (r == 0)
			continue;
		if (r < 0 || count >= MF_HOSTS_MAX) {
			if (r > 0)
				snprintf(lwhy, sizeof lwhy,
				         "more than %d hosts", MF_HOSTS_MAX);
			snprintf(why, whylen, "%s:%d: %s", name, line, lwhy);
			free(v);
			return -1;
		}
		if (count == cap) {
			int nc = cap ? cap * 2 : 8;
			struct mf_host *nv = realloc(v, sizeof *v * (size_t)nc);
			if (!nv) {
				free(v);
				snprintf(why, whylen, "%s: out of memory",
				         name);
				return -1;
			}
			v = nv, cap = nc;
		}
		v[count++] = h;
	}
	if (count == 0) {
		snprintf(why, whylen, "%s: lists no host", name);
		return -1;
	}
	*hosts = v;
	*n = count;
	return 0;
}

int
mf_read(const char *path, struct mf_host **hosts, int *n, char *why,
        size_t whylen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(why, whylen, "cannot open machine file '%s': %s", path,
		         strerror(e));
		return dw_err_from_errno(e);
	}
	char *buf = malloc(MF_FILE_MAX + 1);
	size_t got = buf ? fread(buf, 1, MF_FILE_MAX + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	int r = DW_EFORMAT;
	if (!buf)
		snprintf(why, whylen, "%s: out of memory", path), r = DW_ENOMEM;
	else if (bad)
		snprintf(why, whylen, "cannot read machine file '%s'", path),
		    r = DW_EIO;
	else if (got > MF_FILE_MAX)
		snprintf(why, whylen, "%s: larger than %u bytes", path,
		         MF_FILE_MAX);
	else if (mf_parse(buf, got, path, hosts, n, why, whylen) == 0)
		r = DW_OK;
	free(buf);
	return r;
}
