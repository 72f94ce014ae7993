/*
 * The one option parser of the dwork tool's commands.  A command lists
 * its options in a table; cmd_opt_next hands back, one at a time, which
 * option came (with its value) or an operand, and leaves every message
 * to the command, so that each keeps its own words.
 *
 * Spellings: a long name ("--output"), an optional short alias ("-o");
 * an option with a value takes it as the next argument, as
 * "--output=VALUE", or attached to the short alias ("-oVALUE").  "--"
 * ends the options (the rest are operands); "-" alone is an operand.
 */
#ifndef DW_TOOLS_CMD_OPT_H
#define DW_TOOLS_CMD_OPT_H

#include <stdbool.h>

enum cmd_opt_value {
	CMD_OPT_FLAG,     /* no value */
	CMD_OPT_VALUE,    /* a value, always */
	CMD_OPT_EQ_VALUE, /* a flag, or a value given as --name=VALUE */
};

typedef struct cmd_opt {
	int id;            /* > 0: what cmd_opt_next returns for it */
	const char *name;  /* "--output" */
	const char *alias; /* "-o", or NULL */
	enum cmd_opt_value value;
} cmd_opt;

/* What cmd_opt_next returns besides an option's id. */
enum {
	CMD_OPT_END = 0,  /* no argument left */
	CMD_OPT_ARG = -1, /* an operand: a->arg */
	CMD_OPT_UNKNOWN =
	    -2, /* an argument like an option, none of the table */
	CMD_OPT_NOVALUE = -3, /* a->arg needs a value and the arguments ended */
};

typedef struct cmd_args {
	int argc;
	char **argv;
	int i;           /* the next argument's index */
	bool stop;       /* the first operand ends the options */
	bool literal;    /* after "--" (or stop's operand): operands only */
	const char *arg; /* the argument last returned, as written */
	const struct cmd_opt *opt; /* its entry (an option, or NOVALUE) */
	int namelen;               /* of arg's option name (before any '=') */
	const char *value;         /* an option's value; NULL for a flag */
} cmd_args;

/* Parses argv[1 ..] (argv[0] is the command's name). */
void cmd_args_init(cmd_args *a, int argc, char **argv);

/* The next option (its id) or operand, by the table opts (ended by an
 * entry of id 0). */
int cmd_opt_next(cmd_args *a, const cmd_opt *opts);

#endif
