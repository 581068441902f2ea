/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */
#ifndef RB2RUN_EARLY_LIB_H
#define RB2RUN_EARLY_LIB_H

/* What the library's constructor's calls returned, one word each. */
const char *rb2run_early_said(void);

#endif
