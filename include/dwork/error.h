/*
 * dwork — the one error type shared by the tracer, the runtime and the
 * merge.
 *
 * Threads and blocking: dw_strerror and dw_err_from_errno never block
 * and are safe from any thread.
 */
#ifndef DWORK_ERROR_H
#define DWORK_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DW_BUILDING)
#define DW_API __attribute__((visibility("default")))
#else
#define DW_API
#endif

/* One table makes both the enum and dw_strerror()'s messages. */
#define DW_ERR_MAP(XX)                                                         \
	XX(OK, "no error")                                                     \
	XX(EINVAL, "invalid argument")                                         \
	XX(ENOMEM, "out of memory")                                            \
	XX(EIO, "input/output error")                                          \
	XX(ENOSPC, "no space left on device")                                  \
	XX(EEXIST, "already exists")                                           \
	XX(ENOENT, "no such file or directory")                                \
	XX(EACCES, "permission denied")                                        \
	XX(ESTATE, "operation not valid in the current state")                 \
	XX(ETIMEDOUT, "timed out")                                             \
	XX(EPROTO, "protocol error")                                           \
	XX(EAUTH, "authentication failed")                                     \
	XX(EVERSION, "incompatible version")                                   \
	XX(ECLOSED, "connection closed")                                       \
	XX(EEXITED, "process exited")                                          \
	XX(EREMOTE, "remote error")                                            \
	XX(ENOTFOUND, "not found")                                             \
	XX(ETOOBIG, "too large")                                               \
	XX(EFORMAT, "malformed data")                                          \
	XX(ESYS, "system error")                                               \
	XX(EAGAIN, "try again: a queue is full")                               \
	XX(EINTR, "interrupted")

/* The table's order numbers the errors; their codes are those numbers
 * negated (DW_EINVAL is -1, DW_ENOMEM -2, ...), as libuv's UV_E* are. */
enum dw_err_index_ {
#define DW_XX_INDEX(name, msg) DW_ERR_INDEX_##name##_,
	DW_ERR_MAP(DW_XX_INDEX)
#undef DW_XX_INDEX
	    DW_ERR_INDEX_COUNT_
};

/*
 * Every call of dwork returns DW_OK (0) or one of these negative codes;
 * a call that returns a count or an id returns it as a value >= 0, so
 * one test, `r < 0`, serves every call.  Compare with the names
 * (`r == DW_EEXITED`), never with numbers.
 */
typedef enum dw_err {
#define DW_XX_ENUM(name, msg) DW_##name = -DW_ERR_INDEX_##name##_,
	DW_ERR_MAP(DW_XX_ENUM)
#undef DW_XX_ENUM
	/* How many codes there are (not an error): DW_OK down to
	 * -(DW_ERR_COUNT - 1). */
	DW_ERR_COUNT = DW_ERR_INDEX_COUNT_
} dw_err;

/* A static, human-readable message for err (never NULL).  Either sign
 * is accepted: dw_strerror(DW_ETIMEDOUT) and dw_strerror(-DW_ETIMEDOUT)
 * both say "timed out", so code written when the codes were positive
 * still prints the right message. */
DW_API const char *dw_strerror(int err);

/* Maps an errno value (positive, as errno holds it) onto the closest
 * dw_err (negative). */
DW_API dw_err dw_err_from_errno(int errnum);

#ifdef __cplusplus
}
#endif
#endif
