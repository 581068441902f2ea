/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* IPFIX (RFC 7011) and NetFlow v9 (RFC 3954) messages of the NF's flow
 * records: encoder and decoder. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb2_ipfix.h"

/* Information elements (RFC 7012). */
enum {
	IE_OCTETS = 1, IE_PACKETS = 2, IE_PROTO = 4, IE_TCP_FLAGS = 6, IE_SPORT = 7,
	IE_SRC4 = 8, IE_IN_IF = 10, IE_DPORT = 11, IE_DST4 = 12, IE_SRC6 = 27,
	IE_DST6 = 28, IE_END_REASON = 136, IE_START_MS = 152, IE_END_MS = 153,
};

#define SET_TEMPLATE 2
#define SET_OPTIONS 3
#define SET_DATA_MIN 256
/* NetFlow v9's FlowSet IDs for the same two kinds of set. */
#define NFV9_SET_TEMPLATE 0
#define NFV9_SET_OPTIONS 1

struct field {
	uint16_t ie, len;
};

static const struct field tmpl_v4[] = {
	{ IE_SRC4, 4 }, { IE_DST4, 4 }, { IE_SPORT, 2 }, { IE_DPORT, 2 }, { IE_PROTO, 1 },
	{ IE_TCP_FLAGS, 2 }, { IE_PACKETS, 8 }, { IE_OCTETS, 8 }, { IE_START_MS, 8 },
	{ IE_END_MS, 8 }, { IE_END_REASON, 1 }, { IE_IN_IF, 4 },
};

static const struct field tmpl_v6[] = {
	{ IE_SRC6, 16 }, { IE_DST6, 16 }, { IE_SPORT, 2 }, { IE_DPORT, 2 }, { IE_PROTO, 1 },
	{ IE_TCP_FLAGS, 2 }, { IE_PACKETS, 8 }, { IE_OCTETS, 8 }, { IE_START_MS, 8 },
	{ IE_END_MS, 8 }, { IE_END_REASON, 1 }, { IE_IN_IF, 4 },
};

#define NFIELDS (sizeof(tmpl_v4) / sizeof(tmpl_v4[0]))
/* The template set: its header, then per template 4 + 4 per field. */
#define TMPL_SET_LEN (4 + 2 * (4 + 4 * NFIELDS))

static inline void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static inline void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint32_t
get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t
get32(const uint8_t *p)
{
	return get16(p) << 16 | get16(p + 2);
}

/* ---- Encoder ------------------------------------------------------------ */

struct rb2_ipfix_enc {
	struct rb2_ipfix_params p;
	uint8_t *buf;
	size_t len;             /* bytes of the message in progress; 0: none */
	size_t set_off;         /* where the open data set starts; 0: none open */
	uint16_t set_id;
	uint32_t recs;          /* records in the message in progress */
	uint32_t tmpl_recs;     /* template records in it (v9's count has them) */
	uint64_t seq;           /* data records (v9: messages) finished */
	size_t hdr_len;
	uint32_t start_s;       /* export time of the first message (v9's uptime) */
	uint32_t since_tmpl;    /* messages since the last that carried templates */
	uint32_t tmpl_at;       /* export time of that one */
	int tmpl_sent;
	struct rb2_ipfix_enc_stats st;
};

void
rb2_ipfix_params_init(struct rb2_ipfix_params *p)
{
	memset(p, 0, sizeof(*p));
	p->version = RB2_IPFIX_VERSION;
	p->max_msg = 1472;
	p->refresh_msgs = 20;
	p->refresh_s = 600;
}

