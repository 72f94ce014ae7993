/*
 * Worker-to-worker links, opened at first use.  The higher id dials the
 * lower: a worker asks the master where its peer listens (WHERE); when
 * the peer has the higher id, the master tells it to dial instead (DIAL)
 * and the asker waits for it.  The accepting worker authenticates the
 * dialler with the cookie, as a worker authenticates its master.  In the
 * master-worker topology the master refuses every WHERE.
 */
#include <errno.h>
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

#include "runtime/rt.h"
#include "runtime/rtrace.h"
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

/* A connection on the listen socket that has not said who it is. */
struct stranger {
	struct stranger *next;
	struct conn *c;
	uint64_t since;
	int dead; /* closed: freed at the next tick */
};

static pthread_mutex_t pr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pr_cv = PTHREAD_COND_INITIALIZER;
static struct peer *peers;
static struct stranger *strangers;
static int topology; /* master */
static int n_links;  /* links ever opened */
static struct {
	int io_kind;
	int fd;
} lst = {IO_PEER_LISTEN, -1};

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
	int live = w && w->state == W_ACTIVE;
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

static size_t
peer_hello(unsigned char *buf, int ack)
{
	struct wire_hello h = {.vmajor = WIRE_VERSION_MAJOR,
	                       .vminor = WIRE_VERSION_MINOR,
	                       .id = (uint32_t)(ack ? getpid() : rt.myid)};
	h.cookie_len = (uint8_t)strlen(rt.cookie);
	memcpy(h.cookie, rt.cookie, h.cookie_len);
	snprintf(h.addr, sizeof h.addr, "%s", rt.my_addr);
	size_t pl = wire_put_hello(buf + WIRE_HDR, &h, ack);
	wire_put_hdr(buf, ack ? WIRE_HELLO_ACK : WIRE_HELLO, 0, (uint32_t)pl);
	return WIRE_HDR + pl;
}

