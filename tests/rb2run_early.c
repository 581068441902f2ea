/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 *
 * What rb2-run must leave as it is in a program, whatever its connections
 * (test_rb2run.sh compares this program's output plainly and under rb2-run):
 *   - what rb2run_early_lib's constructor saw of its calls, made before
 *     rb2-run's library was initialised;
 *   - a thread with a 32 KiB stack, as node makes for its signals: static
 *     thread-local storage is carved from each thread's stack, so a
 *     library with much of it makes pthread_create() fail with EINVAL.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rb2run_early_lib.h"

static void *
nothing(void *arg)
{
	return arg;
}

int
main(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	printf("%s\n", rb2run_early_said());
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 32 * 1024);
	err = pthread_create(&t, &attr, nothing, NULL);
	if (err == 0)
		pthread_join(t, NULL);
	printf("a thread with a 32 KiB stack: %s\n", err == 0 ? "made" : strerror(err));
	return 0;
}
