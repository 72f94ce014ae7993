/*
 * The control socket (live.h): the master answers `dwork top` on a Unix
 * socket in the user's runtime directory with a snapshot (livesnap.c).
 * The socket's thread is its own, not the I/O thread: a client's
 * handshake blocks on its deadline, and the I/O thread never waits on
 * anything.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/handshake.h"
#include "runtime/live.h"
#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/wire.h"

#include <dwork/trace.h>

#define LIVE_CLIENTS 16

/* ---- the control socket ---- */

static int ctl_fd = -1, ctl_stop[2] = {-1, -1};
static pthread_t ctl_thread;
static int ctl_running, ctl_clients;
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static char ctl_cookie_path[sizeof ctl_path];
/* the default directory, removed at the end when no other master's
 * sockets are in it (a directory the user named is the user's) */
static char ctl_dir[200];
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cv = PTHREAD_COND_INITIALIZER;
static int ctl_cfds[LIVE_CLIENTS];

static int
ctl_write_cookie(const char *path)
{
	unlink(path); /* one of an earlier process of this pid */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t n = strlen(rt.cookie);
	int ok = write(fd, rt.cookie, n) == (ssize_t)n;
	close(fd);
	return ok ? 0 : -1;
}

/* True when nothing listens on the socket at path (connect refused, or
 * not a socket at all). */
static int
ctl_dead_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return 0;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	int dead = r < 0 && (errno == ECONNREFUSED || errno == ENOTSOCK);
	close(fd);
	return dead;
}

/* Removes the sockets and cookies in dir of masters that ended without
 * removing theirs (killed): their pid is gone and nothing listens.
 * Both tests, so that a live master in another pid namespace sharing
 * the directory keeps its socket. */
static void
ctl_sweep(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		char *end, path[256];
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || pid == (long)getpid() || strcmp(end, ".sock") ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		int n = snprintf(path, sizeof path, "%s/%ld.sock", dir, pid);
		if (n < 0 || (size_t)n >= sizeof path || !ctl_dead_socket(path))
			continue;
		unlink(path);
		snprintf(path, sizeof path, "%s/%ld.cookie", dir, pid);
		unlink(path);
	}
	closedir(d);
}

static int
ctl_listen(char *why, size_t wl)
{
	char dir[200];
	if (live_dir(dir, sizeof dir, why, wl) < 0)
		return -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(ctl_path, sizeof ctl_path, "%s/%d.sock", dir,
	                 (int)getpid());
	int m = snprintf(ctl_cookie_path, sizeof ctl_cookie_path,
	                 "%s/%d.cookie", dir, (int)getpid());
	if (n < 0 || m < 0 || (size_t)m >= sizeof ctl_cookie_path) {
		snprintf(why, wl, "the directory %s is too long for a socket",
		         dir);
		return -1;
	}
	memcpy(sa.sun_path, ctl_path, (size_t)n + 1);
	const char *named = getenv("DWORK_RUNTIME_DIR");
	snprintf(ctl_dir, sizeof ctl_dir, "%s", named && *named ? "" : dir);
	unlink(ctl_path); /* a stale one of an earlier process of this pid */
	ctl_sweep(dir);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* the directory is this user's alone (0700), so the socket's
	 * moment with the umask's mode before chmod exposes nothing */
	int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof sa);
	if (r < 0 || listen(fd, 16) < 0 || chmod(ctl_path, 0600) < 0 ||
	    ctl_write_cookie(ctl_cookie_path) < 0) {
		snprintf(why, wl, "control socket %s: %s", ctl_path,
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(ctl_path);
		unlink(ctl_cookie_path);
		return -1;
	}
	return fd;
}

/* Answers one client's requests until it closes. */
static void
ctl_serve(int fd)
{
	unsigned char hdr[WIRE_HDR];
	for (;;) {
		struct wire_hdr h;
		char why[128];
		if (cl_io_full(fd, hdr, WIRE_HDR, 0, rt_now_ms() + 3600000) < 0)
			return;
		if (wire_parse_hdr(hdr, 0, &h, why, sizeof why) < 0 ||
		    h.type != WIRE_STATS) {
			rt_log("control socket: bad request (%s)", why);
			return;
		}
		size_t len = 0;
		char *s = live_snapshot(h.ref == 1 ? 1 : 0, &len);
		if (!s)
			return;
		wire_put_hdr(hdr, WIRE_STATS, h.ref, (uint32_t)len);
		int bad =
		    cl_io_full(fd, hdr, WIRE_HDR, 1, rt_now_ms() + 10000) < 0 ||
		    cl_io_full(fd, s, len, 1, rt_now_ms() + 10000) < 0;
		free(s);
		if (bad)
			return;
	}
}

