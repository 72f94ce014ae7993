/*
 * The dwork command line tool.  Commands live in their own files
 * (tools/cmd_*.c) behind this table.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cmd.h"

static const struct cmd cmds[] = {
    {"info", "summarise a trace directory: processes, threads, records",
     cmd_info},
    {"merge", "merge a trace directory into a Paraver trace", cmd_merge},
    {"convert", "a trace in other formats: OTF2, Chrome JSON, ...",
     cmd_convert},
    {"summary", "useful time, calls and efficiency of a traced run",
     cmd_summary},
    {"stats", "time per state, events, calls, bytes and POP metrics",
     cmd_stats},
    {"view", "the timeline picture of a trace, as one HTML file", cmd_view},
    {"top", "watch this user's running dwork program live", cmd_top},
    {"run", "run a program as the master with N local workers, traced",
     cmd_run},
};

static void
usage(FILE *out)
{
	fprintf(out, "usage: dwork COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(out, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(out, "  %-8s %s\n", "help",
	        "this text; 'dwork COMMAND --help' "
	        "for a command");
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CMD_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "help") || !strcmp(name, "--help") ||
	    !strcmp(name, "-h")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(name, cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "dwork: unknown command '%s'\n", name);
	usage(stderr);
	return CMD_USAGE;
}
