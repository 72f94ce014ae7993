/* Extrae_shutdown and Extrae_restart: an event, 20 ms paused (with an
 * event that must not be recorded), an event, 10 ms, fini. */
#include <time.h>

#include "extrae_user_events.h"

static void
nap(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

int
main(void)
{
	Extrae_init();
	nap(10);
	Extrae_event(1000, 1);
	nap(10);
	Extrae_shutdown();
	nap(10);
	Extrae_event(1000, 99); /* paused: not recorded */
	nap(10);
	Extrae_restart();
	nap(10);
	Extrae_event(1000, 2);
	nap(10);
	Extrae_event(1000, 0);
	Extrae_fini();
	return 0;
}
