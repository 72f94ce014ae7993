/*
 * Limits: the size cap (linear mode loses the newest records and counts
 * them; circular mode keeps the newest segments), and a full filesystem
 * (a 1 MiB tmpfs in a private mount namespace): records are counted as
 * lost, the program keeps running, and recording resumes when space comes
 * back.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>

#include <dwork/trace.h>

#include "trace/tracer.h"
#include "tracefile/reader.h"
#include "testutil.h"

#define EV      6000
#define SEG     (64u << 10)
#define PER_SEG ((SEG - 64) / 16)

/* Reads the single thread file of dir: its EV values and header. */
static size_t
read_values(const char *dir, uint64_t *v, size_t cap, rd_header *hdr)
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	REQUIRE(d->nprocs == 1 && d->procs[0].nthreads == 1);
	rd_thread *t;
	REQUIRE(rd_thread_open(d->procs[0].thread_paths[0], &errs, &t) ==
	        DW_OK);
	size_t n = 0;
	rd_rec r;
	while (rd_thread_next(t, &r))
		if (r.kind == FMT_R_EVENT && r.u.event.type == EV && n < cap)
			v[n++] = r.u.event.value;
	*hdr = *rd_thread_header(t);
	rd_thread_close(t);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
	return n;
}

static void
start(const char *dir, uint64_t cap, int circular)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "limits";
	c.segment_size = SEG;
	c.size_cap = cap;
	c.circular = circular;
	REQUIRE(dwt_init(&c) == DW_OK);
}

static void
test_cap_linear(const char *base)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/linear", base);
	start(dir, 4 * SEG, 0);
	for (uint64_t i = 0; i < 100000; i++)
		dwt_event(EV, i);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK_EQ_U64(st.records, 4 * PER_SEG);
	CHECK_EQ_U64(st.lost_cap, 100000 - 4 * PER_SEG);
	CHECK_EQ_U64(st.lost_disk, 0);
	dwt_fini();
	static uint64_t v[100000];
	rd_header h;
	size_t n = read_values(dir, v, 100000, &h);
	CHECK_EQ_U64(n, 4 * PER_SEG);
	for (size_t i = 0; i < n; i++)
		if (v[i] != i) {
			CHECK_EQ_U64(v[i], i);
			break;
		}
	CHECK_EQ_U64(h.lost_cap, 100000 - 4 * PER_SEG);
}

static void
test_cap_circular(const char *base)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/circular", base);
	start(dir, 4 * SEG, 1);
	for (uint64_t i = 0; i < 100000; i++)
		dwt_event(EV, i);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK_EQ_U64(st.records, 100000);
	CHECK_EQ_U64(st.lost_cap + st.lost_disk, 0);
	CHECK(st.segments_reused > 0);
	static uint64_t v[100000];
	rd_header h;
	/* as a crash leaves it: the reused segment is cleared only a chunk
	 * ahead of its records, and none of its older records is read (once
	 * the helper has named the thread's file, which it took ready) */
	REQUIRE(prep_test_wait_idle());
	size_t n = read_values(dir, v, 100000, &h);
	CHECK(n > 3 * PER_SEG && n <= 4 * PER_SEG);
	CHECK(n > 0 && v[n - 1] == 99999);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[i - 1] + 1) {
			CHECK_EQ_U64(v[i], v[i - 1] + 1);
			break;
		}
	dwt_fini();
	n = read_values(dir, v, 100000, &h);
	/* the newest records: 3 full segments and the current one */
	CHECK(n > 3 * PER_SEG && n <= 4 * PER_SEG);
	CHECK(n > 0 && v[n - 1] == 99999);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[i - 1] + 1) {
			CHECK_EQ_U64(v[i], v[i - 1] + 1);
			break;
		}
	CHECK(h.seg_reused > 0);
}

/* A private tmpfs of 1 MiB, or 0 when this process may not mount. */
static int
small_fs(const char *mnt)
{
	if (unshare(CLONE_NEWNS) != 0) {
		printf("SKIP full filesystem: unshare: %s\n", strerror(errno));
		return 0;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("dwtest", mnt, "tmpfs", 0, "size=1m") != 0) {
		printf("SKIP full filesystem: mount: %s\n", strerror(errno));
		return 0;
	}
	return 1;
}

static void
fill(const char *path, size_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	static char block[4096];
	while (bytes >= sizeof block && write(fd, block, sizeof block) > 0)
		bytes -= sizeof block;
	close(fd);
}

static int
test_full_disk(const char *base)
{
	char mnt[600], dir[700], filler[700];
	snprintf(mnt, sizeof mnt, "%s/mnt", base);
	REQUIRE(mkdir(mnt, 0755) == 0);
	if (!small_fs(mnt))
		return 0;
	snprintf(dir, sizeof dir, "%s/trace", mnt);
	snprintf(filler, sizeof filler, "%s/filler", mnt);
	fill(filler, 640 << 10); /* leaves room for a few segments */
	start(dir, 0, 0);
	for (uint64_t i = 0; i < 100000; i++)
		dwt_event(EV, i);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK(st.lost_disk > 0);
	CHECK_EQ_U64(st.records + st.lost_disk, 100000);
	uint64_t first_part = st.records;
	unlink(filler); /* space comes back: recording resumes */
	for (uint64_t i = 100000; i < 120000; i++)
		dwt_event(EV, i);
	dwt_get_stats(&st);
	CHECK(st.records > first_part);
	CHECK_EQ_U64(st.records + st.lost_disk, 120000);
	dwt_fini();
	static uint64_t v[200000];
	rd_header h;
	size_t n = read_values(dir, v, 200000, &h);
	CHECK_EQ_U64(n, st.records);
	CHECK_EQ_U64(h.lost_disk, st.lost_disk);
	for (size_t i = 0; i < first_part && i < n; i++)
		if (v[i] != i) {
			CHECK_EQ_U64(v[i], i);
			break;
		}
	CHECK(n > 0 && v[n - 1] == 119999);
	umount2(mnt, MNT_DETACH); /* busy or not: rmtree follows */
	return 1;
}

int
main(void)
{
	char base[512];
	snprintf(base, sizeof base, "%s", tu_tmpdir("limits"));
	test_cap_linear(base);
	test_cap_circular(base);
	int ran = test_full_disk(base);
	tu_rmtree(base);
	int rc = tu_report("trace_limits");
	return rc ? rc : (ran ? 0 : TEST_SKIP);
}
