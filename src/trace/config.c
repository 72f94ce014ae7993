/* Tracer settings: defaults and the DWT_* environment variables. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dwork/trace.h>

#include "trace/tracer.h"

DW_API void
dwt_config_defaults(dwt_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->size = sizeof *cfg;
	cfg->enabled = 1;
	cfg->segment_size = DWT_SEGMENT_DEFAULT;
	cfg->clock = DWT_CLOCK_AUTO;
}

int
cfg_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = 0, 0;
	}
	return -1;
}

/* Parses "123", "64K", "8MB", "1GiB" (binary multiples) without overflow. */
static int
cfg_size(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 0:
		break;
	default:
		return -1;
	}
	if (shift) { /* K, KB, KiB */
		end++;
		if (*end == 'i')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int
cfg_program_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63 || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return 0;
	return 1;
}

static int
cfg_fail(char *err, size_t len, const char *var, const char *val,
         const char *accepts)
{
	if (err && len)
		snprintf(err, len, "%s='%s' is not valid: expected %s", var,
		         val, accepts);
	return DW_EINVAL;
}

static int
cfg_segment(dwt_config *c, const char *v, char *err, size_t len)
{
	uint64_t s;
	if (cfg_size(v, &s) || s < DWT_SEGMENT_MIN || s > DWT_SEGMENT_MAX ||
	    s % 4096)
		return cfg_fail(err, len, "DWT_SEGMENT_SIZE", v,
		                "a size from 64K to 1G, a multiple of 4K "
		                "(digits with an optional K, M or G suffix)");
	c->segment_size = s;
	return DW_OK;
}

static int
cfg_clock(dwt_config *c, const char *v, char *err, size_t len)
{
	if (strcasecmp(v, "auto") == 0)
		c->clock = DWT_CLOCK_AUTO;
	else if (strcasecmp(v, "tsc") == 0)
		c->clock = DWT_CLOCK_TSC;
	else if (strcasecmp(v, "monotonic-raw") == 0)
		c->clock = DWT_CLOCK_MONOTONIC_RAW;
	else
		return cfg_fail(err, len, "DWT_CLOCK", v,
		                "auto, tsc or monotonic-raw");
	return DW_OK;
}

static int
cfg_apply(dwt_config *c, const char *var, const char *v, char *err, size_t len)
{
	if (strcmp(var, "DWT_ENABLED") == 0)
		return cfg_bool(v, &c->enabled)
		           ? cfg_fail(err, len, var, v,
		                      "1, 0, yes, no, true, false, on or off")
		           : DW_OK;
	if (strcmp(var, "DWT_DIR") == 0) {
		if (!*v || strlen(v) > 3800)
			return cfg_fail(err, len, var, v,
			                "a directory path (1 to 3800 bytes)");
		c->dir = v;
		return DW_OK;
	}
	if (strcmp(var, "DWT_PROGRAM") == 0) {
		if (!cfg_program_ok(v))
			return cfg_fail(err, len, var, v,
			                "1 to 63 characters of A-Z a-z 0-9 . _ "
			                "- not starting with '.'");
		c->program = v;
		return DW_OK;
	}
	if (strcmp(var, "DWT_SEGMENT_SIZE") == 0)
		return cfg_segment(c, v, err, len);
	if (strcmp(var, "DWT_SIZE_CAP") == 0)
		return cfg_size(v, &c->size_cap)
		           ? cfg_fail(err, len, var, v,
		                      "a size in bytes, 0 for no cap "
		                      "(digits with an optional K, M or G "
		                      "suffix)")
		           : DW_OK;
	if (strcmp(var, "DWT_MODE") == 0) {
		if (strcasecmp(v, "linear") && strcasecmp(v, "circular"))
			return cfg_fail(err, len, var, v, "linear or circular");
		c->circular = strcasecmp(v, "circular") == 0;
		return DW_OK;
	}
	if (strcmp(var, "DWT_INSTRUMENT_INCLUDE") == 0) {
		c->instrument_include = v;
		return DW_OK;
	}
	if (strcmp(var, "DWT_INSTRUMENT_EXCLUDE") == 0) {
		c->instrument_exclude = v;
		return DW_OK;
	}
	if (strcmp(var, "DWT_INSTRUMENT_MIN_NS") == 0) {
		uint64_t ns;
		if (cfg_size(v, &ns) || ns > 60000000000ull)
			return cfg_fail(err, len, var, v,
			                "a duration in nanoseconds from 0 to "
			                "60000000000");
		c->instrument_min_ns = ns;
		return DW_OK;
	}
	return cfg_clock(c, v, err, len);
}

DW_API int
dwt_config_from_env(dwt_config *cfg, char *err, size_t errlen)
{
	static const char *const vars[] = {
	    "DWT_ENABLED",
	    "DWT_DIR",
	    "DWT_PROGRAM",
	    "DWT_SEGMENT_SIZE",
	    "DWT_SIZE_CAP",
	    "DWT_MODE",
	    "DWT_CLOCK",
	    "DWT_INSTRUMENT_INCLUDE",
	    "DWT_INSTRUMENT_EXCLUDE",
	    "DWT_INSTRUMENT_MIN_NS",
	};
	dwt_config c = *cfg;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (!v)
			continue;
		int e = cfg_apply(&c, vars[i], v, err, errlen);
		if (e != DW_OK)
			return e;
	}
	*cfg = c;
	return DW_OK;
}
