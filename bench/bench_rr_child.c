// SPDX-License-Identifier: MIT
/*
 * bench_rr: the workload, run in a child (-X): the queues, the client and
 * server threads, the slab/<cache>/ files read around the timed phase, and
 * the result sent back to the parent. See bench_rr.c for the whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <slub.h>

#include "bench_rr.h"
#include "compiler.h"

#define QSIZE		512	/* > MAX_BURST + 1: a queue never fills */
#define THRASH_SAMPLE_MS 10
#define MSG_MAGIC	0x736b62u	/* "skb" */

/* ---- Queues ---------------------------------------------------------------- */

struct msg {
	char *head;		/* kmalloc-256; NULL: the client closes */
	char *data;		/* kmalloc-2k */
};

/*
 * The closed loop bounds what a queue holds to burst + 1 messages, so it
 * never fills and the producer never waits; a receiver with nothing to read
 * sleeps on a futex, as netperf sleeps in recv(): no spinning, which on an
 * oversubscribed machine makes the rate depend on where the scheduler
 * happened to put each thread.
 */
static void q_send(struct bq *q, struct msg m)
{
	bq_send(q, (struct bq_item){ m.head, (uintptr_t)m.data });
}

static struct msg q_recv(struct bq *q)
{
	struct bq_item it = bq_recv(q);

	return (struct msg){ it.p, (char *)it.v };
}

/* ---- The pairs -------------------------------------------------------------- */

struct pair {
	struct bq req, resp;
};

struct held {
	struct msg m;
	uint32_t seq;
};

struct rr_thread {
	pthread_t tid;
	struct pair *pair;
	unsigned int id;
	bool server;
	int cpu;			/* -1: not pinned */
	unsigned long long tx;		/* client: transactions this phase */
	struct held *held;		/* -H: received, not yet freed (FIFO) */
	unsigned int nr_held, held_head;
} ____cacheline_aligned;

static struct pair *pairs;
static struct rr_thread *threads;
static unsigned int burst, hold;
static pthread_barrier_t barrier;	/* threads + main, twice a phase */
static int stop;

/* An skb: the head carries a sequence number, the data one payload byte. */
static struct msg msg_alloc(uint32_t seq)
{
	struct msg m = {
		.head = kmalloc(HEAD_SIZE, GFP_KERNEL),
		.data = kmalloc(DATA_SIZE, GFP_KERNEL),
	};

	if (unlikely(!m.head || !m.data))
		die("kmalloc", strerror(errno));
	((uint32_t *)m.head)[0] = MSG_MAGIC;
	((uint32_t *)m.head)[1] = seq;
	m.data[0] = (char)seq;
	return m;
}

/* Check what the sender wrote (a corrupted object shows here), free it. */
static void msg_free(struct msg m, uint32_t seq)
{
	if (unlikely(((uint32_t *)m.head)[0] != MSG_MAGIC ||
		     ((uint32_t *)m.head)[1] != seq || m.data[0] != (char)seq))
		die("message", "corrupted: the allocator handed out a live object");
	kfree(m.head);
	kfree(m.data);
}

/* Free a received message, or with -H the one received H messages ago. */
static void recv_done(struct rr_thread *t, struct msg m, uint32_t seq)
{
	struct held *h;

	if (!hold) {
		msg_free(m, seq);
		return;
	}
	if (t->nr_held == hold) {
		h = &t->held[t->held_head];
		msg_free(h->m, h->seq);
		t->held_head = (t->held_head + 1) % hold;
		t->nr_held--;
	}
	t->held[(t->held_head + t->nr_held++) % hold] = (struct held){ m, seq };
}

static void recv_flush(struct rr_thread *t)
{
	for (; t->nr_held; t->nr_held--) {
		struct held *h = &t->held[t->held_head];

		msg_free(h->m, h->seq);
		t->held_head = (t->held_head + 1) % hold;
	}
}

static void client_phase(struct rr_thread *t)
{
	struct pair *p = t->pair;
	uint32_t sent = 0, got = 0;
	unsigned long long n = 0;

	for (unsigned int i = 0; i < burst; i++)
		q_send(&p->req, msg_alloc(sent++));
	while (got != sent) {
		recv_done(t, q_recv(&p->resp), got++);
		n++;
		if (!READ_ONCE(stop))
			q_send(&p->req, msg_alloc(sent++));
	}
	q_send(&p->req, (struct msg){ NULL, NULL });
	recv_flush(t);
	t->tx = n;
}

