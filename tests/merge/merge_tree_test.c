/*
 * The k-way merge's order when a time does not fit the narrow loser tree
 * (timeline.c: the key above the leaf in one 64-bit number, which with
 * 4 leaves holds keys below 2^62 ns): a stream that jumps past 2^62 ns
 * turns the tree wide in the middle of the merge, and every record
 * still comes out in time order, ties by thread.
 */
#include "merge_synth.h"
#include "merge_util.h"

#define FAR (1ull << 62) /* past the narrow tree's keys with 4 leaves */

/* The events of the .prv in file order: their times and values. */
static size_t
events(const char *prefix, uint64_t *t, uint64_t *v, size_t max)
{
	char path[700], *text, *line;
	size_t n = 0;

	snprintf(path, sizeof path, "%s.prv", prefix);
	text = mt_slurp(path);
	REQUIRE(text != NULL);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long tt, vv;
		unsigned type;

		if (line[0] != '2' ||
		    sscanf(line, "2:%*u:%*u:%*u:%*u:%llu:%u:%llu", &tt, &type,
		           &vv) != 3)
			continue;
		if (n < max) {
			t[n] = tt;
			v[n] = vv;
		}
		n++;
	}
	free(text);
	return n;
}

int
main(void)
{
	const char *dir = tu_tmpdir("merge-tree");
	/* thread, time, value: the merged order is by time, then thread */
	static const uint64_t rec[][3] = {
	    {0, 1000, 1},       {1, 1200, 2},       {2, 1200, 3},
	    {1, 1500, 4},       {0, FAR + 5000, 7}, {1, FAR + 3000, 5},
	    {2, FAR + 4000, 6}, {2, FAR + 5000, 8},
	};
	static const uint64_t want[] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint64_t t[16], v[16];
	char prefix[600];
	rd_errlist errs;
	ms_proc p;
	size_t n;

	ms_proc_init(&p, dir, 0x7, 7, 0);
	for (uint32_t k = 0; k < 3; k++) {
		ms_thread th;

		ms_thread_open(&th, &p, k);
		for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++)
			if (rec[i][0] == k)
				ms_event(&th, rec[i][1], 1000, rec[i][2]);
		ms_thread_close(&th);
	}
	ms_proc_end(&p, FAR + 6000);
	ms_proc_close(&p);

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	n = events(prefix, t, v, 16);
	CHECK_EQ_U64(n, 8);
	for (size_t i = 0; i < n && i < 8; i++) {
		CHECK_EQ_U64(v[i], want[i]);
		if (i)
			CHECK(t[i] >= t[i - 1]);
	}
	/* times from the first record (time 0) */
	CHECK_EQ_U64(t[0], 0);
	CHECK_EQ_U64(t[3], 500);
	CHECK_EQ_U64(t[4], FAR + 2000);
	CHECK_EQ_U64(t[7], FAR + 4000);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
	return tu_report("merge_tree");
}
