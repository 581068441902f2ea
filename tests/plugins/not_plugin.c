/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A shared object that is not an rb2 plugin: it registers nothing. */

int not_a_plugin(void);

int
not_a_plugin(void)
{
	return 42;
}
