/*
 * The writers' output buffer (output/outbuf.h) on an output larger than
 * its page-cache window: every byte arrives in order (buffered lines and
 * ob_write's blocks mixed), the bytes counted are the file's, and on a
 * file system that takes the hints the file's pages left in the cache
 * are about the freerun and the window, not the file (mincore).
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "output/outbuf.h"
#include "testutil.h"

#define TOTAL_MB 160 /* the freerun set below, OB_WINDOW, 4 chunks */

/* The byte at offset i of the output: a pattern that a shifted or lost
 * block cannot match. */
static char
byte_at(uint64_t i)
{
	return (char)('a' + (i * 131 + i / 4099) % 26);
}

/* Writes TOTAL_MB: a line of 1..200 bytes at a time through the
 * buffer, and every tenth step a block of 300,000 bytes by ob_write. */
static uint64_t
write_output(const char *path)
{
	static char block[300000];
	uint64_t off = 0, end = (uint64_t)TOTAL_MB << 20;
	ob b;

	REQUIRE(ob_open(&b, path) == DW_OK);
	CHECK_EQ_U64(b.freerun, OB_FREERUN);
	b.freerun = 8 * OB_CHUNK; /* the window past 64 MiB, not 256 */
	for (unsigned step = 0; off < end; step++) {
		size_t n = step % 10 == 9 ? sizeof block : 1 + step % 200;
		char *p;

		if (n == sizeof block) {
			for (size_t i = 0; i < n; i++)
				block[i] = byte_at(off + i);
			REQUIRE(ob_write(&b, block, n) == DW_OK);
			off += n;
			continue;
		}
		REQUIRE(ob_need(&b, n) == DW_OK);
		p = ob_end(&b);
		for (size_t i = 0; i < n; i++)
			p[i] = byte_at(off + i);
		ob_commit(&b, p + n);
		off += n;
	}
	REQUIRE(ob_flush(&b) == DW_OK);
	CHECK_EQ_U64(b.total, off);
	CHECK(b.nohint || b.started + OB_CHUNK >= off);
	CHECK(b.nohint || b.dropped + OB_WINDOW + OB_CHUNK >= b.started);
	REQUIRE(ob_close(&b) == DW_OK);
	return off;
}

/* Pages of the file in the page cache, and whether every byte is right
 * (read back through a mapping, after mincore). */
static size_t
check_file(const char *path, uint64_t size, int *same)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t npages = (size_t)((size + (uint64_t)page - 1) / (uint64_t)page);
	unsigned char *vec = malloc(npages);
	int fd = open(path, O_RDONLY);
	struct stat st;
	size_t resident = 0;
	char *m;

	REQUIRE(vec && fd >= 0 && fstat(fd, &st) == 0);
	CHECK_EQ_U64((uint64_t)st.st_size, size);
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	REQUIRE(m != MAP_FAILED);
	REQUIRE(mincore(m, size, vec) == 0);
	for (size_t i = 0; i < npages; i++)
		resident += vec[i] & 1;
	*same = 1;
	for (uint64_t i = 0; i < size && *same; i++)
		*same = m[i] == byte_at(i);
	munmap(m, size);
	close(fd);
	free(vec);
	return resident * (size_t)page;
}

int
main(void)
{
	const char *dir = tu_tmpdir("outbuf");
	char path[600];
	struct statfs fs;
	uint64_t size;
	size_t cached;
	int same;

	snprintf(path, sizeof path, "%s/out.txt", dir);
	size = write_output(path);
	cached = check_file(path, size, &same);
	CHECK(same);
	/* tmpfs keeps its pages whatever the advice: there the window is
	 * not checked, only the bytes */
	if (statfs(dir, &fs) == 0 && fs.f_type != TMPFS_MAGIC) {
		CHECK(cached <= 8 * (size_t)OB_CHUNK + OB_WINDOW +
		                    2 * OB_CHUNK + OB_SIZE);
		printf("outbuf: %zu MiB of %llu MiB left in the page cache\n",
		       cached >> 20, (unsigned long long)(size >> 20));
	}
	unlink(path);
	tu_rmtree(dir);
	return tu_report("outbuf");
}
