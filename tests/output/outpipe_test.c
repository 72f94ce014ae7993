/*
 * The writers' output thread (output/outpipe.h): blocks of every size
 * arrive in the file in order, each through the put function once; a
 * put that fails stops the writes after it, and the error reaches the
 * caller (at a later submit or at the finish) with nothing written past
 * it; a pipe freed without a finish drops what is queued and stops its
 * thread; an empty pipe finishes with nothing written.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/outpipe.h"
#include "testutil.h"

#define BLOCK 4096

/* The byte at offset i of the output (a lost or swapped block does not
 * match). */
static char
byte_at(uint64_t i)
{
	return (char)('a' + (i * 131 + i / 4099) % 26);
}

typedef struct sink {
	unsigned puts;     /* blocks given to put */
	unsigned fail_at;  /* the put that fails (0: none) */
	uint64_t put_size; /* bytes given to put */
} sink;

static dw_err
put(void *ctx, ob *out, const char *buf, size_t len)
{
	sink *s = ctx;

	if (++s->puts == s->fail_at)
		return DW_EIO;
	s->put_size += len;
	return ob_write(out, buf, len);
}

/* Writes lines of 1..300 bytes through the pipe up to total bytes;
 * returns the first error of a submit (DW_OK if none) and the bytes
 * made in *made. */
static dw_err
fill(opipe *p, uint64_t total, uint64_t *made)
{
	uint64_t off = 0;

	for (unsigned step = 0; off < total; step++) {
		size_t n = 1 + (step * 7) % 300;
		dw_err err = op_need(p, n);
		char *q;

		if (err != DW_OK) {
			*made = off;
			return err;
		}
		q = ob_end(&p->cur);
		for (size_t i = 0; i < n; i++)
			q[i] = byte_at(off + i);
		ob_commit(&p->cur, q + n);
		off += n;
	}
	*made = off;
	return DW_OK;
}

/* The file's size, and whether its bytes are the pattern's. */
static uint64_t
file_check(const char *path, int *same)
{
	int fd = open(path, O_RDONLY);
	char buf[BLOCK];
	uint64_t off = 0;
	ssize_t n;

	REQUIRE(fd >= 0);
	*same = 1;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			*same &= buf[i] == byte_at(off + (uint64_t)i);
		off += (uint64_t)n;
	}
	close(fd);
	return off;
}

static void
all_blocks(const char *path)
{
	sink s = {0};
	uint64_t made, size;
	opipe p;
	int same;
	ob out;

	REQUIRE(ob_open(&out, path) == DW_OK);
	REQUIRE(op_start(&p, &out, BLOCK, put, &s) == DW_OK);
	CHECK(p.threaded);
	CHECK(fill(&p, 3u << 20, &made) == DW_OK);
	CHECK(op_finish(&p) == DW_OK);
	CHECK(!p.threaded);
	CHECK(op_finish(&p) == DW_OK); /* again: nothing to do */
	op_free(&p);
	REQUIRE(ob_close(&out) == DW_OK);
	size = file_check(path, &same);
	CHECK_EQ_U64(size, made);
	CHECK_EQ_U64(s.put_size, made);
	CHECK(same);
	/* a block is submitted when the next line does not fit: every one
	 * but the last holds more than BLOCK - 300 bytes */
	CHECK(s.puts >= made / BLOCK && s.puts <= made / (BLOCK - 300) + 1);
}

static void
failing_put(const char *path)
{
	sink s = {.fail_at = 5};
	uint64_t made, size;
	dw_err err;
	opipe p;
	int same;
	ob out;

	REQUIRE(ob_open(&out, path) == DW_OK);
	REQUIRE(op_start(&p, &out, BLOCK, put, &s) == DW_OK);
	err = fill(&p, 1u << 20, &made);
	if (err == DW_OK)
		err = op_finish(&p);
	CHECK(err == DW_EIO);
	CHECK(op_finish(&p) == DW_EIO); /* kept */
	op_free(&p);
	REQUIRE(ob_close(&out) == DW_OK);
	/* the four blocks before the failing one, and nothing after it */
	CHECK_EQ_U64(s.puts, 5);
	size = file_check(path, &same);
	CHECK_EQ_U64(size, s.put_size);
	CHECK(same);
}

static void
freed_unfinished(const char *path)
{
	sink s = {0};
	uint64_t made;
	opipe p;
	ob out;

	REQUIRE(ob_open(&out, path) == DW_OK);
	REQUIRE(op_start(&p, &out, BLOCK, put, &s) == DW_OK);
	CHECK(fill(&p, 200000, &made) == DW_OK);
	op_free(&p); /* stops the thread: out is the caller's again */
	CHECK(!p.threaded);
	CHECK(s.put_size <= made);
	REQUIRE(ob_close(&out) == DW_OK);
	op_free(&p); /* twice is fine */
}

static void
empty(const char *path)
{
	sink s = {0};
	opipe p;
	ob out;
	struct stat st;

	REQUIRE(ob_open(&out, path) == DW_OK);
	REQUIRE(op_start(&p, &out, BLOCK, put, &s) == DW_OK);
	CHECK(op_finish(&p) == DW_OK);
	op_free(&p);
	REQUIRE(ob_close(&out) == DW_OK);
	CHECK_EQ_U64(s.puts, 0);
	REQUIRE(stat(path, &st) == 0);
	CHECK_EQ_U64((uint64_t)st.st_size, 0);
}

int
main(void)
{
	const char *dir = tu_tmpdir("outpipe");
	char path[600];

	snprintf(path, sizeof path, "%s/out.txt", dir);
	all_blocks(path);
	failing_put(path);
	freed_unfinished(path);
	empty(path);
	unlink(path);
	tu_rmtree(dir);
	return tu_report("outpipe");
}
