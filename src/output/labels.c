/* Label lookups for the writers (labels.h). */
#include "output/labels.h"

const mg_state_label *
lb_state(const mg_labels *lb, uint32_t state)
{
	size_t lo = 0, hi = lb ? lb->nstates : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lb->states[mid].state == state)
			return &lb->states[mid];
		if (lb->states[mid].state < state)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const mg_type_label *
lb_type(const mg_labels *lb, uint32_t type)
{
	size_t lo = 0, hi = lb ? lb->ntypes : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lb->types[mid].type == type)
			return &lb->types[mid];
		if (lb->types[mid].type < type)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
lb_value(const mg_type_label *t, uint64_t value)
{
	size_t lo = 0, hi = t ? t->nvalues : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->values[mid].value == value)
			return t->values[mid].name;
		if (t->values[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
lb_comm_kind(uint32_t tag)
{
	static const char *const kinds[] = {
	    "call", "result", "fetch", "fetched result", "request", "answer"};

	return tag < sizeof kinds / sizeof kinds[0] ? kinds[tag] : NULL;
}

bool
lb_is_runtime(const mg_labels *lb)
{
	return lb && lb_type(lb, LB_TYPE_RUN) != NULL;
}

const char *
lb_func(const mg_info *info, uint64_t id)
{
	const char *s = info->func_name ? info->func_name(info, id) : NULL;

	return s ? s : lb_value(lb_type(info->labels, LB_TYPE_FUNC), id);
}
