/*
 * Label lookups for the writers: the name of a state, an event type, a
 * value, a user function, from the trace's labels (merge/writer.h).
 */
#ifndef DW_OUTPUT_LABELS_H
#define DW_OUTPUT_LABELS_H

#include "merge/writer.h"

#define LB_TYPE_FUNC         60000019u /* user functions (as Extrae) */
#define LB_TYPE_FUNC_LINE    60000119u /* their lines: beside each one */
#define LB_STATE_NOT_CREATED 2u
#define LB_TYPE_RUN          71000001u /* dwork: remote function running */
#define LB_TYPE_BATCH        71000016u /* dwork: user functions carried by */

/* What a message of the dwork runtime is, by its tag (docs/tracing.md):
 * "call", "result", "fetch", "fetched result", "request", "answer";
 * NULL for another tag. */
const char *lb_comm_kind(uint32_t tag);

/* Whether the trace is the dwork runtime's: it labels type 71000001. */
bool lb_is_runtime(const mg_labels *lb);

/* The label of state, or NULL. */
const mg_state_label *lb_state(const mg_labels *lb, uint32_t state);

/* The label of type, or NULL. */
const mg_type_label *lb_type(const mg_labels *lb, uint32_t type);

/* The name of value in t (t may be NULL), or NULL. */
const char *lb_value(const mg_type_label *t, uint64_t value);

/* The name of user function id: through info->func_name while the merge
 * runs, else the labels; NULL when unknown. */
const char *lb_func(const mg_info *info, uint64_t id);

#endif
