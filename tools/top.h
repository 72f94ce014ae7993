/* dwork top's parts (cmd_top.c, top_page.c). */
#ifndef DW_TOOLS_TOP_H
#define DW_TOOLS_TOP_H

#include <stddef.h>

/* A snapshot from the master on control link fd: fmt 0 JSON, 1 text.
 * malloc'd and NUL-terminated, *len bytes; NULL when the link ended. */
char *top_request(int fd, int fmt, size_t *len);
/* Serves the live page and its snapshots on HOST:PORT (port 0: any, the
 * chosen one is printed) until the master ends or a signal stops it. */
int top_http(int fd, const char *addr);

#endif
