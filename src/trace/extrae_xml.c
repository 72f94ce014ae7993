/*
 * Extrae's XML configuration file (EXTRAE_CONFIG_FILE), read with
 * libxml2 when this library was built with it: the parts that map onto
 * the tracer (enabled, trace prefix, directories, buffer and file size,
 * circular buffer, counters on/off), with $VAR$ substitution.  Every other
 * element is reported once, in one line, as ignored.
 */
#include <stdio.h>
#include <string.h>

#include "trace/extrae_int.h"
#include "trace/tracer.h"

#ifndef DW_HAVE_LIBXML2

int
xcfg_xml(struct xcfg *x, const char *path)
{
	(void)x;
	trc_err("EXTRAE_CONFIG_FILE='%s': XML configuration files need "
	        "libxml2, which this libdwtrace was built without; using the "
	        "EXTRAE_* environment variables",
	        path);
	return DW_ENOTFOUND;
}

#else

#include <libxml/parser.h>
#include <libxml/tree.h>

/* One reading of a file: where it is and what was left out. */
struct xml_ctx {
	struct xcfg *x;
	const char *path;
	char ignored[1024]; /* "<mpi>, <openmp>" */
	int err;
};

static int
xml_is(const xmlNode *n, const char *name)
{
	return strcmp((const char *)n->name, name) == 0;
}

/* 1 when item is already in the ", "-separated list. */
static int
xml_listed(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = strstr(list, item); p; p = strstr(p + 1, item))
		if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

static void
xml_ignore(struct xml_ctx *c, const xmlNode *n, const char *parent)
{
	char item[160];
	snprintf(item, sizeof item, "%s<%s>", parent, (const char *)n->name);
	if (xml_listed(c->ignored, item))
		return;
	size_t used = strlen(c->ignored);
	if (used + strlen(item) + 8 > sizeof c->ignored) {
		if (!xml_listed(c->ignored, "..."))
			strcat(c->ignored, ", ...");
		return;
	}
	if (used)
		strcat(c->ignored, ", ");
	strcat(c->ignored, item);
}

/* The text of n (attr NULL) or of its attribute, with $VAR$ replaced;
 * NULL when absent or when a variable is missing (reported). */
static const char *
xml_value(struct xml_ctx *c, const xmlNode *n, const char *attr, char *out,
          size_t len)
{
	xmlChar *raw =
	    attr ? xmlGetProp(n, (const xmlChar *)attr) : xmlNodeGetContent(n);
	char missing[256];
	const char *r = out;
	if (!raw)
		return NULL;
	if (xcfg_subst((const char *)raw, out, len, missing, sizeof missing)) {
		trc_err("%s line %ld: <%s>%s%s: %s%s%s; setting ignored",
		        c->path, xmlGetLineNo(n), (const char *)n->name,
		        attr ? " " : "", attr ? attr : "",
		        missing[0] ? "environment variable " : "value too long",
		        missing, missing[0] ? " is not set" : "");
		r = NULL;
	}
	xmlFree(raw);
	return r;
}

/* enabled="..." of n: 1, 0, or -1 on a bad value (reported).  A node
 * without the attribute counts as enabled. */
static int
xml_enabled(struct xml_ctx *c, const xmlNode *n)
{
	char v[64];
	int on = 1;
	if (!xml_value(c, n, "enabled", v, sizeof v))
		return 1;
	if (cfg_bool(v, &on)) {
		trc_err("%s line %ld: <%s enabled>='%s' is not valid: expected "
		        "yes or no",
		        c->path, xmlGetLineNo(n), (const char *)n->name, v);
		c->err = DW_EINVAL;
		return -1;
	}
	return on;
}

/* Whether an element this library ignores was asked for (no message). */
static int
xml_wanted(const xmlNode *n)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)"enabled");
	int on = 1;
	if (v && cfg_bool((const char *)v, &on))
		on = 1;
	xmlFree(v);
	return on;
}

/* Extrae takes <trace-prefix> only with enabled="yes" written out. */
static int
xml_has_enabled(const xmlNode *n)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)"enabled");
	int has = v != NULL;
	xmlFree(v);
	return has;
}

