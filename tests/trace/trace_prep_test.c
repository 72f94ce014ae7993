/*
 * Files prepared ahead (src/trace/prep.c): dwt_init returns with the
 * next thread's file ready, so the first thread to record after init
 * takes the prepared one.  Its first record must land in its own file,
 * named as the thread (renamed by the helper, not by the thread), with
 * the time it was made; the registration's calibration pair must be in
 * the process file; no spare file may be left after fini.  A thread id
 * callback that repeats an id gives two files (the second with a
 * suffix), whichever of them was prepared.
 */
#include <dirent.h>
#include <pthread.h>

#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

#define MS      1000000ull
#define EV      7100u
#define NTH     3
#define SEGMENT (4u << 20)

struct first {
	uint64_t before, after; /* dwt_now_ns around the first record */
	uint64_t value;
};

static void *
recorder(void *p)
{
	struct first *f = p;
	f->before = dwt_now_ns();
	dwt_event(EV, f->value);
	f->after = dwt_now_ns();
	dwt_event(EV, f->value + 100);
	return NULL;
}

static void
run_thread(struct first *f)
{
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, recorder, f) == 0);
	pthread_join(th, NULL);
}

static void
start(const char *dir, const char *program)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = program;
	c.segment_size = SEGMENT;
	REQUIRE(dwt_init(&c) == DW_OK);
}

/* Names in dir ending in suffix. */
static int
count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	size_t ls = strlen(suffix);
	REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		n += l >= ls && strcmp(de->d_name + l - ls, suffix) == 0;
	}
	closedir(d);
	return n;
}

/* The thread file's first event: its value, and its time in ns. */
static void
first_event(const char *path, rd_calib *k, uint64_t *value, int64_t *ns)
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_thread *t;
	rd_rec r;
	*value = UINT64_MAX;
	REQUIRE(rd_thread_open(path, &errs, &t) == DW_OK);
	CHECK(rd_calib_add_thread(k, t) == DW_OK);
	while (rd_thread_next(t, &r))
		if (r.kind == FMT_R_EVENT && r.u.event.type == EV) {
			*value = r.u.event.value;
			*ns = rd_calib_to_ns(k, r.ticks);
			break;
		}
	rd_thread_close(t);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
}

static void
check_sequential(const char *dir, const struct first *f)
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d = NULL;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	REQUIRE(d->nprocs == 1);
	rd_dir_proc *dp = &d->procs[0];
	CHECK_EQ_U64(dp->nthreads, NTH);
	rd_proc *p;
	REQUIRE(rd_proc_open(dp->proc_path, &errs, &p) == DW_OK);
	/* one pair a registration (init's and fini's are elsewhere) */
	CHECK_EQ_U64(p->ncalib, NTH);
	rd_calib k;
	rd_calib_init(&k, dp->hdr.clock, dp->hdr.ticks_per_s);
	CHECK(rd_calib_add_proc(&k, p) == DW_OK);
	for (size_t i = 0; i < dp->nthreads && i < NTH; i++) {
		CHECK_EQ_U64(dp->thread_ids[i], i);
		char want[64];
		snprintf(want, sizeof want, ".%zu.dwt", i);
		const char *path = dp->thread_paths[i];
		CHECK(strlen(path) > strlen(want) &&
		      strcmp(path + strlen(path) - strlen(want), want) == 0);
		uint64_t v;
		int64_t ns = 0;
		first_event(path, &k, &v, &ns);
		CHECK_EQ_U64(v, f[i].value);
		/* the record's time lies between the clock reads around it
		 * (1 ms for the calibration's interpolation) */
		CHECK(ns + (int64_t)MS >= (int64_t)f[i].before);
		CHECK(ns <= (int64_t)f[i].after + (int64_t)MS);
	}
	rd_calib_free(&k);
	rd_proc_close(p);
	rd_dir_close(d);
	rd_errlist_free(&errs);
}

/* The first thread after init takes the prepared file (nothing else
 * recorded before it); the later ones take one if it is ready. */
static void
test_sequential(void)
{
	const char *tmp = tu_tmpdir("prep");
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir, "prep");
	CHECK(count_suffix(dir, ".dwt-spare") >= 1); /* ready at init */
	struct first f[NTH];
	for (int i = 0; i < NTH; i++) {
		f[i] = (struct first){.value = 10u + (unsigned)i};
		usleep(20000);
		run_thread(&f[i]);
	}
	dwt_fini();
	CHECK_EQ_U64(count_suffix(dir, ".dwt-spare"), 0);
	CHECK_EQ_U64(count_suffix(dir, ".dwt"), NTH);
	check_sequential(dir, f);
	tu_rmtree(dir);
}

static uint32_t
same_id(void)
{
	return 5;
}

static void
test_repeated_id(void)
{
	const char *tmp = tu_tmpdir("prepid");
	char dir[512], path[800];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir, "prepid");
	dwt_set_thread_fn(same_id);
	struct first a = {.value = 1}, b = {.value = 2};
	run_thread(&a); /* the prepared file */
	run_thread(&b); /* prepared or made at once: either way */
	dwt_fini();
	dwt_set_thread_fn(NULL);
	CHECK_EQ_U64(count_suffix(dir, ".dwt-spare"), 0);
	CHECK_EQ_U64(count_suffix(dir, ".5.dwt"), 1);
	CHECK_EQ_U64(count_suffix(dir, ".5-1.dwt"), 1);
	uint64_t seen = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 4, ".dwt"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		rd_calib k;
		rd_calib_init(&k, FMT_CLOCK_MONO_RAW, 1000000000u);
		uint64_t v;
		int64_t ns;
		first_event(path, &k, &v, &ns);
		rd_calib_free(&k);
		seen |= 1u << (v & 7);
	}
	closedir(d);
	CHECK_EQ_U64(seen, (1u << 1) | (1u << 2)); /* each in its own file */
	tu_rmtree(dir);
}

int
main(void)
{
	test_sequential();
	test_repeated_id();
	return tu_report("trace_prep");
}