/* Our side of the handshake as the dialler. */
static int
peer_handshake(int fd, uint64_t deadline, char *why, size_t wl)
{
	unsigned char buf[WIRE_HDR + WIRE_HELLO_MAX];
	struct wire_hdr h;
	struct wire_hello a;
	size_t n = peer_hello(buf, 0);
	if (cl_io_full(fd, buf, n, 1, deadline) < 0 ||
	    cl_io_full(fd, buf, WIRE_HDR, 0, deadline) < 0) {
		snprintf(why, wl, "no handshake answer");
		return -1;
	}
	if (wire_parse_hdr(buf, WIRE_HELLO_MAX, &h, why, wl) < 0)
		return -1;
	if (h.type != WIRE_HELLO_ACK ||
	    cl_io_full(fd, buf, h.payload, 0, deadline) < 0 ||
	    wire_parse_hello(buf, h.payload, 1, &a, why, wl) < 0) {
		if (h.type != WIRE_HELLO_ACK)
			snprintf(why, wl, "answered with frame type %u",
			         h.type);
		return -1;
	}
	if (a.vmajor != WIRE_VERSION_MAJOR) {
		snprintf(why, wl, "speaks protocol %u.%u", a.vmajor, a.vminor);
		return -1;
	}
	if (!wire_cookie_equal(a.cookie, a.cookie_len, rt.cookie,
	                       strlen(rt.cookie))) {
		snprintf(why, wl, "presented a wrong cookie");
		return -1;
	}
	return 0;
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
	if (peer_handshake(fd, deadline, why, wl) < 0) {
		close(fd);
		return strstr(why, "cookie") ? DW_EAUTH : DW_EPROTO;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	struct conn *c = conn_new(fd, pid);
	if (!c) {
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
			if (pthread_cond_timedwait(&pr_cv, &pr_lock, &dl))
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
	return peer_dial(pid, addr, why, wl);
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
			if (pthread_cond_timedwait(&pr_cv, &pr_lock, &dl)) {
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
		struct conn *c = conn_new(fd, 0);
		struct stranger *s = c ? calloc(1, sizeof *s) : NULL;
		if (!s) {
			conn_free(c);
			if (!c)
				close(fd);
			continue;
		}
		c->max_payload = WIRE_HELLO_MAX;
		s->c = c;
		s->since = rt_now_ms();
		pthread_mutex_lock(&pr_lock);
		s->next = strangers;
		strangers = s;
		pthread_mutex_unlock(&pr_lock);
		if (loop_add_conn(c) != DW_OK)
			conn_close(c);
	}
}

static void
stranger_forget(struct conn *c)
{
	for (struct stranger **pp = &strangers; *pp; pp = &(*pp)->next)
		if ((*pp)->c == c) {
			struct stranger *s = *pp;
			*pp = s->next;
			free(s);
			return;
		}
}

/* The first frame of a connection on the listen socket must be a HELLO
 * from a worker with a higher id that knows the cookie. */
void
peer_on_hello(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	struct wire_hello hl = {0};
	char why[200] = "";
	if (h->type != WIRE_HELLO)
		snprintf(why, sizeof why,
		         "first frame is type %u, not a "
		         "handshake",
		         h->type);
	else if (wire_parse_hello(p, h->payload, 0, &hl, why, sizeof why) ==
	         0) {
		if (hl.vmajor != WIRE_VERSION_MAJOR)
			snprintf(why, sizeof why, "protocol version %u.%u",
			         hl.vmajor, hl.vminor);
		else if (!wire_cookie_equal(hl.cookie, hl.cookie_len, rt.cookie,
		                            strlen(rt.cookie)))
			snprintf(why, sizeof why, "wrong cookie");
		else if ((int)hl.id <= rt.myid || hl.id > INT32_MAX)
			snprintf(why, sizeof why,
			         "process %u dialled worker %d, but the "
			         "higher id dials the lower",
			         hl.id, rt.myid);
	}
	free(p);
	int id = (int)hl.id;
	pthread_mutex_lock(&pr_lock);
	struct peer *pe = why[0] ? NULL : peer_get(id);
	if (!why[0] && (!pe || pe->state == P_UP || pe->state == P_GONE))
		snprintf(why, sizeof why, "worker %d is %s", id,
		         pe && pe->state == P_UP ? "already linked" : "gone");
	if (!why[0]) {
		stranger_forget(c);
		unsigned char buf[WIRE_HDR + WIRE_HELLO_MAX];
		size_t n = peer_hello(buf, 1);
		conn_send_msg(c, WIRE_HELLO_ACK, 0, buf + WIRE_HDR,
		              n - WIRE_HDR, NULL, 0);
		c->peer = id;
		c->max_payload = WIRE_MAX_PAYLOAD;
		peer_up_locked(pe, c);
	}
	pthread_mutex_unlock(&pr_lock);
	if (why[0])
		conn_fail(c, "rejected a worker's connection: %s", why);
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
	if (c->peer == 0) { /* never said who it is */
		rt_log("worker %d: %s%s", rt.myid,
		       strncmp(why, "rejected", 8) ? "rejected a connection: "
		                                   : "",
		       why);
		pthread_mutex_lock(&pr_lock);
		for (struct stranger *s = strangers; s; s = s->next)
			if (s->c == c)
				s->dead = 1;
		pthread_mutex_unlock(&pr_lock);
		loop_run(peer_close_cb, c);
		return;
	}
	if (c->bad) /* an end is only news when the peer misbehaved */
		rt_log("worker %d: closed the link to worker %d: %s", rt.myid,
		       c->peer, why);
	pthread_mutex_lock(&pr_lock);
	struct peer *p = peer_get(c->peer);
	int mine = p && p->c == c;
	pthread_mutex_unlock(&pr_lock);
	if (mine)
		peer_gone(c->peer);
	else
		loop_run(peer_close_cb, c);
}

void
peer_tick(void)
{
	peer_resume();
	uint64_t now = rt_now_ms();
	struct conn *late[16], *dead[16];
	int nl = 0, nd = 0;
	pthread_mutex_lock(&pr_lock);
	for (struct stranger **pp = &strangers; *pp;) {
		struct stranger *s = *pp;
		if (s->dead && nd < 16) {
			dead[nd++] = s->c;
			*pp = s->next;
			free(s);
			continue;
		}
		if (!s->dead && now - s->since > PEER_HELLO_MS && nl < 16) {
			late[nl++] = s->c;
			s->dead = 1;
		}
		pp = &s->next;
	}
	pthread_mutex_unlock(&pr_lock);
	for (int i = 0; i < nl; i++) {
		rt_log("worker %d: rejected a connection that did not say "
		       "who it is within %d ms",
		       rt.myid, PEER_HELLO_MS);
		conn_close(late[i]);
	}
	for (int i = 0; i < nd; i++)
		conn_free(dead[i]);
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

void
peer_gone(int pid)
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
			p->state = P_GONE;
			pthread_cond_broadcast(&pr_cv);
		}
		pthread_mutex_unlock(&pr_lock);
		if (c)
			loop_run(peer_close_cb, c);
		char msg[120];
		snprintf(msg, sizeof msg, "worker %d has exited", pid);
		call_fail_peer(pid, DW_EEXITED, msg);
	}
	chan_gone(pid);
	call_refs_gone(pid);
	pool_gone(pid);
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
		peer_gone((int)wire_get_u32(b));
}
