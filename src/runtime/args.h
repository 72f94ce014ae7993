/* Typed arguments (args.c): the format-driven packing under the dw_*f
 * calls. */
#ifndef DW_RUNTIME_ARGS_H
#define DW_RUNTIME_ARGS_H

#include <stdarg.h>
#include <stddef.h>

#include <dwork/dwork.h>

/* The number of letters of fmt before '|' or its end; -1 for a bad one. */
int args_count(const char *fmt, size_t *n);
/* Packs the values fmt names (to: the process that will read references,
 * -1 to refuse them).  *buf malloc'd.  DW_OK, DW_EINVAL, DW_ENOMEM, or a
 * reference's export error (message set). */
int args_vpack(int to, void **buf, size_t *len, const char *fmt, va_list *ap);
/* Unpacks into the pointers fmt names; what (argument, result, value)
 * and fn name a mismatch in msg.  copy: 'b' gets a malloc'd copy instead
 * of a pointer into buf.  Returns DW_OK, DW_EFORMAT, DW_EINVAL. */
int args_vunpack(const char *what, const char *fn, const void *buf, size_t len,
                 const char *fmt, va_list *ap, int copy, char *msg,
                 size_t mlen);
/* In a remote function: the strings and arrays just unpacked into the
 * pointers of *ap0 (fmt's letters) belong to the call from now on.
 * Returns 0, or -1 when out of memory. */
int args_hold_all(dw_reply *r, const char *fmt, va_list *ap0);
/* The value of the future whose exported reference is ref/n (a typed
 * argument's ext body): imported, waited for, fetched, copied into *buf
 * (malloc'd) and released (typed_resolve.c).  DW_OK, or the fetch's
 * error with its message set. */
int args_fetch_ref(const void *ref, size_t n, void **buf, size_t *len);

#endif
