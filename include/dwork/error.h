/* dwork — the one error type shared by the tracer and the runtime. */
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

typedef enum dw_err {
#define DW_XX_ENUM(name, msg) DW_##name,
	DW_ERR_MAP(DW_XX_ENUM)
#undef DW_XX_ENUM
	    DW_ERR_COUNT
} dw_err;

/* Returns a static, human-readable message for err (never NULL). */
DW_API const char *dw_strerror(int err);

/* Maps an errno value onto the closest dw_err. */
DW_API dw_err dw_err_from_errno(int errnum);

#ifdef __cplusplus
}
#endif
#endif
