/*
 * Worker-to-worker links, opened at first use.  The higher id dials the
 * lower: a worker asks the master where its peer listens (WHERE); when
 * the peer has the higher id, the master tells it to dial instead (DIAL)
 * and the asker waits for it.  The accepting worker authenticates the
 * dialler with the cookie, as a worker authenticates its master.  In the
 * master-worker topology the master refuses every WHERE.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/tls.h"
#include "runtime/work.h"

#define PEER_WAIT_MS  10000 /* to open a link */
#define PEER_HELLO_MS 10000 /* for a connection to say who it is */

enum peer_state { P_NONE = 0, P_OPENING, P_UP, P_GONE };

struct peer {
	struct peer *next;
	int id;
	int state;
	struct conn *c;
	char why[240]; /* why the last attempt failed */
};

/* pr_lock guards the list of peers, each peer's state and link, and the
 * counts below (pr_cv: a link came up or failed).  Taken with no other
 * runtime lock held; nothing but leaf locks is taken under it. */
static pthread_mutex_t pr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pr_cv = PTHREAD_COND_INITIALIZER;
static struct peer *peers;
static int n_strangers; /* handshakes running (pr_lock) */
static int topology;    /* master */
static int n_links;     /* links ever opened */
static struct loop_src lst = {IO_SOURCE, -1, peer_accept};

/* pr_lock held */
static struct peer *
peer_get(int id)
{
	struct peer *p = peers;
	while (p && p->id != id)
		p = p->next;
	if (!p && (p = calloc(1, sizeof *p))) {
		p->id = id;
		p->next = peers;
		peers = p;
	}
	return p;
}

DW_API int
dw_set_topology(int t)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master sets the topology"),
		       DW_ESTATE;
	if (t != DW_TOPOLOGY_ALL_TO_ALL && t != DW_TOPOLOGY_MASTER_WORKER)
		return rt_set_err(0, "unknown topology %d", t), DW_EINVAL;
	__atomic_store_n(&topology, t, __ATOMIC_RELAXED);
	return DW_OK;
}

int
peer_links(void)
{
	return __atomic_load_n(&n_links, __ATOMIC_RELAXED);
}

int
peer_topology(void)
{
	return __atomic_load_n(&topology, __ATOMIC_RELAXED);
}

/* ---- the master: where workers listen ---- */

/* 1 when worker w's end of its link has gone (rt.lock held, w active: only
 * cl_worker_lost closes that link, after marking w gone).  A killed
 * worker's sockets close before the I/O thread reads the end, and a WHERE
 * may be handled meanwhile by a caller reading its own reply: asking the
 * socket keeps the answer "has exited" rather than an address that
 * refuses connections. */
