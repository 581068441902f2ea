/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-nf: runs a pipeline of stages on lcores, by default the measurement NF
 * (the paper's Case#1): replay a trace on one lcore, an RB² channel over
 * shm, measure on the other.
 *
 *   rb2-nf [EAL args] -- [--config FILE] --trace FILE [--plugin PATH]...
 *          [--top K] [--json FILE] [--csv FILE] [--pps N | --multiplier X]
 *          [--loop N] [--proc NAME] ...
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_lcore.h>
#include <rb2_pipeline.h>

#include "nf_default_config.h"

/* Options that become configuration variables: --NAME VALUE -> ${NAME}. */
static struct rb2_cfg_var vars[] = {
	{ .name = "trace" }, { .name = "top" }, { .name = "json" }, { .name = "csv" },
	{ .name = "pps" }, { .name = "multiplier" }, { .name = "loop" },
	{ .name = "cm_width" }, { .name = "interval_ms" }, { .name = "batch" },
	{ .name = "flows" }, { .name = "transport" }, { .name = "maxsleep_ms" },
	{ .name = "allow_truncated" }, { .name = "allow_non_ip" },
	{ .name = "port" }, { .name = "count" }, { .name = "idle_ms" }, { .name = "pool_size" },
	{ .name = "out_port" }, { .name = "proto" }, { .name = "preset" },
	{ .name = "active_timeout" }, { .name = "idle_timeout" },
	{ .name = "ipfix" }, { .name = "ipfix_file" }, { .name = "observation_domain" },
	{ .name = "ipfix_mtu" }, { .name = "ipfix_rate" }, { .name = "ipfix_version" },
	{ .name = "report_interval" }, { .name = "report_file" }, { .name = "preload" },
	{ .name = "via" },          /* not an option: --preset l5 sets it */
	{ .name = "export" },       /* not an option: --ipfix or --ipfix-file sets it */
};

static struct rb2_pipeline *running;

/* Stage keys the built-in configurations fill from an option: an error about
 * one names the option too (the user typed --ipfix, not collector =). */
static const struct { const char *key, *var; } key_vars[] = {
	/* First: its error also names file = or collector =. */
	{ "version", "ipfix_version" },
	{ "active_timeout", "active_timeout" }, { "idle_timeout", "idle_timeout" },
	{ "flows", "flows" }, { "collector", "ipfix" }, { "file", "ipfix_file" },
	{ "domain", "observation_domain" }, { "mtu", "ipfix_mtu" }, { "rate", "ipfix_rate" },
	{ "report_interval", "report_interval" }, { "report", "report_file" },
	{ "preload", "preload" },
};

/* "... (from --ipfix)" for an error about a key an option set, or "". */
static void
option_of_error(const char *err, char *out, size_t size)
{
	out[0] = '\0';
	for (unsigned int i = 0; i < RTE_DIM(key_vars); i++) {
		char pat[2][48];

		snprintf(pat[0], sizeof(pat[0]), "%s = ", key_vars[i].key);
		snprintf(pat[1], sizeof(pat[1]), "%s must", key_vars[i].key);
		if (strstr(err, pat[0]) == NULL && strstr(err, pat[1]) == NULL)
			continue;
		for (unsigned int v = 0; v < RTE_DIM(vars); v++)
			if (strcmp(vars[v].name, key_vars[i].var) == 0 && vars[v].value != NULL) {
				char opt[40];

				snprintf(opt, sizeof(opt), "%s", vars[v].name);
				for (char *c = opt; *c; c++)
					if (*c == '_')
						*c = '-';
				snprintf(out, size, " (from --%s %s)", opt, vars[v].value);
				return;
			}
	}
}

static void
usage(FILE *o, const char *prog)
{
	fprintf(o,
"usage: %s [EAL args] -- [options]\n"
"\n"
"Runs a pipeline of stages on lcores linked by RB2 channels; by default the\n"
"measurement NF: replay (lcore 0) -> RB2 channel over shm -> measure (lcore 1).\n"
"\n"
"  --config FILE      the pipeline (INI; default: the built-in config/nf-default.ini)\n"
"  --proc NAME        run the stages with proc = NAME (default: main); split\n"
"                     pipelines run one rb2-nf per proc, same --file-prefix\n"
"  --plugin PATH      load stages from a shared object (repeatable)\n"
"  --list-stages      list the stage types and exit\n"
"  --stats-json FILE  per-stage statistics as JSON\n"
"\n"
"Variables of the configuration (${name} in a value):\n"
"  --trace FILE       the pcap/pcapng to replay (rb2-tracegen makes one)\n"
"  --pps N            pace at N records/s      --multiplier X  capture timing x X\n"
"  --maxsleep-ms T    with --multiplier: wait at most T ms between two records\n"
"                     (a gap of over a minute is refused without it)\n"
"  --allow-truncated  a capture cut short is replayed up to the cut either way;\n"
"                     without this the run then fails (exit 1)\n"
"  --allow-non-ip     measure a capture in which no packet decodes as IP (by\n"
"                     default refused: its link type is probably wrong)\n"
"  --loop N           replay N times (0: until stopped)\n"
"  --preload yes|no   read the whole trace into memory before the run (yes),\n"
"                     or stream it while measuring (no); default: preload\n"
"                     when paced or looped, which then needs it\n"
"  --batch K          records per message (default 1)\n"
"  --top K            heavy hitters shown (default 10)\n"
"  --json FILE        measure's results with every flow, as JSON\n"
"  --csv FILE         every flow as CSV\n"
"  --cm-width W       add a count-min sketch of width W (4 rows)\n"
"  --interval-ms T    rate interval in trace time (default 1000)\n"
"  --flows N          the most flows held at once (default 1M): a full table\n"
"                     ends the oldest record early, and counts it\n"
"  --active-timeout S a flow's record ends after S seconds (default 300), and\n"
"  --idle-timeout S   ... after S seconds without a packet (default 60); 'off'\n"
"                     for none. TCP FIN or RST ends a record too\n"
"  --ipfix HOST:PORT  export the flow records as IPFIX over UDP (nfcapd:\n"
"                     nfcapd -w DIR -p PORT; [v6addr]:PORT for IPv6)\n"
"  --ipfix-file PATH  ... and/or into an IPFIX file (RFC 5655)\n"
"  --observation-domain N  the IPFIX observation domain ID (default 1)\n"
"  --ipfix-mtu B      the path MTU to the collector (default 1500)\n"
"  --ipfix-rate N     IPFIX messages per second at most (default 10000)\n"
"  --ipfix-version V  10: IPFIX (default); 9: NetFlow v9 (RFC 3954) to a\n"
"                     --ipfix collector that reads only v9\n"
"  --report-interval S  every S seconds of record time (the clock on a port),\n"
"                     a JSON line: the interval's totals, rates and top-K\n"
"  --report-file PATH ... into PATH instead of standard output\n"
"  --transport SPEC   the link's transport (default shm)\n"
"  --preset NAME      the link's design: rb2 (default), farm, socksdirect, or l5:\n"
"                     L5's own ring (pfent/L5RDMA's) instead of a channel\n"
"  --config config/nf-sharded.ini  measure sharded over lcores 0 and 1 by flow\n"
"                     hash, merged into one set of results\n"
"  --port P           (config/nf-port.ini, examples/pkt-filter/fwd.ini) a port\n"
"                     index or device name\n"
"  --count N          rx stops after N packets   --idle-ms T  ... after T ms idle\n"
"  --pool-size N      mbufs in the rx stage's pool (default 8191)\n"
"  --out-port P       (examples/pkt-filter/fwd.ini) the port tx sends on\n"
"  --proto N          (examples/pkt-filter/fwd.ini) the IP protocol kept\n"
"\n"
"Ports are the EAL's: a NIC bound to vfio-pci, or a vdev such as\n"
"  --vdev net_pcap0,rx_pcap=t.pcap    --vdev net_af_packet0,iface=veth0\n"
"  --vdev net_null0                   --vdev net_ring0\n"
"\n"
"Ctrl-C (SIGINT) or SIGTERM stops the sources and drains the pipeline; a\n"
"second one aborts. Example:\n"
"  rb2-tracegen -o t.pcap --packets 1000000 --flows 50000\n"
"  %s -l 0-1 --no-pci --no-huge -m 1024 -- --trace t.pcap --top 5\n"
"  %s -l 0-1 --no-pci --vdev net_pcap0,rx_pcap=t.pcap -- \\\n"
"      --config config/nf-port.ini --port net_pcap0 --idle-ms 500\n",
		prog, prog, prog);
}

static void
on_signal(int sig)
{
	static const char drain[] = "\nrb2-nf: stopping: draining the pipeline (again to abort)\n";
	static const char abort_msg[] = "\nrb2-nf: aborting\n";
	static _Atomic int count; /* any thread may take the signal */
	int saved_errno = errno;  /* write() must not change the interrupted code's */
	ssize_t w;

	(void)sig;
	rb2_pipeline_stop(running); /* installed only while the pipeline runs */
	if (atomic_fetch_add(&count, 1) == 0)
		w = write(STDERR_FILENO, drain, sizeof(drain) - 1);
	else
		w = write(STDERR_FILENO, abort_msg, sizeof(abort_msg) - 1);
	(void)w; /* nothing to do if stderr is gone */
	errno = saved_errno;
}

/* Did --ipfix or --ipfix-file switch the exporter on? */
static int
export_on(void)
{
	for (unsigned int i = 0; i < RTE_DIM(vars); i++)
		if (strcmp(vars[i].name, "export") == 0)
			return vars[i].value != NULL;
	return 0;
}

static int
set_var(const char *name, const char *value)
{
	for (unsigned int i = 0; i < RTE_DIM(vars); i++)
		if (strcmp(vars[i].name, name) == 0) {
			vars[i].value = value;
			return 0;
		}
	return -1;
}

/* The options after '--' (also told apart before it: rb2_app_run()). */
static const struct option lo[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "proc", required_argument, NULL, 'p' },
	{ "plugin", required_argument, NULL, 'P' },
	{ "list-stages", no_argument, NULL, 'L' },
	{ "stats-json", required_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ "trace", required_argument, NULL, 'v' },
	{ "pps", required_argument, NULL, 'v' },
	{ "multiplier", required_argument, NULL, 'v' },
	{ "loop", required_argument, NULL, 'v' },
	{ "batch", required_argument, NULL, 'v' },
	{ "top", required_argument, NULL, 'v' },
	{ "json", required_argument, NULL, 'v' },
	{ "csv", required_argument, NULL, 'v' },
	{ "cm-width", required_argument, NULL, 'v' },
	{ "interval-ms", required_argument, NULL, 'v' },
	{ "flows", required_argument, NULL, 'v' },
	{ "transport", required_argument, NULL, 'v' },
	{ "maxsleep-ms", required_argument, NULL, 'v' },
	{ "allow-truncated", no_argument, NULL, 'v' },
	{ "allow-non-ip", no_argument, NULL, 'v' },
	{ "port", required_argument, NULL, 'v' },
	{ "count", required_argument, NULL, 'v' },
	{ "idle-ms", required_argument, NULL, 'v' },
	{ "pool-size", required_argument, NULL, 'v' },
	{ "out-port", required_argument, NULL, 'v' },
	{ "proto", required_argument, NULL, 'v' },
	{ "preset", required_argument, NULL, 'v' },
	{ "active-timeout", required_argument, NULL, 'v' },
	{ "idle-timeout", required_argument, NULL, 'v' },
	{ "ipfix", required_argument, NULL, 'v' },
	{ "ipfix-file", required_argument, NULL, 'v' },
	{ "observation-domain", required_argument, NULL, 'v' },
	{ "ipfix-mtu", required_argument, NULL, 'v' },
	{ "ipfix-rate", required_argument, NULL, 'v' },
	{ "ipfix-version", required_argument, NULL, 'v' },
	{ "report-interval", required_argument, NULL, 'v' },
	{ "report-file", required_argument, NULL, 'v' },
	{ "preload", required_argument, NULL, 'v' },
	{ NULL, 0, NULL, 0 },
};

