/*
 * Must not compile (the runtime_wait_poison test): runtime code that
 * waits on a condition variable without naming the state of its wait.
 * rt.h poisons the raw waits; rt_cond_wait is the only way to wait.
 */
#include "runtime/rt.h"

void probe_wait(pthread_cond_t *cv, pthread_mutex_t *m);

void
probe_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
	pthread_cond_wait(cv, m);
}
