/*
 * Link-time stand-in for Extrae 5.1.2's libseqtrace: a library whose
 * soname is libseqtrace-5.1.2.so, so that a program linked with it asks
 * the loader for that name, as a program linked with real Extrae does.
 * It is never loaded when the test runs: the loader finds dwork's
 * libseqtrace-5.1.2.so first (LD_LIBRARY_PATH), and its functions run.
 */
#include "extrae_user_events.h"

void
Extrae_init(void)
{
}

void
Extrae_fini(void)
{
}

void
Extrae_event(extrae_type_t type, extrae_value_t value)
{
	(void)type, (void)value;
}

void
Extrae_nevent(unsigned count, extrae_type_t *types, extrae_value_t *values)
{
	(void)count, (void)types, (void)values;
}

void
Extrae_define_event_type(extrae_type_t *type, char *description,
                         unsigned *nvalues, extrae_value_t *values,
                         char **description_values)
{
	(void)type, (void)description, (void)nvalues, (void)values;
	(void)description_values;
}
