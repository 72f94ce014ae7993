/* prep.c's file and mapping steps, none under its lock (prep_file.c). */
#ifndef DW_TRACE_PREP_FILE_H
#define DW_TRACE_PREP_FILE_H

#include <semaphore.h>
#include <stdint.h>

#include "trace/tracer.h"

#define PREP_CHUNK (256u << 10) /* faulted in (or unmapped) at a time */
/* A sleeping helper's look at jobs left without a wake-up (a taken kit's
 * name, prep_name_later): how long a thread's file may keep its spare
 * name. */
#define PREP_POLL_MS 100u

/* Offset of segment idx in a thread file. */
uint64_t prep_seg_off(uint64_t idx);
/* Maps segment idx of fd (not faulted in); NULL on failure. */
unsigned char *prep_mapseg(int fd, uint64_t idx);
/* A chunk of segment idx, mapped at m, read in and made writable. */
void prep_fault_in(int fd, uint64_t idx, unsigned char *m, uint64_t off,
                   uint64_t len);
/* Grows fd by segment idx and maps it; NULL on failure. */
unsigned char *prep_grow(int fd, uint64_t idx);
/* A full segment unmapped a chunk at a time. */
void prep_unmap(unsigned char *m);
/* A kit freed: its mappings, its file closed (and removed: remove). */
void prep_kit_free(struct buf *k, int remove);
/* A taken kit's file renamed to its thread's name. */
void prep_name_file(struct buf *b);
/* The registration's calibration pair written, unless fini did. */
void prep_write_calib(struct buf *b);
/* Waits on s, at most ms milliseconds (0: no limit). */
void prep_sem_sleep(sem_t *s, unsigned ms);

#endif