/* Everything after the EAL's start: @return the exit status. */
static int
nf_main(int argc, char **argv)
{
	struct rb2_pipeline_opts o = { .vars = vars, .nvars = RTE_DIM(vars) };
	const char *config = NULL, *stats_json = NULL, *plugins[16];
	unsigned int nplugins = 0;
	int list = 0, opt, idx, ret, rep;
	FILE *stats_f = NULL;
	char err[768];

	while ((opt = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'p': o.proc = optarg; break;
		case 'P':
			if (nplugins == RTE_DIM(plugins)) {
				fprintf(stderr, "rb2-nf: at most %zu --plugin\n", RTE_DIM(plugins));
				return 1;
			}
			plugins[nplugins++] = optarg;
			break;
		case 'L': list = 1; break;
		case 'S': stats_json = optarg; break;
		case 'h': usage(stdout, "rb2-nf"); return 0;
		case 'v': {
			char name[32];

			snprintf(name, sizeof(name), "%s", lo[idx].name);
			for (char *c = name; *c; c++)
				if (*c == '-')
					*c = '_';
			/* A flag (no argument) is the variable set to yes. */
			set_var(name, optarg != NULL ? optarg : "yes");
			break;
		}
		default:
			fprintf(stderr, "rb2-nf: see rb2-nf --help (EAL arguments go before '--')\n");
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rb2-nf: unexpected argument '%s' (EAL arguments go before '--')\n",
			argv[optind]);
		return 1;
	}
	/* L5 is its own ring, as in rb2-perf: the link runs via = l5. An
	 * IPFIX destination switches the configuration's exporter on. */
	for (unsigned int i = 0; i < RTE_DIM(vars); i++) {
		if (strcmp(vars[i].name, "preset") == 0 && vars[i].value != NULL &&
		    strcmp(vars[i].value, "l5") == 0)
			set_var("via", "l5");
		if ((strcmp(vars[i].name, "ipfix") == 0 ||
		     strcmp(vars[i].name, "ipfix_file") == 0) && vars[i].value != NULL)
			set_var("export", "yes");
	}
	if (rb2_stage_registry_check(err, sizeof(err)) != 0) {
		fprintf(stderr, "rb2-nf: %s\n", err);
		return 1;
	}
	for (unsigned int i = 0; i < nplugins; i++)
		if (rb2_plugin_load(plugins[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "rb2-nf: %s\n", err);
			return 1;
		}
	if (list) {
		printf("stage types:\n");
		rb2_stage_list(stdout);
		return 0;
	}
	if (config == NULL) {
		config = "nf-default.ini (built in)";
		o.text = nf_default_config;
		if (vars[0].value == NULL) {
			fprintf(stderr, "rb2-nf: no trace: give --trace FILE (make one with "
				"rb2-tracegen -o trace.pcap), or a --config\n");
			return 1;
		}
	}
	/* Written after the run: a path that cannot be written fails now. */
	if (stats_json != NULL && (stats_f = fopen(stats_json, "w")) == NULL) {
		fprintf(stderr, "rb2-nf: cannot write the statistics to %s: %s\n", stats_json,
			strerror(errno));
		return 1;
	}
	running = rb2_pipeline_load(config, &o, err, sizeof(err));
	if (running == NULL) {
		char from[96];

		option_of_error(err, from, sizeof(from));
		fprintf(stderr, "rb2-nf: %s%s\n", err, from);
		return 1;
	}
	for (unsigned int i = 0; i < RTE_DIM(vars); i++)
		if (vars[i].value != NULL && strncmp(vars[i].name, "ipfix_", 6) != 0 &&
		    strcmp(vars[i].name, "observation_domain") != 0 &&
		    strcmp(vars[i].name, "export") != 0 && !vars[i].referenced)
			fprintf(stderr, "rb2-nf: warning: --%s has no effect: %s never uses ${%s}\n",
				vars[i].name, config, vars[i].name);
	/* The exporter's tuning options (--ipfix-mtu, -rate, -version,
	 * --observation-domain) with no exporter to tune. */
	if (!export_on())
		for (unsigned int i = 0; i < RTE_DIM(vars); i++) {
			char opt[32];

			if (vars[i].value == NULL || strcmp(vars[i].name, "ipfix") == 0 ||
			    strcmp(vars[i].name, "ipfix_file") == 0 ||
			    (strncmp(vars[i].name, "ipfix_", 6) != 0 &&
			     strcmp(vars[i].name, "observation_domain") != 0))
				continue;
			snprintf(opt, sizeof(opt), "%s", vars[i].name);
			for (char *c = opt; *c; c++)
				if (*c == '_')
					*c = '-';
			fprintf(stderr, "rb2-nf: warning: --%s has no effect without --ipfix or "
				"--ipfix-file\n", opt);
		}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "rb2-nf: running%s%s (Ctrl-C stops the sources and drains)\n",
		o.proc != NULL ? " process " : "", o.proc != NULL ? o.proc : "");
	ret = rb2_pipeline_run(running);
	rep = rb2_pipeline_report(running, stdout);
	if (ret == 0)
		ret = rep;
	if (stats_f != NULL) {
		rb2_pipeline_stats_json(running, stats_f);
		fputc('\n', stats_f);
		if (ferror(stats_f) | fclose(stats_f)) {
			fprintf(stderr, "rb2-nf: writing %s: %s\n", stats_json, strerror(errno));
			if (ret == 0)
				ret = -EIO;
		}
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rb2_pipeline_free(running);
	running = NULL;
	if (ret == -EIO)
		fprintf(stderr, "rb2-nf: the run was not clean (the summary says why)\n");
	else if (ret != 0)
		fprintf(stderr, "rb2-nf: the pipeline did not drain: %s\n", strerror(-ret));
	return ret == 0 ? 0 : ret == -ECANCELED ? 130 : 1;
}

/* The usage with the name it is installed under. */
static void
app_usage(FILE *f)
{
	usage(f, "rb2-nf");
}

int
main(int argc, char **argv)
{
	const struct rb2_app app = { .name = "rb2-nf", .usage = app_usage, .options = lo };

	return rb2_app_run(&app, argc, argv, nf_main);
}
