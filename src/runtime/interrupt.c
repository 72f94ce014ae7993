/* Interrupts from the master: dw_interrupt, and Ctrl-C on the master. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "runtime/handshake.h"
#include "runtime/idmap.h"
#include "runtime/rt.h"
#include "runtime/tls.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

DW_API int
dw_interrupt(const int *ids, int n)
{
	int err = DW_OK;
	for (int i = 0; i < n; i++) {
		struct worker *w = cl_pin(ids[i]);
		int ok = w && w->state == W_ACTIVE;
		if (!ok) {
			err = DW_ENOTFOUND;
			continue;
		}
		/* over the link, whatever started the worker; the manager
		 * hears of it too (a custom one may want to) */
		struct conn *c = cl_conn_of(ids[i], &ok);
		if (c)
			conn_send_msg(c, WIRE_INTERRUPT, 0, NULL, 0, NULL, 0);
		conn_unref(c);
		if (w->mgr.manage)
			w->mgr.manage(w->mgr.self, &w->wc, DW_MANAGE_INTERRUPT);
		if (w)
			cl_unpin(w);
	}
	return err;
}

/* Ctrl-C on the master (loop.c, when the program left SIGINT alone):
 * the first interrupts every worker's calls in flight, the second ends
 * the program as SIGINT would have. */
volatile sig_atomic_t cl_sigint_pending;

static void
cl_on_sigint(int sig)
{
	static volatile sig_atomic_t seen;
	if (seen) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	seen = 1;
	cl_sigint_pending = 1;
	loop_wake();
}

void
cl_catch_sigint(void)
{
	struct sigaction old;
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
	    !(old.sa_flags & SA_SIGINFO))
		signal(SIGINT, cl_on_sigint);
}

/* I/O thread: a Ctrl-C came. */
void
cl_interrupt_all(void)
{
	int ids[4096];
	int n = cl_list(ids, 4096, 0);
	rt_log("interrupted (Ctrl-C): the calls in flight on %d worker(s) "
	       "are interrupted; Ctrl-C again ends the program",
	       n < 4096 ? n : 4096);
	dw_interrupt(ids, n < 4096 ? n : 4096);
}

void
cl_on_wake(void)
{
	if (cl_sigint_pending) {
		cl_sigint_pending = 0;
		cl_interrupt_all();
	}
}