struct rb2_ipfix_enc *
rb2_ipfix_enc_create(const struct rb2_ipfix_params *p)
{
	struct rb2_ipfix_enc *e;

	if (p->max_msg < RB2_IPFIX_MSG_MIN || p->max_msg > 65535 ||
	    (p->version != RB2_IPFIX_VERSION && p->version != RB2_NFV9_VERSION)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL || (e->buf = malloc(p->max_msg)) == NULL) {
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->p = *p;
	e->hdr_len = p->version == RB2_NFV9_VERSION ? RB2_NFV9_HDR_LEN : RB2_IPFIX_HDR_LEN;
	return e;
}

void
rb2_ipfix_enc_free(struct rb2_ipfix_enc *e)
{
	if (e == NULL)
		return;
	free(e->buf);
	free(e);
}

static size_t
put_template(uint8_t *p, uint16_t id, const struct field *f)
{
	put16(p, id);
	put16(p + 2, NFIELDS);
	for (unsigned int i = 0; i < NFIELDS; i++) {
		put16(p + 4 + 4 * i, f[i].ie);
		put16(p + 6 + 4 * i, f[i].len);
	}
	return 4 + 4 * NFIELDS;
}

/* Start a message: the header's fields are written when it is finished. */
static void
msg_start(struct rb2_ipfix_enc *e, uint32_t now_s)
{
	if (!e->tmpl_sent)      /* the first message */
		e->start_s = now_s;
	e->len = e->hdr_len;
	e->recs = 0;
	e->tmpl_recs = 0;
	e->set_off = 0;
	if (!e->tmpl_sent || (e->p.refresh_msgs && e->since_tmpl >= e->p.refresh_msgs) ||
	    (e->p.refresh_s && now_s - e->tmpl_at >= e->p.refresh_s)) {
		uint8_t *s = e->buf + e->len;
		size_t n = 4;

		n += put_template(s + n, RB2_IPFIX_TMPL_V4, tmpl_v4);
		n += put_template(s + n, RB2_IPFIX_TMPL_V6, tmpl_v6);
		put16(s, e->p.version == RB2_NFV9_VERSION ? NFV9_SET_TEMPLATE : SET_TEMPLATE);
		put16(s + 2, (uint32_t)n);
		e->len += n;
		e->tmpl_recs = 2;
		e->tmpl_sent = 1;
		e->since_tmpl = 0;
		e->tmpl_at = now_s;
		e->st.templates++;
	} else {
		e->since_tmpl++;
	}
}

static void
set_close(struct rb2_ipfix_enc *e)
{
	if (e->set_off != 0)
		put16(e->buf + e->set_off + 2, (uint32_t)(e->len - e->set_off));
	e->set_off = 0;
}

void
rb2_ipfix_enc_flush(struct rb2_ipfix_enc *e, uint32_t now_s, rb2_ipfix_out_t *out, void *arg)
{
	if (e->len == 0 || e->recs == 0)
		return;
	set_close(e);
	put16(e->buf, e->p.version);
	if (e->p.version == RB2_NFV9_VERSION) {
		/* RFC 3954 §5.1: a count of records, templates included, where
		 * IPFIX has a length; the exporter's uptime in ms (nothing reads
		 * it: the records carry absolute times); the sequence counts
		 * messages, not records; the source ID is the domain. */
		put16(e->buf + 2, e->recs + e->tmpl_recs);
		put32(e->buf + 4, (now_s - e->start_s) * 1000u);
		put32(e->buf + 8, now_s);
		put32(e->buf + 12, (uint32_t)e->seq);
		put32(e->buf + 16, e->p.domain);
		e->seq++;
	} else {
		put16(e->buf + 2, (uint32_t)e->len);
		put32(e->buf + 4, now_s);
		put32(e->buf + 8, (uint32_t)e->seq);     /* records before this message */
		put32(e->buf + 12, e->p.domain);
		e->seq += e->recs;
	}
	e->st.records += e->recs;
	e->st.messages++;
	e->st.bytes += e->len;
	out(arg, e->buf, e->len);
	e->len = 0;
}

int
rb2_ipfix_enc_add(struct rb2_ipfix_enc *e, const struct rb2_flow_rec *r, uint32_t now_s,
		  rb2_ipfix_out_t *out, void *arg)
{
	uint16_t id;
	size_t rl, need;
	uint8_t *p;

	if (r->kind == RB2_REC_IPV4) {
		id = RB2_IPFIX_TMPL_V4;
		rl = RB2_IPFIX_REC_V4;
	} else if (r->kind == RB2_REC_IPV6) {
		id = RB2_IPFIX_TMPL_V6;
		rl = RB2_IPFIX_REC_V6;
	} else {
		return -EINVAL;
	}
	for (;;) {
		if (e->len == 0)
			msg_start(e, now_s);
		need = rl + (e->set_off != 0 && e->set_id == id ? 0 : 4);
		if (e->len + need <= e->p.max_msg)
			break;
		/* Never empty here: max_msg >= the templates and a record. */
		rb2_ipfix_enc_flush(e, now_s, out, arg);
	}
	if (e->set_off == 0 || e->set_id != id) {
		set_close(e);
		e->set_off = e->len;
		e->set_id = id;
		put16(e->buf + e->len, id);
		e->len += 4;
	}
	p = e->buf + e->len;
	if (id == RB2_IPFIX_TMPL_V4) {
		memcpy(p, r->src, 4);
		memcpy(p + 4, r->dst, 4);
		p += 8;
	} else {
		memcpy(p, r->src, 16);
		memcpy(p + 16, r->dst, 16);
		p += 32;
	}
	put16(p, r->sport);
	put16(p + 2, r->dport);
	p[4] = r->proto;
	put16(p + 5, r->tcp_flags);
	put64(p + 7, r->packets);
	put64(p + 15, r->bytes);
	put64(p + 23, r->first_ns / 1000000);
	put64(p + 31, r->last_ns / 1000000);
	p[39] = r->end_reason;
	put32(p + 40, r->in_port);
	e->len += rl;
	e->recs++;
	return 0;
}

void
rb2_ipfix_enc_stats(const struct rb2_ipfix_enc *e, struct rb2_ipfix_enc_stats *st)
{
	*st = e->st;
}

/* ---- Decoder ------------------------------------------------------------ */

#define DEC_TEMPLATES 64
#define DEC_FIELDS 64

struct dec_tmpl {
	uint32_t domain;
	uint16_t id, nf;        /* nf 0: free */
	uint16_t min_len;       /* a record's length, variable-length fields at 1 */
	struct field f[DEC_FIELDS];
};

struct dec_domain {
	uint32_t domain;
	int seen, have_seq;
	uint32_t next_seq;
};

struct rb2_ipfix_dec {
	struct dec_tmpl t[DEC_TEMPLATES];
	struct dec_domain dom[16];
	struct rb2_ipfix_dec_stats st;
};

struct rb2_ipfix_dec *
rb2_ipfix_dec_create(void)
{
	return calloc(1, sizeof(struct rb2_ipfix_dec));
}

void
rb2_ipfix_dec_free(struct rb2_ipfix_dec *d)
{
	free(d);
}

void
rb2_ipfix_dec_stats(const struct rb2_ipfix_dec *d, struct rb2_ipfix_dec_stats *st)
{
	*st = d->st;
}

static int
bad(char *err, size_t errlen, const char *why, size_t off)
{
	if (err != NULL)
		snprintf(err, errlen, "%s (at byte %zu)", why, off);
	return -EBADMSG;
}

static struct dec_tmpl *
tmpl_find(struct rb2_ipfix_dec *d, uint32_t domain, uint16_t id, int make)
{
	struct dec_tmpl *free_slot = NULL;

	for (unsigned int i = 0; i < DEC_TEMPLATES; i++) {
		struct dec_tmpl *t = &d->t[i];

		if (t->nf != 0 && t->domain == domain && t->id == id)
			return t;
		if (t->nf == 0 && free_slot == NULL)
			free_slot = t;
	}
	return make ? free_slot : NULL;
}

/* An unsigned number of @len bytes (reduced-size encoding, RFC 7011 §6.2). */
static uint64_t
getn(const uint8_t *p, unsigned int len)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < len; i++)
		v = v << 8 | p[i];
	return v;
}