/* Free the request, then allocate the response, as recv() then send(). */
static void server_phase(struct rr_thread *t)
{
	struct pair *p = t->pair;
	uint32_t seq = 0;
	struct msg m;

	while ((m = q_recv(&p->req)).head) {
		recv_done(t, m, seq);
		q_send(&p->resp, msg_alloc(seq++));
	}
	recv_flush(t);
}

static void *rr_main(void *arg)
{
	struct rr_thread *t = arg;

	pin_to(pthread_self(), t->cpu);
	for (int phase = 0; phase < 2; phase++) {
		pthread_barrier_wait(&barrier);
		if (t->server)
			server_phase(t);
		else
			client_phase(t);
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

static int place(enum pin_mode pin, unsigned int i, bool server)
{
	unsigned int half = nr_cpus / 2;

	switch (pin) {
	case PIN_PAIR:
		return cpus[(i + server) % nr_cpus];
	case PIN_SPLIT:
		if (!half)
			return cpus[0];
		return server ? cpus[half + i % (nr_cpus - half)] : cpus[i % half];
	default:
		return -1;
	}
}

/* ---- slab/<cache>/ files ------------------------------------------------------ */

static ssize_t sysfs_get(const char *path, char *buf, size_t size)
{
	ssize_t n = slub_sysfs_read(path, buf, size);

	if (n < 0)
		die(path, strerror((int)-n));
	return n;
}

static unsigned long sysfs_ulong(const char *cache, const char *file)
{
	char path[96], buf[512];

	snprintf(path, sizeof(path), "slab/%s/%s", cache, file);
	sysfs_get(path, buf, sizeof(buf));
	/* A statistic reads "total C0=.. C1=..": the first number is the sum. */
	return strtoul(buf, NULL, 10);
}

static void stats_clear(void)
{
	char path[96];
	int r;

	for (unsigned int c = 0; c < NR_CACHES; c++)
		for (unsigned int i = 0; i < NR_STATS; i++) {
			snprintf(path, sizeof(path), "slab/%s/%s", cache_file[c],
				 stat_file[i]);
			r = slub_sysfs_write(path, "0");
			if (r)
				die(path, strerror(-r));
		}
}

static void stats_read(struct point *pt)
{
	for (unsigned int c = 0; c < NR_CACHES; c++) {
		for (unsigned int i = 0; i < NR_STATS; i++)
			pt->stat[c][i] = sysfs_ulong(cache_file[c], stat_file[i]);
		pt->partial_end[c] = sysfs_ulong(cache_file[c], "partial");
	}
}

/*
 * "min_free_watermark W threshold T", then one line a CPU:
 * "C<cpu> fastpath_allocs=F slowpath_allocs=S thrashing=0|1".
 */
static void thrash_sample(struct point *pt)
{
	static char buf[1 << 16];
	char path[96];

	for (unsigned int c = 0; c < NR_CACHES; c++) {
		struct thrash_obs *th = &pt->th[c];
		bool any = false;
		char *s;

		snprintf(path, sizeof(path), "slab/%s/thrash", cache_file[c]);
		sysfs_get(path, buf, sizeof(buf));
		if (!strncmp(buf, "min_free_watermark ", 19))
			th->watermark = (unsigned int)strtoul(buf + 19, NULL, 10);
		for (s = strstr(buf, "slowpath_allocs="); s;
		     s = strstr(s + 1, "slowpath_allocs=")) {
			unsigned int slow = (unsigned int)strtoul(s + 16, NULL, 10);
			char *tr = strstr(s, "thrashing=");

			if (slow > th->max_slow)
				th->max_slow = slow;
			if (tr && tr[10] == '1')
				any = true;
		}
		th->samples++;
		th->thrashing += any;
	}
}

/* ---- A child: one point ----------------------------------------------------------- */

static void read_sizing(struct sizing *sz)
{
	char buf[128];

	sysfs_get("policy/preset", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = 0;
	snprintf(sz->preset, sizeof(sz->preset), "%.*s",
		 (int)sizeof(sz->preset) - 1, buf);
	sysfs_get("cpu/percpu_mode", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = 0;
	snprintf(sz->percpu_mode, sizeof(sz->percpu_mode), "%.*s",
		 (int)sizeof(sz->percpu_mode) - 1, buf);
	sysfs_get("policy/order_nr_cpus", buf, sizeof(buf));
	sz->order_nr_cpus = (unsigned int)strtoul(buf, NULL, 10);
	for (unsigned int c = 0; c < NR_CACHES; c++) {
		sz->objs[c] = (unsigned int)sysfs_ulong(cache_file[c], "objs_per_slab");
		sz->order[c] = (unsigned int)sysfs_ulong(cache_file[c], "order");
		sz->ratio[c] = (unsigned int)sysfs_ulong(cache_file[c], "slab_thrash_ratio");
		sz->cpu_partial[c] = (unsigned int)sysfs_ulong(cache_file[c], "cpu_partial");
	}
}

static double tv_secs(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static void run_point(const struct shape *sh, unsigned int np, struct point *pt)
{
	unsigned int nt = 2 * np;
	double t0 = 0, phase_secs;
	struct rusage ru0, ru1;
	int r;

	burst = sh->burst;
	hold = sh->hold;
	pairs = aligned_alloc(64, sizeof(*pairs) * np);
	threads = aligned_alloc(64, sizeof(*threads) * nt);
	if (!pairs || !threads)
		die("pairs", strerror(ENOMEM));
	memset(pairs, 0, sizeof(*pairs) * np);
	memset(threads, 0, sizeof(*threads) * nt);
	for (unsigned int i = 0; i < np; i++) {
		bq_init(&pairs[i].req, QSIZE);
		bq_init(&pairs[i].resp, QSIZE);
	}
	pthread_barrier_init(&barrier, NULL, nt + 1);
	for (unsigned int i = 0; i < nt; i++) {
		struct rr_thread *t = &threads[i];

		t->pair = &pairs[i / 2];
		t->id = i / 2;
		t->server = i & 1;
		t->cpu = place(sh->pin, t->id, t->server);
		t->held = hold ? calloc(hold, sizeof(*t->held)) : NULL;
		if (hold && !t->held)
			die("-H", strerror(ENOMEM));
		r = pthread_create(&t->tid, NULL, rr_main, t);
		if (r)
			die("pthread_create", strerror(r));
	}
	for (int phase = 0; phase < 2; phase++) {
		phase_secs = phase ? opt.duration : opt.duration / 10;
		WRITE_ONCE(stop, 0);
		if (phase) {
			stats_clear();
			getrusage(RUSAGE_SELF, &ru0);
		}
		pthread_barrier_wait(&barrier);
		t0 = now();
		if (phase) {
			while (now() - t0 < phase_secs) {
				sleep_secs(THRASH_SAMPLE_MS * 1e-3);
				thrash_sample(pt);
			}
		} else {
			sleep_secs(phase_secs);
		}
		WRITE_ONCE(stop, 1);
		pthread_barrier_wait(&barrier);
	}
	pt->secs = now() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	pt->user_s = tv_secs(ru1.ru_utime) - tv_secs(ru0.ru_utime);
	pt->sys_s = tv_secs(ru1.ru_stime) - tv_secs(ru0.ru_stime);
	stats_read(pt);
	for (unsigned int i = 0; i < nt; i++) {
		pthread_join(threads[i].tid, NULL);
		if (!threads[i].server)
			pt->tx += threads[i].tx;
		free(threads[i].held);
	}
	pthread_barrier_destroy(&barrier);
	pt->ok = true;
}

void child(int fd, const struct shape *sh, unsigned int np)
{
	static struct child_msg cm;
	const char *p = (const char *)&cm;
	size_t left = sizeof(cm);
	ssize_t n;

	/* A hung child must not hang the benchmark. */
	alarm((unsigned int)(opt.duration * 4) + 60);
	kfree(kmalloc(1, GFP_KERNEL));	/* bring the slab layer up */
	read_sizing(&cm.sz);
	run_point(sh, np, &cm.pt);
	for (; left; p += n, left -= (size_t)n) {
		n = write(fd, p, left);
		if (n <= 0)
			die("-X: write", strerror(errno));
	}
}

