/* Distributed.jl's jobs and results RemoteChannels: workers take job
 * ids from one channel and put what they did in another. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <dwork/dwork.h>

DW_FUNCTIONF(do_work, C, jobs, C, results)
{
	int job;
	srand48(dw_myid());
	while (dw_channel_takef(jobs, "i", &job) == DW_OK) {
		double t = drand48() / 4; /* rand() */
		usleep((useconds_t)(t * 1e6));
		dw_channel_putf(results, "idi", job, t, dw_myid());
	}
	dw_channel_free(jobs), dw_channel_free(results);
	return 0;
}

DW_FUNCTIONF(make_jobs, C, jobs, i, n)
{
	for (int i = 1; i <= n; i++)
		dw_channel_putf(jobs, "i", i);
	dw_channel_close(jobs), dw_channel_free(jobs);
	return 0;
}

DW_MAIN(argc, argv)
{
	dw_channel *jobs, *results;
	dw_future *f;
	int n = 12, ids[4], job, where;
	double t;
	dw_exit_if(dw_addprocs(4, NULL, ids) != 4 ||
	           dw_channel_new(1, 32, &jobs) ||
	           dw_channel_new(1, 32, &results) ||
	           dw_asyncf("make_jobs", &f, "Ci", jobs, n));
	for (int i = 0; i < 4; i++)
		dw_exit_if(
		    dw_remote_dof(ids[i], "do_work", "CC", jobs, results));
	for (; n > 0; n--) {
		dw_exit_if(dw_channel_takef(results, "idi", &job, &t, &where));
		printf("%d finished in %.2f seconds on worker %d\n", job, t,
		       where);
	}
	dw_future_free(f);
	dw_channel_free(jobs);
	dw_channel_free(results);
}
