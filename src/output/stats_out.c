/*
 * Printing the statistics: a readable report, CSV and JSON.
 */
#include <inttypes.h>
#include <string.h>

#include "output/stats.h"
#include "tracefile/events.h"

#define NAME_W 24 /* widest thread label shown in the text tables */

static const char *
thread_label(const st_thread *t)
{
	return t->label ? t->label : "-";
}

static const char *
func_name(const st_stats *s, uint64_t id, char *buf, size_t len)
{
	const char *n = st_value_name(s, TF_EV_FUNCTION, id);

	if (n)
		return n;
	snprintf(buf, len, "%" PRIu64, id);
	return buf;
}

static double
pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* ---- Text -------------------------------------------------------------- */

static void
text_row_head(FILE *f, const st_thread *t, bool first)
{
	if (first)
		fprintf(f, "  %4u  %6u  %-*.*s", t->task + 1, t->num + 1,
		        NAME_W, NAME_W, thread_label(t));
	else
		fprintf(f, "  %4s  %6s  %-*s", "", "", NAME_W, "");
}

static void
text_states(const st_stats *s, FILE *f)
{
	fprintf(f, "\nTime per state (s; %% of the trace's %.6f s)\n",
	        (double)s->duration * 1e-9);
	fprintf(f, "  %4s  %6s  %-*s  %-24s %12s %7s %9s\n", "task", "thread",
	        NAME_W, "name", "state", "time", "%", "bursts");
	for (size_t i = 0; i < s->nthreads; i++) {
		const st_thread *t = &s->threads[i];

		for (size_t k = 0; k < t->nstates; k++) {
			const st_state *e = &t->states[k];
			const char *n = st_state_name(s, e->state);
			char num[16];

			snprintf(num, sizeof num, "state %u", e->state);
			text_row_head(f, t, k == 0);
			fprintf(f, "  %-24.24s %12.6f %7.1f %9" PRIu64 "\n",
			        n ? n : num, (double)e->ns * 1e-9,
			        pct(e->ns, s->duration), e->bursts);
		}
	}
}

static void
text_events(const st_stats *s, FILE *f)
{
	bool any = false;

	for (size_t i = 0; i < s->nthreads; i++)
		any |= s->threads[i].nevents > 0;
	if (!any)
		return;
	fprintf(f, "\nEvents per type\n");
	fprintf(f, "  %4s  %6s  %-*s  %-10s %10s  %s\n", "task", "thread",
	        NAME_W, "name", "type", "count", "label");
	for (size_t i = 0; i < s->nthreads; i++) {
		const st_thread *t = &s->threads[i];

		for (size_t k = 0; k < t->nevents; k++) {
			const char *n = st_type_name(s, t->events[k].type);

			text_row_head(f, t, k == 0);
			fprintf(f, "  %-10u %10" PRIu64 "  %s\n",
			        t->events[k].type, t->events[k].count,
			        n ? n : "");
		}
	}
}

static void
text_call(const st_stats *s, FILE *f, const st_call *c)
{
	char buf[32];

	fprintf(f, "  %-24.24s %8" PRIu64 " %11.3f %11.3f %11.6f\n",
	        func_name(s, c->func, buf, sizeof buf), c->calls,
	        c->calls ? (double)c->total_ns / (double)c->calls * 1e-6 : 0,
	        (double)c->max_ns * 1e-6, (double)c->total_ns * 1e-9);
}

static void
text_calls(const st_stats *s, FILE *f)
{
	if (!s->nfuncs)
		return;
	fprintf(f, "\nFunctions run (event type %u), by name\n",
	        TF_EV_FUNCTION);
	fprintf(f, "  %4s  %6s  %-*s  %-24s %8s %11s %11s %11s\n", "task",
	        "thread", NAME_W, "name", "function", "calls", "mean (ms)",
	        "max (ms)", "total (s)");
	for (size_t i = 0; i < s->nthreads; i++) {
		const st_thread *t = &s->threads[i];

		for (size_t k = 0; k < t->ncalls; k++) {
			text_row_head(f, t, k == 0);
			text_call(s, f, &t->calls[k]);
		}
	}
	for (size_t k = 0; k < s->nfuncs; k++) {
		fprintf(f, "  %-*s", 4 + 2 + 6 + 2 + NAME_W,
		        k == 0 ? "all threads" : "");
		text_call(s, f, &s->funcs[k]);
	}
}

