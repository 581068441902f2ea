/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * An out-of-tree rb2 stage, built as a plugin with nothing but pkg-config:
 *
 *   make                    # cc -shared -fPIC filter.c $(pkg-config --cflags --libs librb2)
 *   rb2-nf -l 0-1 --no-pci --no-huge -m 1024 -- --plugin ./filter.so \
 *          --config filter.ini --trace trace.pcap
 *
 * "filter" takes messages of 64-byte trace records (what the replay stage
 * emits) and forwards on edge "out" the records of one IP protocol, as
 * messages of the same batching; the others are counted, never dropped
 * silently.
 *
 *   proto = N     the protocol kept (default 6, TCP)
 */

#include <errno.h>
#include <string.h>

#include <rb2_stage.h>
#include <rb2_trace.h>

struct filter {
	uint64_t proto;
	uint64_t *kept, *filtered;
};

static int
filter_init(struct rb2_stage *st, struct rb2_stage_args *args)
{
	struct filter *f = rb2_stage_priv(st);

	/* A bad value fails here, with the key, the value and the range. */
	if (rb2_stage_arg_u64(args, "proto", 6, 0, 255, &f->proto) < 0)
		return -EINVAL;
	f->kept = rb2_stage_counter(st, "kept");
	f->filtered = rb2_stage_counter(st, "filtered");
	return 0;
}

static void
filter_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct filter *f = rb2_stage_priv(st);

	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_rec *r = msgs[i].data;
		unsigned int nr = msgs[i].len / sizeof(*r);
		struct rb2_rec keep[64];
		unsigned int k = 0;

		for (unsigned int j = 0; j < nr; j++) {
			if (r[j].proto == f->proto && (r[j].kind == RB2_REC_IPV4 ||
						       r[j].kind == RB2_REC_IPV6)) {
				if (k == 64) {
					rb2_stage_emit(st, 0, keep, k * sizeof(*r));
					k = 0;
				}
				keep[k++] = r[j];
			} else {
				rb2_stage_count(f->filtered, 1);
			}
		}
		if (k > 0 && rb2_stage_emit(st, 0, keep, k * sizeof(*r)) == 0)
			rb2_stage_count(f->kept, k);
	}
}

static const char *const filter_edges[] = { "out", NULL };

static const struct rb2_stage_ops filter_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "filter",
	.summary = "forwards the trace records of one IP protocol (proto)",
	.edges = filter_edges,
	.priv_size = sizeof(struct filter),
	.init = filter_init,
	.process = filter_process,
};

RB2_STAGE_REGISTER(filter_ops);
