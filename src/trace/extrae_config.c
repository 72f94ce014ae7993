/* Extrae's settings: the EXTRAE_* variables and the values of its XML
 * file, mapped onto a dwt_config. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace/extrae_int.h"
#include "trace/tracer.h"

static int
xcfg_fail(const char *origin, const char *val, const char *accepts)
{
	trc_err("%s='%s' is not valid: expected %s", origin, val, accepts);
	return DW_EINVAL;
}

/* A decimal count in [1, max]. */
static int
xcfg_count(const char *s, uint64_t max, uint64_t *out)
{
	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Extrae counts its buffer in records; ours is a segment of bytes. */
static uint64_t
xcfg_segment_bytes(uint64_t records)
{
	if (records > DWT_SEGMENT_MAX / FMT_REC_SIZE)
		return DWT_SEGMENT_MAX;
	uint64_t b = (records * FMT_REC_SIZE + FMT_S_END + 4095) & ~4095ull;
	if (b < DWT_SEGMENT_MIN)
		b = DWT_SEGMENT_MIN;
	return b > DWT_SEGMENT_MAX ? DWT_SEGMENT_MAX : b;
}

static int
xcfg_set_dir(char *dst, int *has, const char *origin, const char *val)
{
	if (!*val || strlen(val) >= 3800)
		return xcfg_fail(origin, val,
		                 "a directory path (1 to 3799 bytes)");
	snprintf(dst, 3800, "%s", val);
	*has = 1;
	return DW_OK;
}

static int
xcfg_set_flag(int *dst, const char *origin, const char *val)
{
	if (cfg_bool(val, dst))
		return xcfg_fail(origin, val,
		                 "1, 0, yes, no, true, false, on or off");
	return DW_OK;
}

static int
xcfg_set_size(struct xcfg *x, enum xcfg_key k, const char *origin,
              const char *val)
{
	uint64_t v;
	if (k == XK_BUFFER) {
		if (xcfg_count(val, UINT64_MAX / FMT_REC_SIZE, &v))
			return xcfg_fail(origin, val,
			                 "a number of events, 1 or more");
		x->cfg.segment_size = xcfg_segment_bytes(v);
		return DW_OK;
	}
	if (xcfg_count(val, UINT64_MAX >> 20, &v))
		return xcfg_fail(origin, val, "a size in megabytes, 1 or more");
	x->cfg.size_cap = v << 20;
	return DW_OK;
}

int
xcfg_set(struct xcfg *x, enum xcfg_key k, const char *origin, const char *val)
{
	switch (k) {
	case XK_ON:
		return xcfg_set_flag(&x->cfg.enabled, origin, val);
	case XK_CIRCULAR:
		return xcfg_set_flag(&x->cfg.circular, origin, val);
	case XK_COUNTERS:
		return xcfg_set_flag(&x->counters, origin, val);
	case XK_PROGRAM:
		/* Extrae keeps what follows the last '/' */
		if (strrchr(val, '/'))
			val = strrchr(val, '/') + 1;
		if (!cfg_program_ok(val))
			return xcfg_fail(
			    origin, val,
			    "1 to 63 characters of A-Z a-z 0-9 . _ "
			    "- not starting with '.'");
		snprintf(x->program, sizeof x->program, "%s", val);
		x->cfg.program = x->program;
		return DW_OK;
	case XK_DIR:
		return xcfg_set_dir(x->dir, &x->has_dir, origin, val);
	case XK_FINAL_DIR:
		return xcfg_set_dir(x->final_dir, &x->has_final_dir, origin,
		                    val);
	case XK_BUFFER:
	case XK_FILE_SIZE:
		return xcfg_set_size(x, k, origin, val);
	}
	return DW_EINVAL;
}

static int
xcfg_name_char(char c, int first)
{
	return c == '_' || isalpha((unsigned char)c) ||
	       (!first && isdigit((unsigned char)c));
}

/* Length of NAME in "$NAME$..." at s, or 0 when s does not start one. */
static size_t
xcfg_var_len(const char *s)
{
	size_t n = 1;
	if (s[0] != '$' || !xcfg_name_char(s[1], 1))
		return 0;
	while (xcfg_name_char(s[n], 0))
		n++;
	return s[n] == '$' ? n - 1 : 0;
}

static int
xcfg_put(char *out, size_t outlen, size_t *j, const char *s, size_t n)
{
	if (*j + n >= outlen)
		return -1;
	memcpy(out + *j, s, n);
	*j += n;
	return 0;
}

static int
xcfg_put_var(const char *name, size_t n, char *out, size_t outlen, size_t *j,
             char *missing, size_t mlen)
{
	char var[256];
	snprintf(var, sizeof var, "%.*s", (int)n, name);
	snprintf(missing, mlen, "%s", var);
	const char *v = getenv(var);
	if (!v || xcfg_put(out, outlen, j, v, strlen(v)))
		return -1;
	return 0;
}

int
xcfg_subst(const char *in, char *out, size_t outlen, char *missing, size_t mlen)
{
	size_t end = strlen(in), j = 0;
	while (isspace((unsigned char)*in))
		in++, end--;
	while (end > 0 && isspace((unsigned char)in[end - 1]))
		end--;
	snprintf(missing, mlen, "%s", "");
	for (size_t i = 0; i < end;) {
		size_t n = xcfg_var_len(in + i);
		if (n && i + n + 2 <= end) {
			if (xcfg_put_var(in + i + 1, n, out, outlen, &j,
			                 missing, mlen))
				return -1;
			i += n + 2;
		} else if (xcfg_put(out, outlen, &j, in + i++, 1)) {
			return -1;
		}
	}
	out[j] = 0;
	return 0;
}

/* The EXTRAE_* variables that map onto a setting. */
static const struct {
	const char *var;
	enum xcfg_key key;
} xcfg_vars[] = {
    {"EXTRAE_ON", XK_ON},
    {"EXTRAE_PROGRAM_NAME", XK_PROGRAM},
    {"EXTRAE_DIR", XK_DIR},
    {"EXTRAE_FINAL_DIR", XK_FINAL_DIR},
    {"EXTRAE_BUFFER_SIZE", XK_BUFFER},
    {"EXTRAE_FILE_SIZE", XK_FILE_SIZE},
};

static int
xcfg_env(struct xcfg *x)
{
	for (size_t i = 0; i < sizeof xcfg_vars / sizeof xcfg_vars[0]; i++) {
		const char *v = getenv(xcfg_vars[i].var);
		if (v && xcfg_set(x, xcfg_vars[i].key, xcfg_vars[i].var, v))
			return DW_EINVAL;
	}
	return DW_OK;
}

/* Files are written where they stay (crash safety), so the final
 * directory wins over the temporary one.  Processes that only differ in
 * their EXTRAE_PROGRAM_NAME share one directory, as they share Extrae's
 * working directory. */
static void
xcfg_pick_dir(struct xcfg *x, int had_dwt_dir)
{
	if (x->has_final_dir)
		x->cfg.dir = x->final_dir;
	else if (x->has_dir)
		x->cfg.dir = x->dir;
	if (x->cfg.dir || had_dwt_dir || !x->cfg.program)
		return;
	char exe[64];
	trc_default_program(exe, sizeof exe);
	snprintf(x->dir, sizeof x->dir, "%s.trace", exe);
	x->cfg.dir = x->dir;
}

/* What Extrae prints on stdout when it is not configured to trace. */
static int
xcfg_not_configured(const char *why)
{
	printf("dwtrace: Application has been linked or preloaded with Extrae, "
	       "BUT %s!\n",
	       why);
	fflush(stdout);
	return DW_ENOTFOUND;
}

int
xcfg_load(struct xcfg *x)
{
	char err[512];
	const char *file = getenv("EXTRAE_CONFIG_FILE");
	const char *on = getenv("EXTRAE_ON");
	int v = 0;
	memset(x, 0, sizeof *x);
	dwt_config_defaults(&x->cfg);
	x->counters = 1;
	if (dwt_config_from_env(&x->cfg, err, sizeof err) != DW_OK) {
		trc_err("%s", err);
		return DW_EINVAL;
	}
	if (!x->cfg.program) { /* Extrae's default prefix */
		snprintf(x->program, sizeof x->program, "TRACE");
		x->cfg.program = x->program;
	}
	int had_dwt_dir = x->cfg.dir != NULL;
	int e = file && *file ? xcfg_xml(x, file) : DW_ENOTFOUND;
	if (e == DW_ENOTFOUND) {
		if (!on)
			return xcfg_not_configured(
			    file && *file
			        ? "EXTRAE_CONFIG_FILE could not be used and "
			          "EXTRAE_ON is NOT set"
			        : "EXTRAE_ON is NOT set"); /* as 5.1.2 says */
		if (cfg_bool(on, &v) == 0 && !v)
			return xcfg_not_configured("EXTRAE_ON is NOT enabled");
		e = xcfg_env(x);
	}
	if (e != DW_OK)
		return DW_EINVAL;
	xcfg_pick_dir(x, had_dwt_dir);
	return DW_OK;
}

/* Extrae's test of the skip variable: it starts with "yes", "true"
 * (any case) or "1"; anything else initialises. */
static int
xcfg_skip(const char *s)
{
	return s && (!strncasecmp(s, "yes", 3) || !strncasecmp(s, "true", 4) ||
	             !strncmp(s, "1", 1));
}

int
xcfg_auto_wanted(void)
{
	const char *on = getenv("EXTRAE_ON");
	const char *file = getenv("EXTRAE_CONFIG_FILE");
	int v = 0;
	if (xcfg_skip(getenv("EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE")))
		return 0;
	if (file && *file)
		return 1;
	/* A bad EXTRAE_ON is reported by the initialisation it starts. */
	return on && *on && !(cfg_bool(on, &v) == 0 && v == 0);
}
