/*
 * Types of the Extrae user API, as libdwtrace implements it (see
 * extrae_user_events.h and docs/extrae-compat.md).  Names, values and
 * struct layouts are those of Extrae's documented API, so that code and
 * foreign-function bindings written for Extrae work unchanged.  C (C99 or
 * later: the API uses long long) and C++ (C++11 or later).
 */
#ifndef EXTRAE_TYPES_INCLUDED
#define EXTRAE_TYPES_INCLUDED

#ifdef __cplusplus
extern "C" {
#endif

/* How the tracer was first initialised (Extrae_is_initialized).  dwork
 * reports EXTRAE_INITIALIZED_EXTRAE_INIT whatever started it. */
enum extrae_INIT_TYPE {
	EXTRAE_NOT_INITIALIZED = 0,
	EXTRAE_INITIALIZED_EXTRAE_INIT = 1,
	EXTRAE_INITIALIZED_MPI_INIT = 2,
	EXTRAE_INITIALIZED_SHMEM_INIT = 3
};
typedef enum extrae_INIT_TYPE extrae_init_type_t;

/* Direction of a user communication. */
enum extrae_USER_COMMUNICATION_TYPES {
	EXTRAE_USER_SEND = 0,
	EXTRAE_USER_RECV = 1
};
typedef enum extrae_USER_COMMUNICATION_TYPES extrae_user_communication_types_t;

/* What extrae_combined_events_t.UserFunction asks for. */
enum extrae_USER_FUNCTION {
	EXTRAE_USER_FUNCTION_NONE = -1,
	EXTRAE_USER_FUNCTION_LEAVE = 0,
	EXTRAE_USER_FUNCTION_ENTER = 1
};
typedef enum extrae_USER_FUNCTION extrae_user_function_t;

typedef unsigned extrae_type_t;            /* an event type */
typedef unsigned long long extrae_value_t; /* an event value */
typedef unsigned extrae_comm_tag_t;
typedef unsigned extrae_comm_partner_t; /* the other side's task id */
typedef long long extrae_comm_id_t;     /* pairs a send with its receive */

/* A partner meaning "the calling task itself". */
#define EXTRAE_COMM_PARTNER_MYSELF ((extrae_comm_partner_t)0xFFFFFFFF)

/* One side of a communication between tasks.  A send and a receive with
 * the same (sender, receiver, id) are drawn as one message. */
struct extrae_UserCommunication {
	extrae_user_communication_types_t type;
	extrae_comm_tag_t tag;
	unsigned size; /* bytes */
	extrae_comm_partner_t partner;
	extrae_comm_id_t id;
};
typedef struct extrae_UserCommunication extrae_user_communication_t;

/* Several records at one timestamp (Extrae_emit_CombinedEvents). */
struct extrae_CombinedEvents {
	int HardwareCounters; /* nonzero: also record the counters */
	int Callers;          /* nonzero: call stack (accepted, not recorded) */
	int UserFunction;     /* an extrae_user_function_t */
	unsigned nEvents;
	extrae_type_t *Types;
	extrae_value_t *Values;
	unsigned nCommunications;
	extrae_user_communication_t *Communications;
};
typedef struct extrae_CombinedEvents extrae_combined_events_t;

#ifdef __cplusplus
}
#endif
#endif