static int
parse_templates(struct rb2_ipfix_dec *d, uint32_t domain, const uint8_t *p, size_t len,
		size_t base, char *err, size_t errlen)
{
	size_t off = 0;

	/* Records until what is left is padding (less than a template header). */
	while (len - off >= 4) {
		uint16_t id = (uint16_t)get16(p + off), nf = (uint16_t)get16(p + off + 2);
		struct dec_tmpl *t;
		uint32_t min_len = 0;

		off += 4;
		if (id < SET_DATA_MIN)
			return bad(err, errlen, "template ID below 256", base + off - 4);
		if (nf == 0) {        /* a withdrawal */
			t = tmpl_find(d, domain, id, 0);
			if (t != NULL)
				t->nf = 0;
			continue;
		}
		if (nf > DEC_FIELDS)
			return bad(err, errlen, "template of more fields than this decoder keeps",
				   base + off);
		t = tmpl_find(d, domain, id, 1);
		if (t == NULL)
			return bad(err, errlen, "too many templates", base + off);
		for (unsigned int i = 0; i < nf; i++) {
			uint16_t ie, fl;

			if (len - off < 4)
				return bad(err, errlen, "template cut short", base + off);
			ie = (uint16_t)get16(p + off);
			fl = (uint16_t)get16(p + off + 2);
			off += 4;
			if (ie & 0x8000) {  /* enterprise-specific: its number follows */
				if (len - off < 4)
					return bad(err, errlen, "template cut short", base + off);
				off += 4;
				ie = 0;         /* not one of ours: skipped */
			}
			if (fl == 0)
				return bad(err, errlen, "field of length 0", base + off - 2);
			t->f[i].ie = ie;
			t->f[i].len = fl;
			min_len += fl == 65535 ? 1 : fl;
		}
		t->domain = domain;
		t->id = id;
		t->nf = nf;
		t->min_len = (uint16_t)(min_len > 65535 ? 65535 : min_len);
		d->st.templates++;
	}
	return 0;
}

