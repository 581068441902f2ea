/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* INI parsing with line numbers and ${variables} (see rb2_config.h). */

#define _GNU_SOURCE /* memmem */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb2_config.h"

#define CFG_FILE_MAX (16u << 20) /* a config larger than this is a mistake */

struct parser {
	struct rb2_cfg *cfg;
	struct rb2_cfg_var *vars;
	unsigned int nvars;
	unsigned int line;
	char *err;
	size_t errlen;
};

static int
fail(struct parser *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err != NULL && p->errlen > 0)
		snprintf(p->err, p->errlen, "%s:%u: %s", p->cfg->path, p->line, msg);
	return -EINVAL;
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* A comment starts at ';' or '#' at the line's start or after a blank. */
static void
strip_comment(char *s)
{
	for (char *c = s; *c != '\0'; c++)
		if ((*c == ';' || *c == '#') && (c == s || c[-1] == ' ' || c[-1] == '\t')) {
			*c = '\0';
			return;
		}
}

static int
valid_name(const char *s, int allow_space)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("_.-:", *s) == NULL &&
		    !(allow_space && *s == ' '))
			return 0;
	return 1;
}

/* Append @p n bytes to a growing buffer. */
static int
append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*cap == 0 ? 64 : *cap);
		char *b;

		while (*len + n + 1 > c)
			c *= 2;
		b = realloc(*buf, c);
		if (b == NULL)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* Substitute ${name} and ${name:-default} in @p in. */
static int
substitute(struct parser *p, const char *in, char **out)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret = append(&buf, &len, &cap, "", 0);

	while (ret == 0 && *in != '\0') {
		const char *open = strstr(in, "${"), *close, *dflt;
		char name[64];
		size_t nlen;
		struct rb2_cfg_var *v = NULL;

		if (open == NULL) {
			ret = append(&buf, &len, &cap, in, strlen(in));
			break;
		}
		ret = append(&buf, &len, &cap, in, (size_t)(open - in));
		if (ret != 0)
			break;
		close = strchr(open, '}');
		if (close == NULL) {
			ret = fail(p, "unterminated '${' (write ${name} or ${name:-default})");
			break;
		}
		if (memmem(open + 2, (size_t)(close - open - 2), "${", 2) != NULL) {
			ret = fail(p, "a variable inside a variable ('%.*s') is not supported",
				   (int)(close - open + 1), open);
			break;
		}
		dflt = strstr(open, ":-");
		if (dflt != NULL && dflt > close)
			dflt = NULL;
		nlen = (size_t)((dflt != NULL ? dflt : close) - open - 2);
		if (nlen == 0 || nlen >= sizeof(name)) {
			ret = fail(p, "bad variable name in '%.*s'", (int)(close - open + 1), open);
			break;
		}
		memcpy(name, open + 2, nlen);
		name[nlen] = '\0';
		for (unsigned int i = 0; i < p->nvars; i++)
			if (strcmp(p->vars[i].name, name) == 0)
				v = &p->vars[i];
		if (v == NULL && dflt == NULL) {
			ret = fail(p, "unknown variable ${%s}%s", name,
				   p->nvars == 0 ? "" : " (give it a default: ${name:-value})");
			break;
		}
		if (v != NULL)
			v->referenced = true;
		if (v != NULL && v->value != NULL)
			ret = append(&buf, &len, &cap, v->value, strlen(v->value));
		else if (dflt != NULL)
			ret = append(&buf, &len, &cap, dflt + 2, (size_t)(close - dflt - 2));
		else
			ret = fail(p, "variable ${%s} is not set (set it, or write ${%s:-default})",
				   name, name);
		in = close + 1;
	}
	if (ret != 0) {
		free(buf);
		return ret;
	}
	*out = buf;
	return 0;
}

static int
add_section(struct parser *p, const char *name)
{
	struct rb2_cfg *c = p->cfg;
	struct rb2_cfg_section *s;

	for (unsigned int i = 0; i < c->n; i++)
		if (strcmp(c->sections[i].name, name) == 0)
			return fail(p, "section [%s] again (first at line %u)", name,
				    c->sections[i].line);
	s = realloc(c->sections, (c->n + 1) * sizeof(*s));
	if (s == NULL)
		return fail(p, "out of memory");
	c->sections = s;
	s = &c->sections[c->n];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	s->line = p->line;
	if (s->name == NULL)
		return fail(p, "out of memory");
	c->n++;
	return 0;
}

