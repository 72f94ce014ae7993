/* The commands' option parser (cmd_opt.h). */
#include <string.h>

#include "tools/cmd_opt.h"

void
cmd_args_init(cmd_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->argc = argc;
	a->argv = argv;
	a->i = 1;
}

/* The entry whose long name is s[0 .. n-1], or NULL. */
static const cmd_opt *
by_name(const cmd_opt *opts, const char *s, size_t n)
{
	for (; opts->id; opts++)
		if (strlen(opts->name) == n && !strncmp(opts->name, s, n))
			return opts;
	return NULL;
}

/* The entry whose short alias starts s ("-o" of "-ofile"), or NULL; only
 * an option with a value may have it attached. */
static const cmd_opt *
by_alias(const cmd_opt *opts, const char *s)
{
	for (; opts->id; opts++) {
		size_t n = opts->alias ? strlen(opts->alias) : 0;

		if (!n || strncmp(opts->alias, s, n))
			continue;
		if (!s[n] || opts->value == CMD_OPT_VALUE)
			return opts;
	}
	return NULL;
}

static int
long_opt(cmd_args *a, const cmd_opt *opts, const char *s)
{
	const char *eq = strchr(s, '=');
	size_t n = eq ? (size_t)(eq - s) : strlen(s);
	const cmd_opt *o = by_name(opts, s, n);

	a->namelen = (int)n;
	a->opt = o;
	if (!o || (eq && o->value == CMD_OPT_FLAG))
		return CMD_OPT_UNKNOWN;
	if (eq)
		a->value = eq + 1;
	else if (o->value == CMD_OPT_VALUE && a->i < a->argc)
		a->value = a->argv[a->i++];
	else if (o->value == CMD_OPT_VALUE)
		return CMD_OPT_NOVALUE;
	return o->id;
}

static int
short_opt(cmd_args *a, const cmd_opt *opts, const char *s)
{
	const cmd_opt *o = by_alias(opts, s);
	size_t n = o ? strlen(o->alias) : strlen(s);

	a->namelen = (int)n;
	a->opt = o;
	if (!o)
		return CMD_OPT_UNKNOWN;
	if (o->value != CMD_OPT_VALUE)
		return o->id;
	if (s[n])
		a->value = s + n;
	else if (a->i < a->argc)
		a->value = a->argv[a->i++];
	else
		return CMD_OPT_NOVALUE;
	return o->id;
}

int
cmd_opt_next(cmd_args *a, const cmd_opt *opts)
{
	const char *s;

	a->value = NULL;
	a->opt = NULL;
	if (a->i >= a->argc)
		return CMD_OPT_END;
	s = a->arg = a->argv[a->i++];
	a->namelen = (int)strlen(s);
	if (!a->literal && !strcmp(s, "--")) {
		a->literal = true;
		return cmd_opt_next(a, opts);
	}
	if (a->literal || s[0] != '-' || !s[1]) {
		a->literal = a->literal || a->stop;
		return CMD_OPT_ARG;
	}
	return s[1] == '-' ? long_opt(a, opts, s) : short_opt(a, opts, s);
}