static void
text_messages(const st_stats *s, FILE *f)
{
	bool any = false;

	for (size_t i = 0; i < s->nthreads; i++)
		any |= s->threads[i].sent || s->threads[i].recv;
	if (!any)
		return;
	fprintf(f, "\nMessages (communications of the trace)\n");
	fprintf(f, "  %4s  %6s  %-*s  %10s %14s %10s %14s\n", "task", "thread",
	        NAME_W, "name", "sent", "bytes sent", "received", "bytes recv");
	for (size_t i = 0; i < s->nthreads; i++) {
		const st_thread *t = &s->threads[i];

		if (!t->sent && !t->recv)
			continue;
		text_row_head(f, t, true);
		fprintf(f,
		        "  %10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
		        "\n",
		        t->sent, t->sent_bytes, t->recv, t->recv_bytes);
	}
}

/* The communication efficiency split by the ideal-network replay. */
static void
text_tree(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;

	fprintf(f,
	        "  ideal network T_ideal = %.6f s (the trace replayed with "
	        "zero-time transfers)\n",
	        p->ideal * 1e-9);
	if (!p->ideal_valid) {
		fprintf(f, "  no replayed time: no serialization metrics\n");
		return;
	}
	fprintf(f,
	        "  serialization efficiency  SerE  = max(U_i) / T_ideal   = "
	        "%.6f / %.6f = %.2f\n",
	        p->max * 1e-9, p->ideal * 1e-9, p->ser);
	fprintf(f,
	        "  transfer efficiency       TrfE  = CommE / SerE = T_ideal / "
	        "T = %.2f\n",
	        p->trf);
	fprintf(f,
	        "\n  POP tree\n"
	        "  parallel efficiency         %.2f\n"
	        "    load balance              %.2f\n"
	        "    communication efficiency  %.2f\n"
	        "      serialization           %.2f\n"
	        "      transfer                %.2f\n",
	        p->pe, p->lb, p->comm, p->ser, p->trf);
	fprintf(f,
	        "\n  critical path on the ideal network: %.6f s of busy "
	        "bursts (of T_ideal %.6f s), %" PRIu64 " messages\n",
	        (double)s->path_length * 1e-9, p->ideal * 1e-9,
	        s->path_messages);
	for (size_t i = 0; i < s->npath; i++) {
		const char *n =
		    st_value_name(s, TF_EV_FUNCTION, s->path[i].func);

		if (n)
			fprintf(f, "    %-30s %12.6f s\n", n,
			        (double)s->path[i].ns * 1e-9);
		else
			fprintf(f, "    function %-21" PRIu64 " %12.6f s\n",
			        s->path[i].func, (double)s->path[i].ns * 1e-9);
	}
	fprintf(f, "    %-30s %12.6f s\n", "(in no user function)",
	        (double)s->path_other * 1e-9);
	st_print_pop_text(s, f);
}