/* Applies the text of an enabled leaf n to setting k. */
static void
xml_leaf(struct xml_ctx *c, const xmlNode *n, enum xcfg_key k)
{
	char v[4096], origin[512];
	if (xml_enabled(c, n) != 1 || !xml_value(c, n, NULL, v, sizeof v))
		return;
	snprintf(origin, sizeof origin, "%s line %ld: <%s>", c->path,
	         xmlGetLineNo(n), (const char *)n->name);
	if (xcfg_set(c->x, k, origin, v) != DW_OK)
		c->err = DW_EINVAL;
}

static void
xml_storage(struct xml_ctx *c, const xmlNode *p)
{
	for (const xmlNode *n = p->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (xml_is(n, "trace-prefix") && xml_has_enabled(n))
			xml_leaf(c, n,
			         XK_PROGRAM); /* else "TRACE", as Extrae */
		else if (xml_is(n, "size"))
			xml_leaf(c, n, XK_FILE_SIZE);
		else if (xml_is(n, "temporal-directory"))
			xml_leaf(c, n, XK_DIR);
		else if (xml_is(n, "final-directory"))
			xml_leaf(c, n, XK_FINAL_DIR);
		else if (xml_wanted(n))
			xml_ignore(c, n, "<storage>");
	}
}

static void
xml_buffer(struct xml_ctx *c, const xmlNode *p)
{
	for (const xmlNode *n = p->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (xml_is(n, "size")) {
			xml_leaf(c, n, XK_BUFFER);
		} else if (xml_is(n, "circular")) {
			int on = xml_enabled(c, n);
			if (on >= 0)
				c->x->cfg.circular = on;
		} else if (xml_wanted(n)) {
			xml_ignore(c, n, "<buffer>");
		}
	}
}

/* <counters enabled>: whether counters are recorded; the counter sets
 * inside cannot be chosen (one fixed set) and are reported. */
static void
xml_counters(struct xml_ctx *c, const xmlNode *p)
{
	int on = xml_enabled(c, p);
	if (on < 0)
		return;
	c->x->counters = on;
	for (const xmlNode *n = p->children; on && n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && xml_wanted(n))
			xml_ignore(c, n, "<counters>");
}

static void
xml_section(struct xml_ctx *c, const xmlNode *n)
{
	if (xml_is(n, "counters"))
		xml_counters(c, n);
	else if (xml_is(n, "storage") && xml_enabled(c, n) == 1)
		xml_storage(c, n);
	else if (xml_is(n, "buffer") && xml_enabled(c, n) == 1)
		xml_buffer(c, n);
	else if (!xml_is(n, "storage") && !xml_is(n, "buffer") && xml_wanted(n))
		xml_ignore(c, n, "");
}

static void
xml_trace(struct xml_ctx *c, const xmlNode *root)
{
	int on = xml_enabled(c, root);
	if (on < 0)
		return;
	c->x->cfg.enabled = on;
	for (const xmlNode *n = root->children; on && n; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			xml_section(c, n);
}

static xmlDoc *
xml_open(const char *path)
{
	xmlInitParser();
	xmlDoc *d = xmlReadFile(path, NULL,
	                        XML_PARSE_NONET | XML_PARSE_NOERROR |
	                            XML_PARSE_NOWARNING);
	if (d)
		return d;
	const xmlError *e = xmlGetLastError();
	char msg[512] = "cannot be read or is not well-formed XML";
	if (e && e->message && e->line > 0)
		snprintf(msg, sizeof msg, "line %d: %s", e->line, e->message);
	else if (e && e->message)
		snprintf(msg, sizeof msg, "%s", e->message);
	msg[strcspn(msg, "\n")] = 0;
	trc_err("EXTRAE_CONFIG_FILE='%s': %s; tracing stays off", path, msg);
	return NULL;
}

int
xcfg_xml(struct xcfg *x, const char *path)
{
	struct xml_ctx c = {.x = x, .path = path};
	xmlDoc *d = xml_open(path);
	if (!d)
		return DW_EINVAL;
	xmlNode *root = xmlDocGetRootElement(d);
	if (root && xml_is(root, "trace")) {
		xml_trace(&c, root);
	} else {
		trc_err("EXTRAE_CONFIG_FILE='%s': the root element must be "
		        "<trace>; tracing stays off",
		        path);
		c.err = DW_EINVAL;
	}
	if (c.ignored[0])
		trc_err("%s: ignored (not used by dwork's tracer, see "
		        "docs/extrae-compat.md): %s",
		        path, c.ignored);
	xmlFreeDoc(d);
	return c.err ? DW_EINVAL : DW_OK;
}

#endif
