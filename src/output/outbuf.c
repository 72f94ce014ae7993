/* The text writers' output buffer (outbuf.h). */
#include <errno.h>
#include <fcntl.h>
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
	b->fd = sf_create(path, 0644); /* new: nothing planted is followed */
	if (b->fd < 0) {
		int e = errno;

		ob_discard(b);
		b->errnum = e;
		return dw_err_from_errno(e);
	}
	return DW_OK;
}

dw_err
ob_flush(ob *b)
{
	size_t done = 0;

	if (b->errnum)
		return dw_err_from_errno(b->errnum);
	while (done < b->len) {
		ssize_t r = write(b->fd, b->buf + done, b->len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			b->errnum = r < 0 ? errno : EIO;
			return dw_err_from_errno(b->errnum);
		}
		done += (size_t)r;
	}
	b->total += b->len;
	b->len = 0;
	return DW_OK;
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