static void
text_pop(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;

	fprintf(f, "\nEfficiency (POP metrics)\n");
	fprintf(f, "  useful time U_i of task i: time in Running %s\n",
	        s->runtime ? "on executor threads and on the master's user "
	                     "threads (I/O threads not counted)"
	                   : "on every thread (not a dwork runtime trace)");
	fprintf(f, "  %4s  %12s  %12s  %12s\n", "task", "useful (s)",
	        "calls served", "idle (s)");
	for (size_t i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].active)
			fprintf(f, "  %4zu  %12.6f  %12" PRIu64 "  %12.6f\n",
			        i + 1, (double)s->tasks[i].useful * 1e-9,
			        s->tasks[i].calls,
			        (double)s->tasks[i].idle * 1e-9);
		else
			fprintf(f, "  %4zu  %12s\n", i + 1, "(no records)");
	}
	fprintf(f, "  elapsed T = %.6f s (the trace's duration)\n",
	        p->elapsed * 1e-9);
	if (!p->valid) {
		fprintf(f, "  no useful time: no metrics\n");
		return;
	}
	fprintf(f,
	        "  load balance              LB    = mean(U_i) / max(U_i) = "
	        "%.6f / %.6f = %.2f\n",
	        p->mean * 1e-9, p->max * 1e-9, p->lb);
	fprintf(f,
	        "  communication efficiency  CommE = max(U_i) / T         = "
	        "%.6f / %.6f = %.2f\n",
	        p->max * 1e-9, p->elapsed * 1e-9, p->comm);
	fprintf(f,
	        "  parallel efficiency       PE    = LB x CommE = mean(U_i) / "
	        "T = %.2f\n",
	        p->pe);
	text_tree(s, f);
}

void
st_print_text(const st_stats *s, FILE *f)
{
	size_t active = 0;

	for (size_t i = 0; i < s->ntasks; i++)
		active += s->tasks[i].active;
	fprintf(f,
	        "%s: %zu task%s (%zu with records), %zu thread%s, %.6f s "
	        "of trace\n",
	        s->source, s->ntasks, s->ntasks == 1 ? "" : "s", active,
	        s->nthreads, s->nthreads == 1 ? "" : "s",
	        (double)s->duration * 1e-9);
	text_states(s, f);
	text_events(s, f);
	text_calls(s, f);
	text_messages(s, f);
	text_pop(s, f);
}

/* ---- CSV --------------------------------------------------------------- */

static void
csv_str(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void
csv_call(const st_stats *s, FILE *f, const char *who, const st_call *c)
{
	char buf[32];

	fprintf(f, "call,%s,%" PRIu64 ",", who, c->func);
	csv_str(f, func_name(s, c->func, buf, sizeof buf));
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", c->calls,
	        c->total_ns, c->max_ns);
}

static void
csv_thread(const st_stats *s, FILE *f, const st_thread *t)
{
	char who[32];

	snprintf(who, sizeof who, "%u,%u", t->task + 1, t->num + 1);
	fprintf(f, "thread,%s,,", who);
	csv_str(f, t->name);
	fputs(",,,\n", f);
	for (size_t k = 0; k < t->nstates; k++) {
		const st_state *e = &t->states[k];

		fprintf(f, "state,%s,%u,", who, e->state);
		csv_str(f, st_state_name(s, e->state));
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", e->bursts,
		        e->ns, e->max_ns);
	}
	for (size_t k = 0; k < t->nevents; k++) {
		fprintf(f, "event,%s,%u,", who, t->events[k].type);
		csv_str(f, st_type_name(s, t->events[k].type));
		fprintf(f, ",%" PRIu64 ",,\n", t->events[k].count);
	}
	for (size_t k = 0; k < t->ncalls; k++)
		csv_call(s, f, who, &t->calls[k]);
	if (t->sent || t->recv) {
		fprintf(f, "sent,%s,,,%" PRIu64 ",%" PRIu64 ",\n", who, t->sent,
		        t->sent_bytes);
		fprintf(f, "received,%s,,,%" PRIu64 ",%" PRIu64 ",\n", who,
		        t->recv, t->recv_bytes);
	}
}

static void
csv_metric(FILE *f, const char *key, const char *name, double v)
{
	fprintf(f, "metric,,,%s,%s,,%.6f,\n", key, name, v);
}

