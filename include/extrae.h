/* Extrae's umbrella header: the user API of extrae_user_events.h. */
#ifndef EXTRAE_H_INCLUDED
#define EXTRAE_H_INCLUDED
#include "extrae_user_events.h"
#endif
