/*
 * The I/O thread: owns every socket through one epoll.  It never runs
 * user code and never waits on it, so heartbeats and results are answered
 * even while executors are busy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"

static int ev_tag = IO_EVENT, tm_tag = IO_TIMER;

int
loop_add_conn(struct conn *c)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
	                         .data.ptr = c};
	pthread_mutex_lock(&c->wlock);
	c->epfd = rt.epfd;
	c->armed = EPOLLIN;
	int rc = epoll_ctl(rt.epfd, EPOLL_CTL_ADD, c->fd, &ev);
	pthread_mutex_unlock(&c->wlock);
	return rc == 0 ? DW_OK : dw_err_from_errno(errno);
}

int
loop_add_fwd(struct fwd *f)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = f};
	return epoll_ctl(rt.epfd, EPOLL_CTL_ADD, f->fd, &ev) == 0
	           ? DW_OK
	           : dw_err_from_errno(errno);
}

/* A descriptor kept in reserve: at EMFILE/ENFILE it is given up for a
 * moment to accept the waiting connection and close it, so a
 * level-triggered listener does not wake the loop forever. */
/* spare_lock guards spare_fd and spare_logged; a leaf. */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static int spare_fd = -1, spare_logged;

static void
loop_spare_open(void)
{
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int
loop_accept(int lfd, struct sockaddr *sa, socklen_t *sl)
{
	int fd = accept4(lfd, sa, sl, SOCK_CLOEXEC);
	if (fd >= 0 || (errno != EMFILE && errno != ENFILE)) {
		if (fd >= 0)
			__atomic_store_n(&spare_logged, 0, __ATOMIC_RELAXED);
		return fd;
	}
	int e = errno;
	pthread_mutex_lock(&spare_lock);
	if (!spare_logged++)
		rt_log("process %d is out of descriptors (%s): refusing "
		       "connections until some are freed",
		       rt.myid ? rt.myid : 1, strerror(e));
	int refused = 0;
	if (spare_fd >= 0) {
		close(spare_fd);
		spare_fd = -1;
		int x = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (x >= 0)
			close(x);
		refused = x >= 0;
		loop_spare_open();
	}
	pthread_mutex_unlock(&spare_lock);
	errno = refused ? EAGAIN : e;
	return refused ? -2 : -1;
}

/* Prints complete lines as "From worker N: ..." (partial lines wait). */
static void
fwd_lines(struct fwd *f, int flush)
{
	FILE *out = f->is_err ? stderr : stdout;
	size_t start = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->buf[i] != '\n')
			continue;
		fprintf(out, "From worker %d: %.*s\n", f->wid, (int)(i - start),
		        f->buf + start);
		start = i + 1;
	}
	if ((flush || start == 0) && f->n == sizeof f->buf && start == 0) {
		fprintf(out, "From worker %d: %.*s\n", f->wid, (int)f->n,
		        f->buf);
		start = f->n;
	}
	if (flush && start < f->n) {
		fprintf(out, "From worker %d: %.*s\n", f->wid,
		        (int)(f->n - start), f->buf + start);
		start = f->n;
	}
	memmove(f->buf, f->buf + start, f->n - start);
	f->n -= start;
	fflush(out);
}

static void
fwd_readable(struct fwd *f)
{
	ssize_t r = read(f->fd, f->buf + f->n, sizeof f->buf - f->n);
	if (r > 0) {
		f->n += (size_t)r;
		fwd_lines(f, 0);
		return;
	}
	if (r < 0 && errno == EINTR)
		return;
	if (r < 0 && errno == EAGAIN && !f->closing)
		return;
	fwd_lines(f, 1);
	epoll_ctl(rt.epfd, EPOLL_CTL_DEL, f->fd, NULL);
	close(f->fd);
	f->fd = -1;
}

void
loop_fwd_close(struct fwd *f)
{
	if (!f)
		return;
	f->closing = 1; /* what is not there now is never read */
	for (int i = 0; f->fd >= 0 && i < 64; i++) /* its last lines */
		fwd_readable(f);
	if (f->fd >= 0) {
		fwd_lines(f, 1);
		epoll_ctl(rt.epfd, EPOLL_CTL_DEL, f->fd, NULL);
		close(f->fd);
	}
	loop_later(free, f);
}

/* A connection ended (EOF, error, malformed frame): the role's lost
 * handler decides what that means (cluster.c, worker.c). */
void
loop_conn_lost(struct conn *c, const char *why)
{
	disp_lost(c, why);
}

/* Reads what is there while holding the right to read; replies to a batch
 * of frames go out in one write.  Returns 0, or -1 when the connection
 * ended (why says how). */