static int
peer_hung_up(const struct worker *w)
{
	struct pollfd p = {.fd = w->conn ? w->conn->fd : -1,
	                   .events = POLLRDHUP};
	return p.fd >= 0 && poll(&p, 1, 0) == 1 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void
peer_where(const struct req_src *s, const unsigned char *b, size_t len)
{
	if (rt.role != RT_MASTER || len < 4) {
		req_answer_err(s, DW_EPROTO, "not a question for process %d",
		               rt.myid);
		return;
	}
	int to = (int)wire_get_u32(b);
	if (peer_topology() == DW_TOPOLOGY_MASTER_WORKER) {
		req_answer_err(
		    s, DW_EACCES,
		    "worker %d cannot reach worker %d: the cluster's "
		    "topology is master-worker (workers talk to "
		    "the master only)",
		    s->pid, to);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(to), *a = cl_find(s->pid);
	int live = w && w->state == W_ACTIVE && !peer_hung_up(w);
	char addr[256], mine[256];
	snprintf(addr, sizeof addr, "%s", live ? w->addr : "");
	snprintf(mine, sizeof mine, "%s", a ? a->addr : "");
	struct conn *wc = live ? w->conn : NULL;
	int known = w || (to > 1 && to < rt.next_id);
	pthread_mutex_unlock(&rt.lock);
	if (!live) {
		req_answer_err(s, known ? DW_EEXITED : DW_ENOTFOUND,
		               known ? "worker %d has exited"
		                     : "there is no process %d",
		               to);
	} else if (s->pid > to) {
		if (!addr[0])
			req_answer_err(s, DW_ENOTFOUND,
			               "worker %d does not "
			               "listen for workers",
			               to);
		else
			req_answer(s, addr, strlen(addr));
	} else if (!mine[0]) {
		req_answer_err(s, DW_ENOTFOUND,
		               "worker %d does not listen "
		               "for workers",
		               s->pid);
	} else { /* the higher id dials: tell it to */
		unsigned char id[4];
		wire_put_u32(id, (uint32_t)s->pid);
		req_post_conn(wc, REQ_DIAL, id, 4, mine, strlen(mine));
		req_answer(s, NULL, 0);
	}
}

/* ---- dialling ---- */

/* Splits "host:port" or "[v6]:port". */
static int
peer_split(const char *addr, char *host, size_t hl, char *port, size_t pl)
{
	const char *c = strrchr(addr, ':');
	if (!c || !c[1])
		return -1;
	size_t n = (size_t)(c - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']')
		addr++, n -= 2;
	if (n == 0 || n >= hl || strlen(c + 1) >= pl)
		return -1;
	memcpy(host, addr, n);
	host[n] = 0;
	snprintf(port, pl, "%s", c + 1);
	return 0;
}

static int
peer_connect(const char *addr, uint64_t deadline, char *why, size_t wl)
{
	char host[256], port[32];
	if (peer_split(addr, host, sizeof host, port, sizeof port) < 0) {
		snprintf(why, wl, "bad peer address '%.200s'", addr);
		return -1;
	}
	return cl_connect(host, port, deadline, why, wl);
}

/* Our side of the handshake as the dialler: the accepting worker proves
 * first, then we do. */
static int
peer_handshake(int fd, int pid, uint64_t deadline, struct ssl_st **ssl,
               char *why, size_t wl)
{
	struct hs_side me = {.cookie = rt.cookie,
	                     .role = AUTH_DIALLER,
	                     .id = (uint32_t)rt.myid,
	                     .want_id = (uint32_t)pid,
	                     .flags = rt.opts.tls ? AUTH_FLAG_TLS : 0,
	                     .addr = rt.my_addr};
	struct hs_result r;
	int err = hs_answer(fd, &me, deadline, &r, why, wl);
	*ssl = NULL;
	if (!err && (r.flags & AUTH_FLAG_TLS) &&
	    !(*ssl = tls_start(fd, 0, r.key, deadline, why, wl)))
		err = DW_EPROTO;
	OPENSSL_cleanse(r.key, sizeof r.key);
	return err;
}

/* The link to pid is up (pr_lock held). */
static void
peer_up_locked(struct peer *p, struct conn *c)
{
	p->c = c;
	p->state = P_UP;
	__atomic_add_fetch(&n_links, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&pr_cv);
	rtr_event(DW_EV_PEER, (uint64_t)p->id);
}

/* Dials pid at addr; the link is up on success. */
static int
peer_dial(int pid, const char *addr, char *why, size_t wl)
{
	uint64_t deadline = rt_now_ms() + PEER_WAIT_MS;
	int fd = peer_connect(addr, deadline, why, wl);
	if (fd < 0)
		return DW_ECLOSED;
	struct ssl_st *ssl;
	int err = peer_handshake(fd, pid, deadline, &ssl, why, wl);
	if (err) {
		close(fd);
		return err;
	}
	if (!ssl) /* blocking, as cl_register explains; TLS never blocks */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	struct conn *c = conn_new_tls(fd, pid, ssl);
	if (!c) {
		tls_free(ssl);
		close(fd);
		snprintf(why, wl, "out of memory");
		return DW_ENOMEM;
	}
	pthread_mutex_lock(&pr_lock);
	struct peer *p = peer_get(pid);
	int ok = p && p->state != P_GONE && p->state != P_UP;
	if (ok)
		peer_up_locked(p, c);
	pthread_mutex_unlock(&pr_lock);
	if (!ok || loop_add_conn(c) != DW_OK) {
		if (!ok)
			conn_free(c); /* gone meanwhile: nobody knows c */
		else
			loop_run((void (*)(void *))conn_close, c);
		snprintf(why, wl, "worker %d has gone", pid);
		return DW_EEXITED;
	}
	return DW_OK;
}

struct dial_job {
	int pid;
	char addr[256];
};

/* Told by the master to dial a lower id: a short-lived thread does it,
 * never the I/O thread. */
static void *
peer_dial_thread(void *arg)
{
	struct dial_job *j = arg;
	char why[240];
	int err = peer_dial(j->pid, j->addr, why, sizeof why);
	if (err != DW_OK) {
		rt_log("worker %d: cannot open the link to worker %d: %s",
		       rt.myid, j->pid, why);
		pthread_mutex_lock(&pr_lock);
		struct peer *p = peer_get(j->pid);
		if (p && p->state == P_OPENING) {
			p->state = P_NONE;
			snprintf(p->why, sizeof p->why, "%s", why);
		}
		pthread_cond_broadcast(&pr_cv);
		pthread_mutex_unlock(&pr_lock);
	}
	free(j);
	return NULL;
}

static void
peer_on_dial(const unsigned char *b, size_t len)
{
	if (len < 4 || len - 4 >= 256)
		return;
	int pid = (int)wire_get_u32(b);
	pthread_mutex_lock(&pr_lock);
	struct peer *p = peer_get(pid);
	int go = p && p->state == P_NONE && pid != rt.myid && pid > 1;
	if (go)
		p->state = P_OPENING;
	pthread_mutex_unlock(&pr_lock);
	if (!go)
		return;
	struct dial_job *j = calloc(1, sizeof *j);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (j) {
		j->pid = pid;
		memcpy(j->addr, b + 4, len - 4);
	}
	if (!j || pthread_create(&t, &a, peer_dial_thread, j) != 0) {
		free(j);
		pthread_mutex_lock(&pr_lock);
		p->state = P_NONE;
		pthread_cond_broadcast(&pr_cv);
		pthread_mutex_unlock(&pr_lock);
	}
	pthread_attr_destroy(&a);
}

/* The address of pid refused us: asks the master again, and when pid has
 * exited meanwhile, that is the error (*err, why). */
static void
peer_ask_gone(int pid, int *err, char *why, size_t wl)
{
	unsigned char b[4];
	void *r = NULL;
	size_t n;
	wire_put_u32(b, (uint32_t)pid);
	int e = req_call(1, REQ_WHERE, b, 4, NULL, 0, PEER_WAIT_MS, &r, &n);
	free(r);
	if (e == DW_EEXITED) {
		*err = e;
		snprintf(why, wl, "%s", dw_errmsg());
	}
}

/* Opens the link to pid (this thread holds p in P_OPENING). */
static int
peer_open(int pid, char *why, size_t wl)
{
	unsigned char b[4];
	void *r;
	size_t n;
	wire_put_u32(b, (uint32_t)pid);
	int err = req_call(1, REQ_WHERE, b, 4, NULL, 0, PEER_WAIT_MS, &r, &n);
	if (err != DW_OK) {
		snprintf(why, wl, "%s", dw_errmsg());
		return err;
	}
	if (n == 0) { /* it dials us: wait */
		free(r);
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += PEER_WAIT_MS / 1000;
		pthread_mutex_lock(&pr_lock);
		struct peer *p = peer_get(pid);
		while (p->state == P_OPENING)
			if (rt_cond_wait(&pr_cv, &pr_lock, &dl,
			                 DWT_STATE_BLOCKING_SEND))
				break;
		int st = p->state;
		pthread_mutex_unlock(&pr_lock);
		if (st == P_UP)
			return DW_OK;
		snprintf(why, wl, "worker %d did not connect within %d ms", pid,
		         PEER_WAIT_MS);
		return st == P_GONE ? DW_EEXITED : DW_ETIMEDOUT;
	}
	char addr[256];
	snprintf(addr, sizeof addr, "%.*s", (int)(n < 255 ? n : 255),
	         (char *)r);
	free(r);
	err = peer_dial(pid, addr, why, wl);
	if (err == DW_ECLOSED) /* no one there: has it just died? */
		peer_ask_gone(pid, &err, why, wl);
	return err;
}

struct conn *
peer_conn(int pid, int *err)
{
	char why[240];
	exec_block_begin();
	pthread_mutex_lock(&pr_lock);
	struct peer *p = peer_get(pid);
	struct conn *c = NULL;
	*err = p ? DW_OK : DW_ENOMEM;
	while (p && !c) {
		if (p->state == P_UP) {
			c = p->c;
		} else if (p->state == P_GONE) {
			*err = DW_EEXITED;
			rt_set_err(pid, "worker %d has exited", pid);
			break;
		} else if (p->state ==
		           P_OPENING) { /* another thread opens it */
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += PEER_WAIT_MS / 1000 + 1;
			if (rt_cond_wait(&pr_cv, &pr_lock, &dl,
			                 DWT_STATE_BLOCKING_SEND)) {
				*err = DW_ETIMEDOUT;
				rt_set_err(pid, "no link to worker %d in time",
				           pid);
				break;
			}
		} else {
			p->state = P_OPENING;
			pthread_mutex_unlock(&pr_lock);
			int e = peer_open(pid, why, sizeof why);
			pthread_mutex_lock(&pr_lock);
			if (e != DW_OK) {
				if (p->state == P_OPENING)
					p->state = P_NONE;
				pthread_cond_broadcast(&pr_cv);
				*err = e;
				rt_set_err(pid, "%s", why);
				break;
			}
		}
	}
	if (c)
		conn_ref(c); /* the caller's, dropped with conn_unref */
	pthread_mutex_unlock(&pr_lock);
	exec_block_end();
	return c;
}

/* ---- accepting ---- */

void
peer_start(int lfd)
{
	if (lfd < 0)
		return;
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	lst.fd = lfd;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &lst};
	if (epoll_ctl(rt.epfd, EPOLL_CTL_ADD, lfd, &ev) < 0)
		rt_log("worker %d: cannot accept workers: %s", rt.myid,
		       strerror(errno));
}

#define PEER_STRANGERS 16 /* handshakes at once; more are refused */

/* May a dialler with this id link to us?  (the acceptor's check) */
static int
peer_check_id(uint32_t id, char *why, size_t wl)
{
	if ((int)id <= rt.myid || id > INT32_MAX) {
		snprintf(why, wl,
		         "process %u dialled worker %d, but the higher id "
		         "dials the lower",
		         id, rt.myid);
		return -1;
	}
	pthread_mutex_lock(&pr_lock);
	struct peer *pe = peer_get((int)id);
	int ok = pe && pe->state != P_UP && pe->state != P_GONE;
	pthread_mutex_unlock(&pr_lock);
	if (!ok)
		snprintf(why, wl, "worker %u is %s", id,
		         pe && pe->state == P_UP ? "already linked" : "gone");
	return ok ? 0 : -1;
}

/* The link from the dialler id is up, unless it went meanwhile. */
static int
peer_accepted(int fd, int id, struct ssl_st *ssl, char *why, size_t wl)
{
	struct conn *c = conn_new_tls(fd, id, ssl);
	if (!c) {
		tls_free(ssl);
		snprintf(why, wl, "out of memory");
		return -1;
	}
	pthread_mutex_lock(&pr_lock);
	struct peer *pe = peer_get(id);
	int ok = pe && pe->state != P_UP && pe->state != P_GONE;
	if (ok)
		peer_up_locked(pe, c);
	pthread_mutex_unlock(&pr_lock);
	if (!ok) {
		snprintf(why, wl, "worker %d is already linked or gone", id);
		conn_free(c);
		return 0; /* conn_free closed fd */
	}
	if (loop_add_conn(c) != DW_OK)
		loop_run((void (*)(void *))conn_close, c);
	return 0;
}

/* A connection on the listen socket: this worker proves first, then
 * the dialler; a short-lived thread does it, never the I/O thread. */
static void *
peer_accept_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct hs_side me = {.cookie = rt.cookie,
	                     .role = AUTH_ACCEPTOR,
	                     .id = (uint32_t)rt.myid,
	                     .check_id = peer_check_id,
	                     .flags = rt.opts.tls ? AUTH_FLAG_TLS : 0};
	struct hs_result r;
	char why[300] = "";
	uint64_t deadline = rt_now_ms() + PEER_HELLO_MS;
	struct ssl_st *ssl = NULL;
	int err = hs_prove(fd, &me, deadline, &r, why, sizeof why);
	if (!err && (r.flags & AUTH_FLAG_TLS) &&
	    !(ssl = tls_start(fd, 1, r.key, deadline, why, sizeof why)))
		err = DW_EPROTO;
	OPENSSL_cleanse(r.key, sizeof r.key);
	if (err || peer_accepted(fd, (int)r.id, ssl, why, sizeof why) < 0) {
		rt_log("worker %d: rejected a worker's connection: %s", rt.myid,
		       why);
		close(fd);
	}
	pthread_mutex_lock(&pr_lock);
	n_strangers--;
	pthread_mutex_unlock(&pr_lock);
	return NULL;
}