void
st_print_csv(const st_stats *s, FILE *f)
{
	fputs("table,task,thread,key,name,count,value,max\n", f);
	for (size_t i = 0; i < s->nthreads; i++)
		csv_thread(s, f, &s->threads[i]);
	for (size_t k = 0; k < s->nfuncs; k++)
		csv_call(s, f, ",", &s->funcs[k]);
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].active)
			fprintf(f, "useful,%zu,,,,,%" PRIu64 ",\n", i + 1,
			        s->tasks[i].useful);
	fprintf(f, "metric,,,elapsed_ns,elapsed,,%" PRIu64 ",\n", s->duration);
	st_print_pop_csv(s, f);
	if (!s->pop.valid)
		return;
	csv_metric(f, "useful_mean_ns", "mean(U_i)", s->pop.mean);
	csv_metric(f, "useful_max_ns", "max(U_i)", s->pop.max);
	csv_metric(f, "load_balance", "mean(U_i) / max(U_i)", s->pop.lb);
	csv_metric(f, "communication_efficiency", "max(U_i) / T", s->pop.comm);
	csv_metric(f, "parallel_efficiency", "mean(U_i) / T", s->pop.pe);
	if (s->pop.ideal_valid) {
		csv_metric(f, "ideal_elapsed_ns", "T_ideal", s->pop.ideal);
		csv_metric(f, "serialization_efficiency", "max(U_i) / T_ideal",
		           s->pop.ser);
		csv_metric(f, "transfer_efficiency", "T_ideal / T", s->pop.trf);
	}
}

/* ---- JSON -------------------------------------------------------------- */

static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
json_name(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\": ", key);
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

static void
json_call(const st_stats *s, FILE *f, const st_call *c)
{
	fprintf(f, "{\"function\": %" PRIu64 ", ", c->func);
	json_name(f, "name", st_value_name(s, TF_EV_FUNCTION, c->func));
	fprintf(f,
	        ", \"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64
	        ", \"mean_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 "}",
	        c->calls, c->total_ns, c->calls ? c->total_ns / c->calls : 0,
	        c->max_ns);
}

static const char *const role_names[] = {"not counted", "user", "executor"};

static void
json_thread(const st_stats *s, FILE *f, const st_thread *t)
{
	fprintf(f, "{\"thread\": %u, ", t->num + 1);
	json_name(f, "name", t->name);
	fputs(", ", f);
	json_name(f, "label", t->label);
	fprintf(f, ", \"role\": \"%s\",\n        \"states\": [",
	        role_names[t->role]);
	for (size_t k = 0; k < t->nstates; k++) {
		const st_state *e = &t->states[k];

		fprintf(f, "%s{\"state\": %u, ", k ? ", " : "", e->state);
		json_name(f, "name", st_state_name(s, e->state));
		fprintf(f,
		        ", \"ns\": %" PRIu64 ", \"bursts\": %" PRIu64
		        ", \"max_ns\": %" PRIu64 "}",
		        e->ns, e->bursts, e->max_ns);
	}
	fputs("],\n        \"events\": [", f);
	for (size_t k = 0; k < t->nevents; k++) {
		fprintf(f, "%s{\"type\": %u, ", k ? ", " : "",
		        t->events[k].type);
		json_name(f, "name", st_type_name(s, t->events[k].type));
		fprintf(f, ", \"count\": %" PRIu64 "}", t->events[k].count);
	}
	fputs("],\n        \"calls\": [", f);
	for (size_t k = 0; k < t->ncalls; k++) {
		fputs(k ? ", " : "", f);
		json_call(s, f, &t->calls[k]);
	}
	fprintf(f,
	        "],\n        \"sent\": {\"messages\": %" PRIu64
	        ", \"bytes\": %" PRIu64
	        "}, \"received\": {\"messages\": %" PRIu64
	        ", \"bytes\": %" PRIu64 "}}",
	        t->sent, t->sent_bytes, t->recv, t->recv_bytes);
}

