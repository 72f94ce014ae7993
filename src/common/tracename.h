/*
 * The names of a trace directory's files, the one rule every lister
 * follows (the reader's directory, the master's gathering, the dwork
 * tool): PREFIX.dwp is a process file, PREFIX.THREAD.dwt a thread file,
 * and PREFIX.kitN.dwt-spare a thread file prepared ahead by the
 * tracer's helper (src/trace/prep.c).  A spare counts as a thread file
 * once a thread took it, which stores the magic last (the header is
 * sealed): its records are complete under that name when the process
 * died before the helper renamed it.  An unsealed spare is a kit no
 * thread took (up to a fallocated segment of zeros): skipped, silently.
 */
#ifndef DW_COMMON_TRACENAME_H
#define DW_COMMON_TRACENAME_H

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/format.h"

enum tn_kind {
	TN_OTHER = 0, /* not a trace file */
	TN_FILE = 1,  /* *.dwp or *.dwt */
	TN_SPARE = 2, /* *.dwt-spare: a thread file if sealed */
};

static inline bool
tn_suffix(const char *name, size_t n, const char *suffix)
{
	size_t s = strlen(suffix);

	return n > s && strcmp(name + n - s, suffix) == 0;
}

/* What name says the file is. */
static inline enum tn_kind
tn_kind(const char *name)
{
	size_t n = strlen(name);

	if (tn_suffix(name, n, ".dwp") || tn_suffix(name, n, ".dwt"))
		return TN_FILE;
	return tn_suffix(name, n, ".dwt-spare") ? TN_SPARE : TN_OTHER;
}

/* Whether the file at path is a regular file whose first 8 bytes are a
 * thread file's magic (a link is not followed, a FIFO not waited on). */
static inline bool
tn_sealed(const char *path)
{
	char magic[8];
	struct stat st;
	bool ok = false;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		ok = pread(fd, magic, 8, 0) == 8 &&
		     memcmp(magic, FMT_MAGIC_THREAD, 8) == 0;
	close(fd);
	return ok;
}

/* Whether the entry name of the directory dir is a trace file to read:
 * a *.dwp or *.dwt (whatever it holds: its reader says what is wrong
 * with it), or a sealed *.dwt-spare. */
static inline bool
tn_is_trace(const char *dir, const char *name)
{
	enum tn_kind k = tn_kind(name);
	char path[PATH_MAX];

	if (k != TN_SPARE)
		return k == TN_FILE;
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >=
	    sizeof path)
		return false;
	return tn_sealed(path);
}

#endif
