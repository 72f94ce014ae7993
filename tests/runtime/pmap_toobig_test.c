/*
 * A pmap item whose result is over the link's limit fails as that item
 * (DW_ETOOBIG), runs once, and leaves its worker alive; the items beside
 * it in its batch are delivered (those that no longer fit in the batch's
 * reply run again in another batch).  With DW_PMAP_STOP it is the error
 * of the whole pmap, naming the item.
 */
#include "rt_util.h"
#include "testutil.h"

#define LIMIT (64u << 10) /* the smallest link limit */
#define N     24
#define BIG   7

/* Arg: u32 result size.  The result: that many bytes of (index & 0xff);
 * results over the limit are counted, to see how often they ran. */
static int
sized(const void *arg, size_t len, dw_reply *r)
{
	uint32_t v[2];
	if (len != sizeof v)
		return dw_reply_error(r, "bad argument");
	memcpy(v, arg, sizeof v);
	if (v[1] > LIMIT)
		__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	unsigned char *p = malloc(v[1] ? v[1] : 1);
	if (!p)
		return dw_reply_error(r, "out of memory");
	memset(p, (int)(v[0] & 0xff), v[1]);
	return dw_reply_take(r, p, v[1]);
}
DW_REGISTER(sized)

static int
big_runs(const int *ids, int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(ids[i], "get_counter", NULL, 0, &res,
		                        &len) != DW_OK)
			return -1;
		sum += *(int *)res;
		free(res);
	}
	return sum;
}

static int
content_ok(const dw_result *r, uint32_t idx, uint32_t size)
{
	if (r->err != DW_OK || r->len != size)
		return 0;
	for (size_t k = 0; k < r->len; k++)
		if (((unsigned char *)r->data)[k] != (idx & 0xff))
			return 0;
	return 1;
}

int
main(int argc, char **argv)
{
	dw_options o = {.procs = 2, .max_payload = LIMIT};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	REQUIRE(dw_nworkers() == 2);
	int ids[2];
	dw_workers(ids, 2);

	uint32_t args[N][2];
	dw_buf in[N];
	for (uint32_t i = 0; i < N; i++) {
		args[i][0] = i;
		/* 20 KiB each: a batch of 4 does not fit in 64 KiB */
		args[i][1] = i == BIG ? 100u << 10 : 20u << 10;
		in[i] = (dw_buf){args[i], sizeof args[i]};
	}
	dw_result out[N];
	dw_pmap_options po = {.batch_size = 4, .on_error = DW_PMAP_CONTINUE};
	CHECK(dw_pmap("sized", in, N, out, &po) == DW_OK);
	int good = 0;
	for (uint32_t i = 0; i < N; i++)
		if (i != BIG)
			good += content_ok(&out[i], i, args[i][1]);
	CHECK(good == N - 1);
	CHECK(out[BIG].err == DW_ETOOBIG);
	CHECK(out[BIG].data &&
	      strstr(out[BIG].data, "a result of 102400 bytes exceeds the "
	                            "link's limit"));
	if (out[BIG].data)
		printf("item %d: %s\n", BIG, (char *)out[BIG].data);
	CHECK(out[BIG].pid == ids[0] || out[BIG].pid == ids[1]);
	dw_results_free(out, N);
	CHECK(dw_nworkers() == 2);
	CHECK(big_runs(ids, 2) == 1); /* ran once, not on every worker */

	/* the workers still serve */
	uint32_t a[2] = {3, 1000};
	void *res;
	size_t len;
	CHECK(dw_remotecall_fetch(ids[0], "sized", a, sizeof a, &res, &len) ==
	          DW_OK &&
	      len == 1000);
	free(res);

	/* the first error stops it, naming the item */
	po.on_error = DW_PMAP_STOP;
	CHECK(dw_pmap("sized", in, N, out, &po) == DW_ETOOBIG);
	CHECK(strstr(dw_errmsg(), "item 7") != NULL);
	printf("stop: %s\n", dw_errmsg());
	dw_results_free(out, N);
	CHECK(dw_nworkers() == 2);
	CHECK(big_runs(ids, 2) == 2);
	dw_finalize();
	return tu_report("pmap_toobig");
}
