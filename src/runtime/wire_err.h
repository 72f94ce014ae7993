/*
 * Error codes on the wire.  The wire carries an error as the positive
 * number it had before dw_err turned negative (DW_EIO is 3 on the wire,
 * -3 in memory), so processes of either version read each other's
 * statuses (docs/wire-protocol.md, "Error codes").  Every status is
 * converted here, at the boundary, and nowhere else.
 */
#ifndef DW_RUNTIME_WIRE_ERR_H
#define DW_RUNTIME_WIRE_ERR_H

#include <stdint.h>

#include <dwork/error.h>

/* The wire code of err (0 for DW_OK); a positive err is taken as the
 * code it already is. */
static inline uint32_t
wire_err_put(int err)
{
	return err < 0 ? 0u - (uint32_t)err : (uint32_t)err;
}

/* The dw_err of wire code st: DW_OK for 0, `unknown` for a code this
 * process does not know. */
static inline int
wire_err_get(uint32_t st, int unknown)
{
	if (st == 0)
		return DW_OK;
	return st < (uint32_t)DW_ERR_COUNT ? -(int)st : unknown;
}

#endif
