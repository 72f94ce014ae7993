/*
 * Source lines of the user function addresses a process recorded, read
 * from their DWARF line tables through elfutils' libdwfl (libdw) when
 * libdwtrace was built with it.  Without it no line is found, and the
 * merge labels them "??:0" as Extrae does without debug information.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace/tracer.h"

#ifdef DW_HAVE_LIBDW
#include <elfutils/libdwfl.h>

static char *srcl_debuginfo_path;

static const Dwfl_Callbacks srcl_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &srcl_debuginfo_path,
};

struct srcl *
srcl_open(void)
{
	Dwfl *d = dwfl_begin(&srcl_callbacks);
	if (!d)
		return NULL;
	if (dwfl_linux_proc_report(d, getpid()) != 0 ||
	    dwfl_report_end(d, NULL, NULL) != 0) {
		dwfl_end(d);
		return NULL;
	}
	return (struct srcl *)d;
}

/* The address is where the call to Extrae_user_function returns, as
 * Extrae looks it up (not minus one): the line of the call itself for a
 * call whose result is used, else possibly the next one. */
int
srcl_find(struct srcl *s, uint64_t addr, char *file, size_t len, uint32_t *line)
{
	Dwfl *d = (Dwfl *)s;
	Dwfl_Module *m = d ? dwfl_addrmodule(d, (Dwarf_Addr)addr) : NULL;
	Dwfl_Line *l = m ? dwfl_module_getsrc(m, (Dwarf_Addr)addr) : NULL;
	int ln = 0;
	const char *f =
	    l ? dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
	if (!f || ln <= 0)
		return -1;
	snprintf(file, len, "%s", f);
	*line = (uint32_t)ln;
	return 0;
}

void
srcl_close(struct srcl *s)
{
	if (s)
		dwfl_end((Dwfl *)s);
}

#else /* no libdw: no lines */

struct srcl *
srcl_open(void)
{
	return NULL;
}

int
srcl_find(struct srcl *s, uint64_t addr, char *file, size_t len, uint32_t *line)
{
	(void)s, (void)addr, (void)file, (void)len, (void)line;
	return -1;
}

void
srcl_close(struct srcl *s)
{
	(void)s;
}
#endif