int
loop_read_conn(struct conn *c, char *why, size_t len)
{
	conn_hold(c);
	int r = conn_read(c, disp_frame, NULL, why, len);
	conn_release(c);
	return r;
}

static void
loop_conn_event(struct conn *c, uint32_t events)
{
	char why[256] = "connection closed";
	int bad = events & EPOLLOUT && conn_flush(c) < 0;
	if (conn_event(c, events)) {
		bad |= loop_read_conn(c, why, sizeof why) < 0;
		conn_drop_reader(c);
	}
	if (bad && !c->closed)
		loop_conn_lost(c, why);
}

static void
loop_timer(void)
{
	uint64_t n = 1;
	if (read(rt.tfd, &n, sizeof n) != (ssize_t)sizeof n)
		n = 1;
	disp_tick(n);
}

static void
loop_event(struct epoll_event *e)
{
	int kind = *(int *)e->data.ptr;
	if (kind == IO_EVENT) {
		uint64_t n;
		ssize_t r = read(rt.evfd, &n, sizeof n);
		(void)r;
		disp_wake();
	} else if (kind == IO_TIMER) {
		loop_timer();
	} else if (kind == IO_PIPE) {
		fwd_readable(e->data.ptr);
	} else if (kind == IO_SOURCE) {
		((struct loop_src *)e->data.ptr)->ready();
	} else {
		loop_conn_event(e->data.ptr, e->events);
	}
}

static void *
loop_main(void *arg)
{
	(void)arg;
	struct epoll_event evs[64];
	prctl(PR_SET_NAME, "dwork-io"); /* found in /proc by tools, tests */
	rtr_thread_start("I/O", DWT_STATE_IDLE);
	rtr_thread_started();
	while (!__atomic_load_n(&rt.stop, __ATOMIC_ACQUIRE)) {
		int n = epoll_wait(rt.epfd, evs, 64, rearm_wait_ms());
		if (n == 0) { /* a deferred re-arm's period: no records */
			rearm_tick();
			loop_commands();
			loop_free_batch();
			continue;
		}
		rtr_push(DWT_STATE_SEND_RECEIVE);
		for (int i = 0; i < n; i++)
			loop_event(&evs[i]);
		rearm_tick();
		loop_commands();
		loop_free_batch();
		rtr_pop();
	}
	rtr_pop();
	return NULL;
}

static int
loop_timer_start(void)
{
	int ms = rt.opts.heartbeat_ms;
	struct itimerspec its = {
	    .it_interval = {ms / 1000, (long)(ms % 1000) * 1000000L},
	    .it_value = {ms / 1000, (long)(ms % 1000) * 1000000L},
	};
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tm_tag};
	if (timerfd_settime(rt.tfd, 0, &its, NULL) < 0 ||
	    epoll_ctl(rt.epfd, EPOLL_CTL_ADD, rt.tfd, &ev) < 0)
		return dw_err_from_errno(errno);
	return DW_OK;
}

int
loop_start(void)
{
	rt.epfd = epoll_create1(EPOLL_CLOEXEC);
	rt.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rt.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	pthread_mutex_lock(&spare_lock);
	loop_spare_open();
	pthread_mutex_unlock(&spare_lock);
	if (rt.epfd < 0 || rt.evfd < 0 || rt.tfd < 0)
		return dw_err_from_errno(errno);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ev_tag};
	if (epoll_ctl(rt.epfd, EPOLL_CTL_ADD, rt.evfd, &ev) < 0)
		return dw_err_from_errno(errno);
	int err = loop_timer_start();
	if (err != DW_OK)
		return err;
	rt.stop = 0;
	if (pthread_create(&rt.io, NULL, loop_main, NULL) != 0)
		return DW_ENOMEM;
	rtr_thread_wait_started();
	rt.io_running = 1;
	return DW_OK;
}

void
loop_stop(void)
{
	if (rt.io_running) {
		__atomic_store_n(&rt.stop, 1, __ATOMIC_RELEASE);
		loop_wake();
		pthread_join(rt.io, NULL);
		rt.io_running = 0;
	}
	rearm_stop();
	loop_free_batch();
	int *fds[] = {&rt.epfd, &rt.evfd, &rt.tfd, &spare_fd};
	for (int i = 0; i < 4; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The transport's own frames: heartbeats. */
static void
loop_on_ping(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->type == WIRE_PING)
		conn_send_msg(c, WIRE_PONG, h->ref, p, h->payload, NULL, 0);
	free(p);
}

void
loop_attach(void)
{
	disp_on_frame(WIRE_PING, loop_on_ping);
	disp_on_frame(WIRE_PONG, loop_on_ping);
}
