/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONFIG_H
#define RB2_CONFIG_H

/**
 * @file
 * The pipeline's configuration files: INI as DPDK's rte_cfgfile reads it
 * ([section], key = value, ';' and '#' comments), with what rte_cfgfile does
 * not keep: the line of every section and entry, so that every error, the
 * parser's or a stage's, names the file and the line.
 *
 * Values may use variables that the application defines (rb2-nf: its
 * command-line options): ${name} (an error when undefined) and
 * ${name:-default}.
 *
 * Pure C with no DPDK: the fuzzer links it alone.
 */

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RB2_CFG_LINE_MAX 4096 /**< longest line, bytes */

/** One key = value line. */
struct rb2_cfg_entry {
	char *key;
	char *value;       /**< variables substituted, blanks trimmed */
	unsigned int line;
	bool used;         /**< set by whoever consumed it */
};

/** One [section]. */
struct rb2_cfg_section {
	char *name;
	unsigned int line;
	struct rb2_cfg_entry *entries;
	unsigned int n;
};

/** A parsed file. */
struct rb2_cfg {
	char *path;                   /**< as given, for messages */
	struct rb2_cfg_section *sections;
	unsigned int n;
};

/** A variable the values may use. */
struct rb2_cfg_var {
	const char *name;
	const char *value;  /**< NULL: undefined (a ${name:-default} falls back) */
	bool referenced;    /**< set when a value used it */
};

/**
 * Parse @p len bytes of text.
 *
 * @param path Name for messages ("FILE:LINE: problem").
 * @param vars, nvars Variables (may be NULL, 0); their @c referenced flags
 *   are set.
 * @param err Receives "PATH:LINE: problem" on failure.
 * @return The configuration, or NULL.
 */
struct rb2_cfg *rb2_cfg_parse(const char *path, const char *text, size_t len,
			      struct rb2_cfg_var *vars, unsigned int nvars,
			      char *err, size_t errlen);

/** Read and parse a file. As rb2_cfg_parse(). */
struct rb2_cfg *rb2_cfg_load(const char *path, struct rb2_cfg_var *vars,
			     unsigned int nvars, char *err, size_t errlen);

void rb2_cfg_free(struct rb2_cfg *cfg);

/** @return the entry @p key of @p s (marked used), or NULL. */
struct rb2_cfg_entry *rb2_cfg_get(struct rb2_cfg_section *s, const char *key);

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONFIG_H */
