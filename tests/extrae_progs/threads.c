/* Two pthreads beside main, with Extrae's thread id callbacks: each
 * thread records an event of its own value after 10 ms, the main thread
 * joins them, then records its own. */
#include <pthread.h>
#include <time.h>

#include "extrae_user_events.h"

static __thread unsigned my_id;

static unsigned
threadid(void)
{
	return my_id;
}

static unsigned
numthreads(void)
{
	return 3;
}

static void
nap(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void *
body(void *arg)
{
	my_id = (unsigned)(unsigned long)arg;
	nap(10 * my_id);
	Extrae_event(2000, my_id);
	nap(10);
	Extrae_event(2000, 0);
	return NULL;
}

int
main(void)
{
	pthread_t t[2];
	Extrae_set_threadid_function(threadid);
	Extrae_set_numthreads_function(numthreads);
	Extrae_init();
	Extrae_event(2000, 100);
	for (unsigned long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, body, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	Extrae_event(2000, 0);
	nap(10);
	Extrae_fini();
	return 0;
}
