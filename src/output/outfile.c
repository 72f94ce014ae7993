/* A writer's output under a temporary name (outfile.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/outfile.h"

dw_err
of_names(char **path, char **tmp, const char *prefix, const char *ext)
{
	if (asprintf(path, "%s%s", prefix, ext) < 0)
		*path = NULL;
	if (!*path || asprintf(tmp, "%s.tmp", *path) < 0)
		*tmp = NULL;
	if (*tmp)
		return DW_OK;
	free(*path);
	*path = NULL;
	return DW_ENOMEM;
}

void
of_names_free(char *path, char *tmp, bool remove_tmp)
{
	if (remove_tmp && tmp)
		unlink(tmp);
	free(path);
	free(tmp);
}

dw_err
of_commit(mg_writer *w, const char *tmp, const char *path)
{
	/* Unlinking first: replacing a file by rename makes ext4 write the
	 * new one to disk before the rename (auto_da_alloc), which would
	 * cost a re-merge of a large trace the whole disk write. */
	if ((unlink(path) < 0 && errno != ENOENT) || rename(tmp, path) < 0) {
		int e = errno;

		return of_fail(w, dw_err_from_errno(e), "rename to", path, e);
	}
	return DW_OK;
}

dw_err
of_fail(mg_writer *w, dw_err err, const char *what, const char *path,
        int errnum)
{
	if (err == DW_ENOMEM)
		snprintf(w->err, sizeof w->err, "out of memory");
	else
		snprintf(w->err, sizeof w->err, "cannot %s %s: %s", what, path,
		         errnum ? strerror(errnum) : dw_strerror(err));
	return err;
}