static int
add_entry(struct parser *p, const char *key, const char *raw)
{
	struct rb2_cfg_section *s = &p->cfg->sections[p->cfg->n - 1];
	struct rb2_cfg_entry *e;
	char *value;
	int ret;

	for (unsigned int i = 0; i < s->n; i++)
		if (strcmp(s->entries[i].key, key) == 0)
			return fail(p, "'%s' set twice in [%s] (first at line %u)", key,
				    s->name, s->entries[i].line);
	ret = substitute(p, raw, &value);
	if (ret != 0)
		return ret;
	e = realloc(s->entries, (s->n + 1) * sizeof(*e));
	if (e == NULL) {
		free(value);
		return fail(p, "out of memory");
	}
	s->entries = e;
	e = &s->entries[s->n];
	e->key = strdup(key);
	e->value = value;
	e->line = p->line;
	e->used = false;
	if (e->key == NULL) {
		free(value);
		return fail(p, "out of memory");
	}
	s->n++;
	return 0;
}

static int
parse_line(struct parser *p, char *line)
{
	char *s, *eq;

	strip_comment(line);
	s = trim(line);
	if (*s == '\0')
		return 0;
	if (*s == '[') {
		char *end = strchr(s, ']');

		if (end == NULL)
			return fail(p, "section header without ']'");
		if (*trim(end + 1) != '\0')
			return fail(p, "text after the section header");
		*end = '\0';
		s = trim(s + 1);
		if (!valid_name(s, 1))
			return fail(p, "bad section name '%s' (letters, digits, '_.-:' and spaces)", s);
		/* "stage  a" and "stage a" are one name. */
		for (char *d = s, *r = s; ; r++) {
			if (*r == ' ' && (d == s || d[-1] == ' '))
				continue;
			*d++ = *r;
			if (*r == '\0')
				break;
		}
		return add_section(p, s);
	}
	eq = strchr(s, '=');
	if (eq == NULL)
		return fail(p, "expected 'key = value', '[section]' or a comment, got '%.40s'", s);
	*eq = '\0';
	if (p->cfg->n == 0)
		return fail(p, "'%s' before any [section]", trim(s));
	if (!valid_name(trim(s), 0))
		return fail(p, "bad key '%s' (letters, digits and '_.-:')", trim(s));
	return add_entry(p, trim(s), trim(eq + 1));
}

struct rb2_cfg *
rb2_cfg_parse(const char *path, const char *text, size_t len,
	      struct rb2_cfg_var *vars, unsigned int nvars, char *err, size_t errlen)
{
	struct parser p = { .vars = vars, .nvars = nvars, .err = err, .errlen = errlen };
	char line[RB2_CFG_LINE_MAX + 1];
	size_t i = 0;

	p.cfg = calloc(1, sizeof(*p.cfg));
	if (p.cfg == NULL || (p.cfg->path = strdup(path)) == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: out of memory", path);
		if (p.cfg != NULL)
			free(p.cfg);
		return NULL;
	}
	while (i < len) {
		size_t n = 0;

		p.line++;
		while (i < len && text[i] != '\n') {
			if (text[i] == '\0') {
				fail(&p, "a NUL byte: this is not a text file");
				goto bad;
			}
			if (n == RB2_CFG_LINE_MAX) {
				fail(&p, "line longer than %u bytes", RB2_CFG_LINE_MAX);
				goto bad;
			}
			line[n++] = text[i++];
		}
		i++; /* the newline */
		line[n] = '\0';
		if (parse_line(&p, line) != 0)
			goto bad;
	}
	return p.cfg;
bad:
	rb2_cfg_free(p.cfg);
	return NULL;
}

struct rb2_cfg *
rb2_cfg_load(const char *path, struct rb2_cfg_var *vars, unsigned int nvars,
	     char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct rb2_cfg *cfg;
	char *text;
	size_t n;

	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	text = malloc(CFG_FILE_MAX + 1);
	if (text == NULL) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	n = fread(text, 1, CFG_FILE_MAX + 1, f);
	if (ferror(f) || n > CFG_FILE_MAX) {
		snprintf(err, errlen, "%s: %s", path,
			 ferror(f) ? strerror(errno) : "larger than 16 MiB: not a configuration");
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	cfg = rb2_cfg_parse(path, text, n, vars, nvars, err, errlen);
	free(text);
	return cfg;
}

void
rb2_cfg_free(struct rb2_cfg *cfg)
{
	if (cfg == NULL)
		return;
	for (unsigned int i = 0; i < cfg->n; i++) {
		struct rb2_cfg_section *s = &cfg->sections[i];

		for (unsigned int j = 0; j < s->n; j++) {
			free(s->entries[j].key);
			free(s->entries[j].value);
		}
		free(s->entries);
		free(s->name);
	}
	free(cfg->sections);
	free(cfg->path);
	free(cfg);
}

struct rb2_cfg_entry *
rb2_cfg_get(struct rb2_cfg_section *s, const char *key)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (strcmp(s->entries[i].key, key) == 0) {
			s->entries[i].used = true;
			return &s->entries[i];
		}
	return NULL;
}
