/* Events with labels: a type with three named values, a type without
 * values, Extrae_nevent, then Extrae_fini.  10 ms between steps. */
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
	extrae_type_t phase = 1000, count = 1001;
	extrae_value_t v[3] = {0, 1, 2};
	char *names[3] = {"End", "Compute", "Communicate"};
	unsigned n = 3, zero = 0;
	Extrae_init();
	Extrae_define_event_type(&phase, "Phase", &n, v, names);
	Extrae_define_event_type(&count, "Count", &zero, NULL, NULL);
	nap(10);
	Extrae_event(1000, 1);
	nap(10);
	Extrae_event(1001, 42);
	nap(10);
	extrae_type_t ts[2] = {1000, 1001};
	extrae_value_t vs[2] = {2, 7};
	Extrae_nevent(2, ts, vs);
	nap(10);
	Extrae_event(1000, 0);
	nap(10);
	Extrae_fini();
	return 0;
}