static int
ctl_peer_ok(int fd)
{
	struct ucred cr;
	socklen_t sl = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) < 0)
		return 0;
	if (cr.uid == getuid())
		return 1;
	rt_log("control socket: refused process %d of user %u (not this "
	       "user)",
	       (int)cr.pid, (unsigned)cr.uid);
	return 0;
}

static int
ctl_slot(int fd)
{
	pthread_mutex_lock(&ctl_lock);
	int k = -1;
	for (int i = 0; i < LIVE_CLIENTS && k < 0; i++)
		if (ctl_cfds[i] < 0)
			ctl_cfds[k = i] = fd;
	if (k >= 0)
		ctl_clients++;
	pthread_mutex_unlock(&ctl_lock);
	return k;
}

static void *
ctl_client(void *arg)
{
	int k = (int)(intptr_t)arg, fd = ctl_cfds[k];
	struct hs_side me = {
	    .cookie = rt.cookie, .role = AUTH_MASTER, .id = 1, .give_id = 2};
	struct hs_result res;
	char why[256];
	if (ctl_peer_ok(fd)) {
		int err = hs_prove(fd, &me, rt_now_ms() + 5000, &res, why,
		                   sizeof why);
		if (err == DW_OK)
			ctl_serve(fd);
		else
			rt_log("control socket: refused a client: %s", why);
	}
	pthread_mutex_lock(&ctl_lock);
	close(fd);
	ctl_cfds[k] = -1;
	ctl_clients--;
	pthread_cond_broadcast(&ctl_cv);
	pthread_mutex_unlock(&ctl_lock);
	return NULL;
}

static void
ctl_accept(void)
{
	int fd = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	int k = ctl_slot(fd);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (k < 0 ||
	    pthread_create(&t, &a, ctl_client, (void *)(intptr_t)k) != 0) {
		if (k >= 0) {
			pthread_mutex_lock(&ctl_lock);
			ctl_cfds[k] = -1;
			ctl_clients--;
			pthread_mutex_unlock(&ctl_lock);
		}
		close(fd);
	}
	pthread_attr_destroy(&a);
}

static void *
ctl_main(void *arg)
{
	(void)arg;
	struct pollfd p[2] = {{.fd = ctl_fd, .events = POLLIN},
	                      {.fd = ctl_stop[0], .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN)
			ctl_accept();
	}
	return NULL;
}

void
live_start(void)
{
	char why[300];
	if (!acct_on || ctl_running)
		return;
	for (int i = 0; i < LIVE_CLIENTS; i++)
		ctl_cfds[i] = -1;
	if ((ctl_fd = ctl_listen(why, sizeof why)) < 0) {
		rt_log("no control socket for dwork top: %s", why);
		return;
	}
	if (pipe2(ctl_stop, O_CLOEXEC) < 0 ||
	    pthread_create(&ctl_thread, NULL, ctl_main, NULL) != 0) {
		rt_log("no control socket for dwork top: %s", strerror(errno));
		close(ctl_fd);
		ctl_fd = -1;
		return;
	}
	ctl_running = 1;
}

void
live_stop(void)
{
	region_finish();
	if (!ctl_running)
		return;
	ctl_running = 0;
	if (write(ctl_stop[1], "x", 1) != 1)
		rt_log("control socket: cannot stop its thread");
	pthread_join(ctl_thread, NULL);
	unlink(ctl_path);
	unlink(ctl_cookie_path);
	if (ctl_dir[0])
		rmdir(ctl_dir); /* ENOTEMPTY while another master runs */
	close(ctl_fd);
	close(ctl_stop[0]);
	close(ctl_stop[1]);
	ctl_fd = ctl_stop[0] = ctl_stop[1] = -1;
	pthread_mutex_lock(&ctl_lock);
	for (int i = 0; i < LIVE_CLIENTS; i++)
		if (ctl_cfds[i] >= 0)
			shutdown(ctl_cfds[i], SHUT_RDWR);
	for (int i = 0; i < 100 && ctl_clients > 0; i++) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 10000000;
		if (dl.tv_nsec >= 1000000000)
			dl.tv_sec++, dl.tv_nsec -= 1000000000;
		rt_cond_wait(&ctl_cv, &ctl_lock, &dl,
		             DWT_STATE_SYNCHRONIZATION);
	}
	pthread_mutex_unlock(&ctl_lock);
}
