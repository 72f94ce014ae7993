/* A user communication from the task to itself: a send, 10 ms, the
 * matching receive (same id), each with an event at its time. */
#include <time.h>

#include "extrae_user_events.h"

static void
nap(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void
side(extrae_user_communication_types_t dir, extrae_value_t v)
{
	extrae_user_communication_t c;
	extrae_combined_events_t e;
	extrae_type_t t = 3000;
	Extrae_init_UserCommunication(&c);
	c.type = dir;
	c.tag = 5;
	c.size = 64;
	c.partner = EXTRAE_COMM_PARTNER_MYSELF;
	c.id = 77;
	Extrae_init_CombinedEvents(&e);
	e.nEvents = 1, e.Types = &t, e.Values = &v;
	e.nCommunications = 1, e.Communications = &c;
	Extrae_emit_CombinedEvents(&e);
}

int
main(void)
{
	Extrae_init();
	nap(10);
	side(EXTRAE_USER_SEND, 1);
	nap(10);
	side(EXTRAE_USER_RECV, 2);
	nap(10);
	Extrae_event(3000, 0);
	Extrae_fini();
	return 0;
}
