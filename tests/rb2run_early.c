/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 *
 * Prints what rb2run_early_lib's constructor saw of its calls, made before
 * rb2-run's library was initialised (test_rb2run.sh): under rb2-run as
 * plainly, and without a crash.
 */
#include <stdio.h>

#include "rb2run_early_lib.h"

int
main(void)
{
	printf("%s\n", rb2run_early_said());
	return 0;
}
