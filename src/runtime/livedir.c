/*
 * Where control sockets live (live.h, live_dir).  Plain libc: the dwork
 * tool compiles this file too, so that both sides look in one place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/live.h"

static int
live_dir_ok(const char *dir, char *why, size_t wl)
{
	struct stat st;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(why, wl, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 077)) {
		snprintf(why, wl,
		         "%s is not a directory of this user with mode 0700",
		         dir);
		return -1;
	}
	return 0;
}

int
live_dir(char *dir, size_t len, char *why, size_t wl)
{
	const char *d = getenv("DWORK_RUNTIME_DIR");
	const char *x = getenv("XDG_RUNTIME_DIR");
	if (d && *d)
		snprintf(dir, len, "%s", d);
	else if (x && *x)
		snprintf(dir, len, "%s/dwork", x);
	else
		snprintf(dir, len, "/tmp/dwork-%u", (unsigned)getuid());
	return live_dir_ok(dir, why, wl);
}