static void
json_tasks(const st_stats *s, FILE *f)
{
	fputs("  \"tasks\": [", f);
	for (size_t i = 0; i < s->ntasks; i++) {
		const st_task *k = &s->tasks[i];

		fprintf(f,
		        "%s\n    {\"task\": %zu, \"records\": %s, "
		        "\"useful_ns\": %" PRIu64 ", \"idle_ns\": %" PRIu64
		        ", \"calls\": %" PRIu64 ", \"threads\": [",
		        i ? "," : "", i + 1, k->active ? "true" : "false",
		        k->useful, k->idle, k->calls);
		for (uint32_t t = 0; t < k->nthreads; t++) {
			uint32_t g = k->first_thread + t;

			if (g >= s->nthreads)
				break;
			fputs(t ? ",\n      " : "\n      ", f);
			json_thread(s, f, &s->threads[g]);
		}
		fputs("]}", f);
	}
	fputs("\n  ],\n", f);
}

static void
json_pop(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;

	fprintf(f, "  \"pop\": {\"useful\": \"%s\", \"elapsed_ns\": %" PRIu64,
	        s->runtime ? "Running on executor threads and on the master's "
	                     "user threads"
	                   : "Running on every thread",
	        s->duration);
	if (p->valid)
		fprintf(f,
		        ", \"useful_mean_ns\": %.3f, \"useful_max_ns\": %.3f"
		        ",\n    \"load_balance\": %.6f, "
		        "\"communication_efficiency\": %.6f, "
		        "\"parallel_efficiency\": %.6f",
		        p->mean, p->max, p->lb, p->comm, p->pe);
	fputs(",\n    \"formulas\": {\"load_balance\": \"mean(U_i) / "
	      "max(U_i)\", \"communication_efficiency\": \"max(U_i) / T\", "
	      "\"parallel_efficiency\": \"load_balance * "
	      "communication_efficiency = mean(U_i) / T\"}}\n",
	      f);
}

/* The POP tree at the top level (null when it cannot be computed). */
static void
json_num(FILE *f, const char *key, bool valid, double v)
{
	if (valid)
		fprintf(f, "  \"%s\": %.6f,\n", key, v);
	else
		fprintf(f, "  \"%s\": null,\n", key);
}

static void
json_tree(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;

	fprintf(f, "  \"ideal_elapsed_ns\": %" PRIu64 ",\n", s->ideal);
	json_num(f, "parallel_efficiency", p->valid, p->pe);
	json_num(f, "load_balance", p->valid, p->lb);
	json_num(f, "communication_efficiency", p->valid, p->comm);
	json_num(f, "serialization_efficiency", p->ideal_valid, p->ser);
	json_num(f, "transfer_efficiency", p->ideal_valid, p->trf);
	fprintf(f,
	        "  \"critical_path\": {\"length_ns\": %" PRIu64
	        ", \"messages\": %" PRIu64 ", \"other_ns\": %" PRIu64
	        ", \"functions\": [",
	        s->path_length, s->path_messages, s->path_other);
	for (size_t i = 0; i < s->npath; i++) {
		fprintf(f, "%s{\"id\": %" PRIu64 ", ", i ? ", " : "",
		        s->path[i].func);
		json_name(f, "name",
		          st_value_name(s, TF_EV_FUNCTION, s->path[i].func));
		fprintf(f, ", \"ns\": %" PRIu64 "}", s->path[i].ns);
	}
	fputs("]},\n", f);
	st_print_pop_json(s, f);
}

void
st_print_json(const st_stats *s, FILE *f)
{
	fputs("{\n  ", f);
	json_name(f, "source", s->source);
	fprintf(f, ",\n  \"duration_ns\": %" PRIu64 ",\n", s->duration);
	json_tasks(s, f);
	fputs("  \"functions\": [", f);
	for (size_t k = 0; k < s->nfuncs; k++) {
		fputs(k ? ",\n    " : "\n    ", f);
		json_call(s, f, &s->funcs[k]);
	}
	fputs(s->nfuncs ? "\n  ],\n" : "],\n", f);
	json_tree(s, f);
	json_pop(s, f);
	fputs("}\n", f);
}

