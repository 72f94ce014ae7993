/*
 * The blocking socket I/O the runtime's handshake (src/runtime/handshake.c,
 * compiled into this tool for `dwork top`) is written against; in the
 * runtime these live in cluster.c with the rest of the process group.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "runtime/rt.h"

uint64_t
rt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int
cl_wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		uint64_t now = rt_now_ms();
		if (now >= deadline)
			return -1;
		struct pollfd p = {.fd = fd, .events = ev};
		int r = poll(&p, 1, (int)(deadline - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

int
cl_io_full(int fd, void *buf, size_t n, int wr, uint64_t deadline)
{
	size_t done = 0;
	while (done < n) {
		if (cl_wait_fd(fd, wr ? POLLOUT : POLLIN, deadline) < 0)
			return -2;
		ssize_t r =
		    wr ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL)
		       : recv(fd, (char *)buf + done, n - done, 0);
		if (r == 0)
			return -1;
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			return -1;
		done += r > 0 ? (size_t)r : 0;
	}
	return 0;
}
