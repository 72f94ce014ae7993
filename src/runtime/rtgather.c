/* Gathering: a worker without the master's filesystem sends its trace
 * files over its link when it leaves (FILE frames). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safefile.h"
#include "common/tracename.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

enum { FILE_BEGIN = 1, FILE_DATA = 2, FILE_END = 3 };

static int
rtr_name_ok(const char *n)
{
	size_t l = strlen(n);
	/* a spare came sealed: its sender skips an unused one */
	if (l < 5 || n[0] == '.' || tn_kind(n) == TN_OTHER)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (!strchr(
		        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		        "0123456789._-",
		        n[i]))
			return 0;
	return 1;
}

static void
rtr_file_begin(struct worker *w, const unsigned char *p, size_t len)
{
	char name[256];
	size_t o = 1;
	if (w->gather_fd >= 0)
		close(w->gather_fd);
	w->gather_fd = -1;
	if (rtr_get_str(p, len, &o, name, sizeof name) || !rtr_name_ok(name)) {
		rt_log("worker %d sent a trace file with a bad name; ignored",
		       w->id);
		return;
	}
	char path[sizeof rtr_dir + 300];
	snprintf(path, sizeof path, "%s/%s", rtr_dir, name);
	w->gather_fd = sf_create(path, 0644);
	if (w->gather_fd < 0)
		rt_log("cannot write %s: %s", path, strerror(errno));
}

static void rtr_file_op(struct worker *w, const unsigned char *p, size_t len);

void
rtr_on_file(struct conn *c, uint64_t ref, const unsigned char *p, size_t len)
{
	(void)ref;
	struct worker *w = cl_pin(c->peer);
	if (w && len >= 1 && rtr_dir[0])
		rtr_file_op(w, p, len);
	if (w)
		cl_unpin(w);
}

static void
rtr_file_op(struct worker *w, const unsigned char *p, size_t len)
{
	if (p[0] == FILE_BEGIN) {
		rtr_file_begin(w, p, len);
	} else if (p[0] == FILE_DATA && w->gather_fd >= 0) {
		if (write(w->gather_fd, p + 1, len - 1) != (ssize_t)(len - 1))
			rt_log("writing a trace file of worker %d failed: %s",
			       w->id, strerror(errno));
	} else if (p[0] == FILE_END && w->gather_fd >= 0) {
		close(w->gather_fd);
		w->gather_fd = -1;
	}
}

static void rtr_drain(struct conn *c);

static void
rtr_drop_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
}

/* Worker: sends one file in 1 MiB frames, waiting for each to leave. */
static void
rtr_send_file(struct conn *c, const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	unsigned char head[260];
	head[0] = FILE_BEGIN;
	size_t hl = 1 + rtr_put_str(head + 1, name);
	conn_send_msg(c, WIRE_FILE, 0, head, hl, NULL, 0);
	/* chunks stay under the link's limit (at least 64 KiB) */
	size_t chunk =
	    c->max_payload - 1 < (1u << 20) ? c->max_payload - 1 : (1u << 20);
	unsigned char *buf = malloc(chunk);
	ssize_t r;
	unsigned char op = FILE_DATA;
	while (buf && (r = read(fd, buf, chunk)) > 0) {
		conn_send_msg(c, WIRE_FILE, 0, &op, 1, buf, (size_t)r);
		rtr_drain(c); /* one chunk in flight at a time */
	}
	free(buf);
	close(fd);
	head[0] = FILE_END;
	conn_send_msg(c, WIRE_FILE, 0, head, 1, NULL, 0);
	unlink(path);
}

static void
rtr_drain(struct conn *c)
{
	for (int i = 0; i < 60000; i++) {
		pthread_mutex_lock(&c->wlock);
		int empty = !c->wq || c->closed;
		pthread_mutex_unlock(&c->wlock);
		if (empty)
			return;
		usleep(1000);
	}
}

void
rtr_worker_exit(struct conn *master)
{
	if (!rtr_on)
		return;
	rtr_end();
	if (!rtr_local_dir_path[0] || !master || master->closed)
		return;
	DIR *d = opendir(rtr_local_dir_path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		/* a taken kit's file is a thread's; an unused one (up to a
		 * fallocated segment) is not sent */
		if (tn_kind(e->d_name) == TN_SPARE &&
		    !tn_is_trace(rtr_local_dir_path, e->d_name))
			rtr_drop_file(rtr_local_dir_path, e->d_name);
		else
			rtr_send_file(master, rtr_local_dir_path, e->d_name);
	}
	if (d)
		closedir(d);
	rtr_drain(master);
	rmdir(rtr_local_dir_path);
}

static void
rtr_file_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (rt.role == RT_MASTER)
		rtr_on_file(c, h->ref, p, h->payload);
	free(p);
}

void
rtr_gather_attach(void)
{
	disp_on_frame(WIRE_FILE, rtr_file_frame);
}
