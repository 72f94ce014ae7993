/*
 * Blocking socket I/O with a deadline, and the monotonic clock it is
 * measured on: what the handshake (handshake.c) and the joining of
 * workers are written against.  Its own file because the dwork tool
 * compiles it too, for `dwork top`'s handshake with a running master.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
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