/* ---- The summary and the figures of other outputs ------------------- */

void
st_print_summary(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;

	fprintf(f, "summary: %zu tasks over %.3f s\n", s->ntasks,
	        (double)s->duration * 1e-9);
	fprintf(f, "  task  useful (s)  calls served  idle (s)\n");
	for (size_t i = 0; i < s->ntasks; i++) {
		const st_task *k = &s->tasks[i];

		if (!k->active) {
			fprintf(f, "  %4zu  (no trace)\n", i + 1);
			continue;
		}
		fprintf(f, "  %4zu  %10.3f  %12" PRIu64 "  %8.3f\n", i + 1,
		        (double)k->useful * 1e-9, k->calls,
		        (double)k->idle * 1e-9);
	}
	if (!p->valid) {
		fprintf(f, "  no useful time: no metrics\n");
		return;
	}
	fprintf(f, "  load balance %.2f = mean(useful) / max(useful)\n", p->lb);
	fprintf(f, "  communication efficiency %.2f = max(useful) / elapsed\n",
	        p->comm);
	fprintf(f,
	        "  parallel efficiency %.2f = load balance x communication "
	        "efficiency\n",
	        p->pe);
}

void
st_print_figures_json(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;
	bool first = true;

	fprintf(f, "{\"elapsed_ns\":%" PRIu64 ",\"useful\":\"%s\",\"tasks\":[",
	        s->duration,
	        s->runtime ? "Running on executor threads and on the master's "
	                     "user threads"
	                   : "Running on every thread");
	for (size_t i = 0; i < s->ntasks; i++) {
		const st_task *k = &s->tasks[i];

		if (!k->active)
			continue;
		fprintf(f,
		        "%s{\"task\":%zu,\"useful_ns\":%" PRIu64
		        ",\"idle_ns\":%" PRIu64 ",\"calls\":%" PRIu64 "}",
		        first ? "" : ",", i + 1, k->useful, k->idle, k->calls);
		first = false;
	}
	fputs("]", f);
	if (p->valid)
		fprintf(f,
		        ",\"useful_mean_ns\":%.3f,\"useful_max_ns\":%.3f,"
		        "\"load_balance\":%.6f,"
		        "\"communication_efficiency\":%.6f,"
		        "\"parallel_efficiency\":%.6f",
		        p->mean, p->max, p->lb, p->comm, p->pe);
	fputs(",\"functions\":[", f);
	for (size_t k = 0; k < s->nfuncs; k++) {
		const st_call *c = &s->funcs[k];

		fprintf(f,
		        "%s{\"function\":%" PRIu64 ",\"name\":", k ? "," : "",
		        c->func);
		if (st_value_name(s, TF_EV_FUNCTION, c->func))
			json_str(f, st_value_name(s, TF_EV_FUNCTION, c->func));
		else
			fputs("null", f);
		fprintf(f,
		        ",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64
		        ",\"mean_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
		        c->calls, c->total_ns,
		        c->calls ? c->total_ns / c->calls : 0, c->max_ns);
	}
	fputs("]}", f);
}

void
st_print_figures_line(const st_stats *s, FILE *f)
{
	const st_pop *p = &s->pop;
	bool first = true;

	fputs("useful time (s):", f);
	for (size_t i = 0; i < s->ntasks; i++) {
		if (!s->tasks[i].active)
			continue;
		fprintf(f, "%s task %zu %.3f", first ? "" : ",", i + 1,
		        (double)s->tasks[i].useful * 1e-9);
		first = false;
	}
	if (!p->valid) {
		fputs("; no metrics", f);
		return;
	}
	fprintf(f,
	        "; load balance %.2f, communication efficiency %.2f, "
	        "parallel efficiency %.2f",
	        p->lb, p->comm, p->pe);
}