static void
peer_stranger(int fd)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_mutex_lock(&pr_lock);
	int go = n_strangers < PEER_STRANGERS;
	n_strangers += go;
	pthread_mutex_unlock(&pr_lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (go && pthread_create(&t, &a, peer_accept_thread,
	                         (void *)(intptr_t)fd) == 0) {
		pthread_attr_destroy(&a);
		return;
	}
	pthread_attr_destroy(&a);
	if (go) {
		pthread_mutex_lock(&pr_lock);
		n_strangers--;
		pthread_mutex_unlock(&pr_lock);
	}
	rt_log("worker %d: rejected a connection: %d handshakes already "
	       "running",
	       rt.myid, PEER_STRANGERS);
	close(fd);
}

/* No descriptor left even for refusing: stop listening until the next
 * tick rather than wake for the same connection forever. */
static int lst_paused;

static void
peer_backoff(void)
{
	if (epoll_ctl(rt.epfd, EPOLL_CTL_DEL, lst.fd, NULL) == 0)
		lst_paused = 1;
}

static void
peer_resume(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &lst};
	if (lst_paused && epoll_ctl(rt.epfd, EPOLL_CTL_ADD, lst.fd, &ev) == 0)
		lst_paused = 0;
}

void
peer_accept(void)
{
	for (;;) {
		int fd = loop_accept(lst.fd, NULL, NULL);
		if (fd == -2)
			continue; /* refused: out of descriptors */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE))
			peer_backoff();
		if (fd < 0)
			return;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		peer_stranger(fd);
	}
}

