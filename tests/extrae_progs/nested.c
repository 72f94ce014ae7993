/* Nested user functions: visible_fn -> f -> g, each marked with
 * Extrae_user_function, g sleeping 20 ms.  Built with -g. */
#include <time.h>

#include "extrae_user_events.h"

static void
nap(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void
g(void)
{
	Extrae_user_function(1);
	nap(20);
	Extrae_user_function(0);
}

__attribute__((noinline)) static void
f(void)
{
	Extrae_user_function(1);
	g();
	Extrae_user_function(0);
}

__attribute__((noinline)) void
visible_fn(void)
{
	Extrae_user_function(1);
	f();
	Extrae_user_function(0);
}

int
main(void)
{
	Extrae_init();
	visible_fn();
	nap(10);
	visible_fn();
	Extrae_fini();
	return 0;
}