static void
field_to_rec(struct rb2_flow_rec *r, uint16_t ie, const uint8_t *v, uint16_t len)
{
	switch (ie) {
	case IE_SRC4: if (len == 4) { memcpy(r->src, v, 4); r->kind = RB2_REC_IPV4; } break;
	case IE_DST4: if (len == 4) memcpy(r->dst, v, 4); break;
	case IE_SRC6: if (len == 16) { memcpy(r->src, v, 16); r->kind = RB2_REC_IPV6; } break;
	case IE_DST6: if (len == 16) memcpy(r->dst, v, 16); break;
	case IE_SPORT: r->sport = (uint16_t)getn(v, len > 2 ? 2 : len); break;
	case IE_DPORT: r->dport = (uint16_t)getn(v, len > 2 ? 2 : len); break;
	case IE_PROTO: r->proto = v[0]; break;
	case IE_TCP_FLAGS: r->tcp_flags = (uint8_t)getn(v, len > 8 ? 8 : len); break;
	case IE_PACKETS: r->packets = getn(v, len > 8 ? 8 : len); break;
	case IE_OCTETS: r->bytes = getn(v, len > 8 ? 8 : len); break;
	case IE_START_MS: r->first_ns = getn(v, len > 8 ? 8 : len) * 1000000; break;
	case IE_END_MS: r->last_ns = getn(v, len > 8 ? 8 : len) * 1000000; break;
	case IE_END_REASON: r->end_reason = v[0]; break;
	case IE_IN_IF: r->in_port = (uint16_t)getn(v, len > 8 ? 8 : len); break;
	default: break;
	}
}

static int
parse_data(struct rb2_ipfix_dec *d, const struct dec_tmpl *t, const uint8_t *p, size_t len,
	   size_t base, uint32_t domain, rb2_ipfix_rec_t *cb, void *arg, uint64_t *nrec,
	   char *err, size_t errlen)
{
	size_t off = 0;

	/* Records while one more can fit; what is left is padding. */
	while (len - off >= t->min_len && t->min_len > 0) {
		struct rb2_flow_rec r;

		memset(&r, 0, sizeof(r));
		for (unsigned int i = 0; i < t->nf; i++) {
			size_t fl = t->f[i].len;

			if (fl == 65535) {  /* variable length (RFC 7011 §7) */
				if (len - off < 1)
					return bad(err, errlen, "record cut short", base + off);
				fl = p[off++];
				if (fl == 255) {
					if (len - off < 2)
						return bad(err, errlen, "record cut short", base + off);
					fl = get16(p + off);
					off += 2;
				}
			}
			if (len - off < fl)
				return bad(err, errlen, "record cut short", base + off);
			if (fl > 0)
				field_to_rec(&r, t->f[i].ie, p + off, (uint16_t)fl);
			off += fl;
		}
		d->st.records++;
		(*nrec)++;
		if (cb != NULL)
			cb(arg, &r, domain);
	}
	return 0;
}

