/* Commands of the dwork tool. */
#ifndef DW_TOOLS_CMD_H
#define DW_TOOLS_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "merge/cut.h"
#include "tools/cmd_opt.h"

/* Exit codes shared by every command (docs/tools.md). */
enum cmd_exit {
	CMD_OK = 0,      /* done, nothing wrong */
	CMD_DAMAGED = 1, /* done, but some input was damaged (reported) */
	CMD_USAGE = 2,   /* bad command line */
	CMD_FAILED = 3,  /* nothing could be read */
};

struct cmd {
	const char *name;
	const char *help;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
};

int cmd_info(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stats(int argc, char **argv);
/* dwork stats --scaling RUN... (cmd_scaling.c). */
int cmd_stats_scaling(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* The merge's default output prefix for a trace directory (cmd_merge.c):
 * DIR without ".trace", or DIR/trace for ".", ".." and "/".  Allocated;
 * NULL when out of memory. */
char *merge_default_prefix(const char *dir);

/* cmd_trace.c.  Checks TRACE before it is read: -1 when it exists (and,
 * a directory, holds trace files); else prints what is wrong and what to
 * give instead, under "dwork CMD", and returns CMD_FAILED. */
int cmd_trace_check(const char *cmd, const char *trace);

/* "2.5ms", "40us", "3s", "300ns" or plain ns; false when not a time. */
bool cmd_parse_time(const char *s, uint64_t *ns);

/* ns with the largest unit that keeps it >= 1 ("2.5 ms"). */
void cmd_print_time(FILE *f, uint64_t ns);

/* Cutting a trace (merge/cut.h) from the command line: --from T, --to T,
 * --tasks LIST, --max-bytes N (also --opt=VALUE). */
struct cmd_cut {
	cut_opts o;
	cut_range *ranges; /* owned */
};

/* The command line of the commands that write a trace (merge, convert):
 * INPUT [-o PREFIX] [-f LIST] [-q] and the cut options. */
struct cmd_out_args {
	const char *input; /* TRACE_DIR or TRACE */
	const char *prefix, *formats;
	bool quiet;
	struct cmd_cut cut;
};

/* Parses them (cmd_trace.c): -1 when they are good, else the exit code
 * (CMD_OK after --help) after a message under "dwork CMD"; what names
 * the operand in "no TRACE given". */
int cmd_out_parse(const char *cmd, const char *what, void (*usage)(FILE *),
                  int argc, char **argv, struct cmd_out_args *o);

/* -1 when the window is not empty, else CMD_USAGE after a message. */
int cmd_cut_check(const char *cmd, const struct cmd_cut *c);

/* What the cut left out, on stdout, under the summary. */
void cmd_cut_report(const struct cmd_cut *c, const cut_report *r);

#endif
