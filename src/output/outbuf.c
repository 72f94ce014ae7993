/* The text writers' output buffer (outbuf.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/safefile.h"
#include "output/outbuf.h"

const char ob_digits[201] = "00010203040506070809"
                            "10111213141516171819"
                            "20212223242526272829"
                            "30313233343536373839"
                            "40414243444546474849"
                            "50515253545556575859"
                            "60616263646566676869"
                            "70717273747576777879"
                            "80818283848586878889"
                            "90919293949596979899";

char ob_four[40000];

static void
four_fill(void)
{
	for (unsigned i = 0; i < 10000; i++) {
		ob_four[4 * i] = (char)('0' + i / 1000);
		ob_four[4 * i + 1] = (char)('0' + i / 100 % 10);
		ob_four[4 * i + 2] = (char)('0' + i / 10 % 10);
		ob_four[4 * i + 3] = (char)('0' + i % 10);
	}
}

void
ob_near_init(ob_near *c)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, four_fill);
	c->base = 10000;
	c->n = (unsigned)(ob_u64(c->s, c->base) - c->s);
}

/* Out of line: rare (a time 10 us or more past the base). */
__attribute__((noinline)) bool
ob_near_move(ob_near *c, uint64_t v)
{
	if (v < 10000)
		return false;
	c->base = v / 10000 * 10000;
	c->n = (unsigned)(ob_u64(c->s, c->base) - c->s);
	return true;
}

const uint64_t ob_pow10[20] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

dw_err
ob_open(ob *b, const char *path)
{
	memset(b, 0, sizeof *b);
	b->fd = -1;
	b->path = strdup(path);
	b->buf = malloc(OB_SIZE);
	if (!b->path || !b->buf) {
		ob_discard(b);
		return DW_ENOMEM;
	}
	b->cap = OB_SIZE;
	b->freerun = OB_FREERUN;
	b->fd = sf_create(path, 0644); /* new: nothing planted is followed */
	if (b->fd < 0) {
		int e = errno;

		ob_discard(b);
		b->errnum = e;
		return dw_err_from_errno(e);
	}
	return DW_OK;
}

/* Hints the file takes or refuses (a pipe, a file system without them)
 * leave nohint set and the output as it would be without; an I/O error
 * of the writeback is the output's failure. */
static int
hint_failed(ob *b, int e)
{
	if (e == EIO || e == ENOSPC) {
		b->errnum = e;
		return 1;
	}
	b->nohint = 1;
	return 0;
}

/* Past the freerun, starts writeback of the whole chunks written, then
 * waits for and drops those more than OB_WINDOW behind: the output's
 * pages in the cache stay about freerun + OB_WINDOW, recycled, instead of
 * growing to the dirty limit (where the kernel throttles the writer) with
 * pages it must take fresh.  An output under the freerun (most) is left
 * to the kernel's writeback after the merge, as without hints. */
static dw_err
writeback(ob *b)
{
	const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE |
	                      SYNC_FILE_RANGE_WRITE |
	                      SYNC_FILE_RANGE_WAIT_AFTER;

	if (b->started < b->freerun) { /* the first bytes: as they are */
		if (b->total < b->freerun + OB_CHUNK)
			return DW_OK;
		b->started = b->dropped = b->freerun;
	}
	while (!b->nohint && b->total - b->started >= OB_CHUNK) {
		if (sync_file_range(b->fd, (off_t)b->started, OB_CHUNK,
		                    SYNC_FILE_RANGE_WRITE) < 0 &&
		    hint_failed(b, errno))
			return dw_err_from_errno(b->errnum);
		b->started += OB_CHUNK;
	}
	while (!b->nohint && b->started - b->dropped > OB_WINDOW) {
		if (sync_file_range(b->fd, (off_t)b->dropped, OB_CHUNK, wait) <
		        0 &&
		    hint_failed(b, errno))
			return dw_err_from_errno(b->errnum);
		(void)posix_fadvise(b->fd, (off_t)b->dropped, OB_CHUNK,
		                    POSIX_FADV_DONTNEED);
		b->dropped += OB_CHUNK;
	}
	return DW_OK;
}

/* Writes n bytes from p, then starts or waits for the writeback. */
static dw_err
put(ob *b, const char *p, size_t n)
{
	size_t done = 0;

	if (b->errnum)
		return dw_err_from_errno(b->errnum);
	while (done < n) {
		ssize_t r = write(b->fd, p + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			b->errnum = r < 0 ? errno : EIO;
			return dw_err_from_errno(b->errnum);
		}
		done += (size_t)r;
	}
	b->total += n;
	return writeback(b);
}

dw_err
ob_flush(ob *b)
{
	dw_err err = put(b, b->buf, b->len);

	if (err == DW_OK)
		b->len = 0;
	return err;
}

dw_err
ob_write(ob *b, const void *p, size_t n)
{
	dw_err err = ob_flush(b);

	return err != DW_OK ? err : put(b, p, n);
}

dw_err
ob_close(ob *b)
{
	dw_err err = ob_flush(b);

	if (b->fd >= 0 && close(b->fd) < 0 && err == DW_OK) {
		b->errnum = errno;
		err = dw_err_from_errno(errno);
	}
	b->fd = -1;
	free(b->buf);
	free(b->path);
	b->buf = b->path = NULL;
	return err;
}

void
ob_discard(ob *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	free(b->buf);
	free(b->path);
	b->buf = b->path = NULL;
	b->len = 0;
}