static struct dec_domain *
domain_of(struct rb2_ipfix_dec *d, uint32_t domain)
{
	for (unsigned int i = 0; i < 16; i++)
		if (d->dom[i].seen && d->dom[i].domain == domain)
			return &d->dom[i];
	for (unsigned int i = 0; i < 16; i++)
		if (!d->dom[i].seen) {
			d->dom[i].seen = 1;
			d->dom[i].domain = domain;
			return &d->dom[i];
		}
	return NULL;
}

int
rb2_ipfix_dec_msg(struct rb2_ipfix_dec *d, const uint8_t *msg, size_t len,
		  rb2_ipfix_rec_t *cb, void *arg, char *err, size_t errlen)
{
	uint32_t domain, seq, version;
	struct dec_domain *dom;
	uint64_t nrec = 0;
	size_t off;
	int v9;

	if (len < 2)
		return bad(err, errlen, "shorter than a header", 0);
	version = get16(msg);
	if (version != RB2_IPFIX_VERSION && version != RB2_NFV9_VERSION)
		return bad(err, errlen, "version is neither 10 (IPFIX) nor 9 (NetFlow v9)", 0);
	v9 = version == RB2_NFV9_VERSION;
	if (len < (v9 ? RB2_NFV9_HDR_LEN : RB2_IPFIX_HDR_LEN))
		return bad(err, errlen, v9 ? "shorter than a NetFlow v9 header" :
			   "shorter than an IPFIX header", 0);
	if (v9) {
		/* A datagram is the message: v9's header has no length. */
		seq = get32(msg + 12);
		domain = get32(msg + 16);
		off = RB2_NFV9_HDR_LEN;
	} else {
		if (get16(msg + 2) != len)
			return bad(err, errlen, "the header's length is not the message's", 2);
		seq = get32(msg + 8);
		domain = get32(msg + 12);
		off = RB2_IPFIX_HDR_LEN;
	}
	while (off < len) {
		uint16_t id, sl;
		int ret = 0;

		if (len - off < 4)
			return bad(err, errlen, "set header cut short", off);
		id = (uint16_t)get16(msg + off);
		sl = (uint16_t)get16(msg + off + 2);
		if (sl < 4 || sl > len - off)
			return bad(err, errlen, "set length out of the message", off + 2);
		if (id == (v9 ? NFV9_SET_TEMPLATE : SET_TEMPLATE)) {
			ret = parse_templates(d, domain, msg + off + 4, sl - 4u, off + 4, err, errlen);
		} else if (id >= SET_DATA_MIN) {
			const struct dec_tmpl *t = tmpl_find(d, domain, id, 0);

			if (t == NULL)
				d->st.unknown_sets++;
			else
				ret = parse_data(d, t, msg + off + 4, sl - 4u, off + 4, domain, cb, arg,
						 &nrec, err, errlen);
		} else if (id != (v9 ? NFV9_SET_OPTIONS : SET_OPTIONS)) {
			return bad(err, errlen, v9 ? "FlowSet ID 2-255 (reserved)" :
				   "set ID 0, 1 or 4-255 (reserved)", off);
		}
		if (ret != 0)
			return ret;
		off += sl;
	}
	dom = domain_of(d, domain);
	if (dom != NULL) {
		/* Ahead of what we expected: the records (v9: messages) in
		 * between were lost (behind it: a message reordered or
		 * repeated, not counted). */
		if (dom->have_seq && (int32_t)(seq - dom->next_seq) > 0)
			d->st.seq_lost += seq - dom->next_seq;
		dom->have_seq = 1;
		dom->next_seq = seq + (v9 ? 1u : (uint32_t)nrec);
	}
	d->st.messages++;
	return 0;
}