static void
peer_close_cb(void *arg)
{
	struct conn *c = arg;
	conn_close(c);
}

void
peer_conn_lost(struct conn *c, const char *why)
{
	if (c->bad) /* an end is only news when the peer misbehaved */
		rt_log("worker %d: closed the link to worker %d: %s", rt.myid,
		       c->peer, why);
	pthread_mutex_lock(&pr_lock);
	struct peer *p = peer_get(c->peer);
	int mine = p && p->c == c;
	pthread_mutex_unlock(&pr_lock);
	if (mine)
		disp_gone(c->peer);
	else
		loop_run(peer_close_cb, c);
}

/* ---- a process has gone ---- */

static void
peer_tell_gone(int pid)
{
	unsigned char b[4];
	wire_put_u32(b, (uint32_t)pid);
	pthread_mutex_lock(&rt.lock);
	for (struct worker *w = rt.workers; w; w = w->next)
		if (w->state == W_ACTIVE && w->id != pid)
			req_post_conn(w->conn, REQ_GONE, b, 4, NULL, 0);
	pthread_mutex_unlock(&rt.lock);
}

/* A process has gone (the first of the gone observers): the master
 * tells the workers, a worker closes its link to it. */
static void
peer_on_gone(int pid)
{
	if (rt.role == RT_MASTER) {
		peer_tell_gone(pid);
	} else {
		pthread_mutex_lock(&pr_lock);
		/* only a peer we knew: news of every worker that ever left
		 * must not grow the list of a long-lived worker */
		struct peer *p = peers;
		while (p && p->id != pid)
			p = p->next;
		struct conn *c = NULL;
		if (p && p->state != P_GONE) {
			c = p->c;
			/* its struct goes with the last reference */
			p->c = NULL;
			p->state = P_GONE;
			pthread_cond_broadcast(&pr_cv);
		}
		pthread_mutex_unlock(&pr_lock);
		if (c) {
			loop_run(peer_close_cb, c);
			conn_unref(c);
		}
		char msg[120];
		snprintf(msg, sizeof msg, "worker %d has exited", pid);
		call_fail_peer(pid, DW_EEXITED, msg);
	}
}

void
peer_on_req(const struct req_src *s, int op, const unsigned char *b, size_t len)
{
	if (op == REQ_WHERE) {
		peer_where(s, b, len);
		return;
	}
	/* DIAL and GONE come from the master only */
	if (rt.role != RT_WORKER || s->c != rt.master)
		return;
	if (op == REQ_DIAL)
		peer_on_dial(b, len);
	else if (op == REQ_GONE && len >= 4 && wire_get_u32(b) > 1)
		disp_gone((int)wire_get_u32(b));
}

static void
peer_on_tick(uint64_t ticks)
{
	(void)ticks;
	peer_resume(); /* listens again after a descriptor shortage */
}

void
peer_attach(void)
{
	cl_on_peer_conn(peer_conn);
	disp_on_gone(peer_on_gone);
	if (rt.role == RT_WORKER)
		disp_on_tick(peer_on_tick);
}
