/*
 * Files and directories no one else can plant (docs/tracing.md): trace
 * directories owned by this user and writable by no one else, outputs
 * created new (O_EXCL | O_NOFOLLOW), never opened through a name that
 * someone else made.
 */
#ifndef DW_COMMON_SAFEFILE_H
#define DW_COMMON_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Creates dir (and missing parents, 0755) with mode 0700, or accepts an
 * existing directory that this user owns and that neither group nor
 * others can write.  Returns 0, or an errno value with the reason in why
 * ("... is owned by uid 1001, not by this user (uid 0)"). */
int sf_private_dir(const char *dir, char *why, size_t whylen);

/* Creates path new for writing with O_EXCL | O_NOFOLLOW.  A regular file
 * of ours already there (left by an interrupted run) is replaced; a
 * symbolic link or anything another user owns is refused (EEXIST).
 * Returns the descriptor, or -1 with errno set. */
int sf_create(const char *path, mode_t mode);

/* Opens path read-only without following a symbolic link in its last
 * component (ELOOP); returns the descriptor or -1 with errno set. */
int sf_open_read(const char *path);

#endif
