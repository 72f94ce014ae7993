/* Files and directories no one else can plant (safefile.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"

int
sf_private_dir(const char *dir, char *why, size_t whylen)
{
	char p[PATH_MAX];
	struct stat st;
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
		snprintf(why, whylen, "the path '%.200s' is too long", dir);
		return ENAMETOOLONG;
	}
	for (char *s = p + 1; *s; s++)
		if (*s == '/' && s[-1] != '/') {
			*s = 0;
			mkdir(p, 0755); /* an error shows at the last step */
			*s = '/';
		}
	if (mkdir(p, 0700) == 0)
		return 0;
	int e = errno;
	if (e != EEXIST || stat(p, &st) < 0) {
		e = e == EEXIST ? errno : e;
		snprintf(why, whylen, "cannot create '%s': %s", dir,
		         strerror(e));
		return e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "'%s' exists and is not a directory",
		         dir);
		return ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen,
		         "'%s' is owned by uid %u, not by this user (uid %u): "
		         "refused, its owner could plant files in it",
		         dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return EACCES;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen,
		         "'%s' can be written by other users (mode %04o): "
		         "refused, they could plant files in it",
		         dir, (unsigned)(st.st_mode & 07777));
		return EACCES;
	}
	return 0;
}

int
sf_create(const char *path, mode_t mode)
{
	const int fl = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(path, fl, mode);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || unlink(path) < 0) {
		errno = EEXIST;
		return -1;
	}
	return open(path, fl, mode); /* EEXIST again: someone races us */
}

int
sf_open_read(const char *path)
{
	return open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}
