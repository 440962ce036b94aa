// SPDX-License-Identifier: MIT
/*
 * bench_suite: the workloads, in-process models of the seeds' benchmarks.
 * Built twice (see bench_suite.h): wl_alloc()/wl_free() are kmalloc()/
 * kfree() in bench_suite and malloc()/free() in bench_suite_malloc, and
 * nothing else differs.
 *
 *   rr         netperf TCP_RR (2009): client/server thread pairs, 1x..12x
 *              the CPUs, one transaction in flight; each message is a
 *              256-byte head (the skb, kmalloc-256) carrying 2048 bytes of
 *              data (kmalloc-2048), allocated by the sender and freed by
 *              the receiver. Transport: the bq futex queue (bench_common).
 *   hackbench  (2011, 2016, 2021) groups of 20 sender and 20 receiver
 *              threads; every sender sends each receiver of its group
 *              `loops` 100-byte messages in skb-sized buffers (484 bytes,
 *              kmalloc-512), allocated on send and freed on receive. Transport: pipes, one per receiver, the message's
 *              address written into it (hackbench-thread-pipes); the pipe
 *              is cut to one page so that senders block as hackbench's do.
 *   tbench     (2007) 2x the CPUs client/server pairs, each pair pinned to
 *              one CPU; a request of one 4096-byte skb (kmalloc-4096) and a
 *              16 KiB reply of four, allocated on send and freed on
 *              receive: with two pairs a CPU, more objects are in flight
 *              than an order-1 slab holds, the report's scenario (b).
 *              Rows: kmalloc-4k forced to order 1 (2 objects a slab, the
 *              report's) and at its computed order.
 *   stream     netperf UDP_STREAM (2016): one sender and one receiver on
 *              two CPUs, a queue of 256 messages as the socket buffer; the
 *              sender allocates and fills each message, the receiver
 *              copies it out and frees it. Rows: message sizes.
 *   fsmark     (2016) zero-sized file creation: bursts of 2048 files, each
 *              a dentry (192 bytes) and an inode (704 bytes, kmalloc-1k),
 *              allocated only, then all freed. Files created per second of
 *              allocation. Rows: threads.
 *   fastpath   one thread, alloc/free pairs and batches of 64 (freed in
 *              allocation order) per size class: ns per alloc+free.
 *
 * Timed workloads run a warm-up phase (duration / 10), then the timed
 * phase between phase_start() and phase_end(), which clear and read the
 * SLUB counters; hackbench does fixed work and reports its time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BENCH_API_MALLOC
#include <slub.h>
#endif

#include "bench_suite.h"

#ifdef BENCH_API_MALLOC
#define wl_alloc(size)	malloc(size)
#define wl_free(p)	free(p)
#else
#define wl_alloc(size)	kmalloc(size, GFP_KERNEL)
#define wl_free(p)	kfree(p)
#endif

#define RR_HEAD		256
#define RR_DATA		2048
#define TBENCH_SIZE	4096
#define TBENCH_REPLY	4	/* skbs in a reply: 16 KiB, as a ReadX */
#define HB_PER_GROUP	20	/* senders, and receivers, per group */
/*
 * hackbench's DATASIZE is 100 bytes; the kernel puts it in an skb whose
 * data buffer also holds the headroom and struct skb_shared_info: about
 * 100 + 64 + 320 bytes, kmalloc-512, the cache of the 2021 thread.
 */
#define HB_SIZE		484
#define STREAM_QUEUE	256
#define FS_BURST	2048
#define FS_DENTRY	192
#define FS_INODE	704
#define FP_BATCH	64
#define FP_CHECK	1024	/* iterations between looks at stop */

/* Allocate, or fail the point; write the first and last byte as a user would. */
static inline char *xalloc(size_t size)
{
	char *p = wl_alloc(size);

	if (__builtin_expect(!p, 0))
		fail("allocation", strerror(errno ? errno : ENOMEM));
	p[0] = (char)size;
	p[size - 1] = (char)size;
	return p;
}

/* ---- Threads and phases ------------------------------------------------- */

struct wthread {
	pthread_t tid;
	unsigned int idx;
	int cpu;			/* -1: the scheduler's choice */
	unsigned long long ops;		/* this phase */
	double busy;			/* thread CPU seconds: fsmark allocating, fastpath */
	void *arg;
} __attribute__((aligned(64)));

static int stop;			/* main's "phase over" to the threads */
static int phase;			/* 0: warm-up, 1: timed */
static pthread_barrier_t team_barrier;

static inline bool stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}
static void (*team_fn)(struct wthread *t);

static void *team_main(void *arg)
{
	struct wthread *t = arg;

	pin_to(pthread_self(), t->cpu);
	for (int ph = 0; ph < 2; ph++) {
		pthread_barrier_wait(&team_barrier);
		t->ops = 0;
		t->busy = 0;
		team_fn(t);
		pthread_barrier_wait(&team_barrier);
	}
	return NULL;
}

/*
 * Run fn on nt threads for a warm-up and a timed phase. timed: main stops
 * them after the phase's duration; otherwise each does fixed work and the
 * phase lasts until the last is done. Returns the timed phase's ops.
 */
static unsigned long long run_team(struct wthread *t, unsigned int nt,
				   void (*fn)(struct wthread *), bool timed,
				   double duration, struct sample *s)
{
	unsigned long long ops = 0;
	double t0;
	int r;

	team_fn = fn;
	pthread_barrier_init(&team_barrier, NULL, nt + 1);
	for (unsigned int i = 0; i < nt; i++) {
		t[i].idx = i;
		r = pthread_create(&t[i].tid, NULL, team_main, &t[i]);
		if (r)
			fail("pthread_create", strerror(r));
	}
	for (phase = 0; phase < 2; phase++) {
		__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
		if (phase)
			phase_start(s);
		pthread_barrier_wait(&team_barrier);
		t0 = now();
		if (timed) {
			sleep_secs(phase ? duration : duration / 10);
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&team_barrier);
		s->secs = now() - t0;
	}
	phase_end(s);
	for (unsigned int i = 0; i < nt; i++) {
		pthread_join(t[i].tid, NULL);
		ops += t[i].ops;
	}
	pthread_barrier_destroy(&team_barrier);
	return ops;
}

static struct wthread *team_alloc(unsigned int nt)
{
	struct wthread *t = aligned_alloc(64, sizeof(*t) * nt);

	if (!t)
		fail("threads", strerror(ENOMEM));
	memset(t, 0, sizeof(*t) * nt);
	for (unsigned int i = 0; i < nt; i++)
		t[i].cpu = -1;
	return t;
}

/* ---- rr and tbench: request/response pairs ------------------------------ */

/*
 * A message: a head (the skb) with nr data objects, whose addresses it
 * carries; the bq item's v is nr.
 */
struct rr_cfg {
	size_t head, data;
	unsigned int req, resp;		/* data objects in a request, a response */
};
static struct rr_cfg rr_cfg;

static struct bq_item rr_msg(unsigned int nr)
{
	char *h = xalloc(rr_cfg.head);

	for (unsigned int i = 0; i < nr; i++)
		((char **)(h + 8))[i] = xalloc(rr_cfg.data);
	return (struct bq_item){ h, nr };
}

static void rr_msg_free(struct bq_item it)
{
	char *h = it.p;

	if (h[0] != (char)rr_cfg.head)
		fail("message", "corrupted: the allocator handed out a live object");
	for (unsigned int i = 0; i < it.v; i++)
		wl_free(((char **)(h + 8))[i]);
	wl_free(h);
}

/* Even threads are clients, odd ones their servers; t->arg: the pair's queues. */
static void rr_thread(struct wthread *t)
{
	struct bq *q = t->arg;	/* [0]: requests, [1]: responses */
	struct bq_item it;

	if (t->idx & 1) {
		while ((it = bq_recv(&q[0])).p) {
			rr_msg_free(it);
			bq_send(&q[1], rr_msg(rr_cfg.resp));
		}
		return;
	}
	do {
		bq_send(&q[0], rr_msg(rr_cfg.req));
		rr_msg_free(bq_recv(&q[1]));
		t->ops++;
	} while (!stopping());
	bq_send(&q[0], (struct bq_item){ NULL, 0 });
}

static void rr_pairs(unsigned int np, bool pin_pair, const struct point_spec *ps,
		     struct sample *s)
{
	struct wthread *t = team_alloc(2 * np);
	struct bq *q = aligned_alloc(64, sizeof(*q) * 2 * np);
	unsigned long long tx;

	if (!q)
		fail("queues", strerror(ENOMEM));
	for (unsigned int i = 0; i < 2 * np; i++) {
		bq_init(&q[i], 4);
		t[i].arg = &q[2 * (i / 2)];
		if (pin_pair)
			t[i].cpu = child_cpus[(i / 2) % child_ncpu];
	}
	tx = run_team(t, 2 * np, rr_thread, true, ps->duration, s);
	s->metric = s->secs > 0 ? (double)tx / s->secs : 0;
	s->ops = tx * (2 + rr_cfg.req + rr_cfg.resp);
	free(q);
	free(t);
}

static void run_rr(const struct point_spec *ps, struct sample *s)
{
	rr_cfg = (struct rr_cfg){ RR_HEAD, RR_DATA, 1, 1 };
	rr_pairs(row_threads(WL_RR, ps->param, child_ncpu) / 2, false, ps, s);
}

static void run_tbench(const struct point_spec *ps, struct sample *s)
{
	rr_cfg = (struct rr_cfg){ TBENCH_SIZE, TBENCH_SIZE, 0, TBENCH_REPLY - 1 };
	rr_pairs(row_threads(WL_TBENCH, ps->param, child_ncpu) / 2, true, ps, s);
}

/* ---- hackbench ----------------------------------------------------------- */

static unsigned int hb_loops;
static int (*hb_pipes)[2];	/* one per receiver */

static void xwrite(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("pipe write", strerror(errno));
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
}

/* Threads 2k are senders, 2k+1 receivers; group g has k in [20g, 20g+20). */
static void hb_thread(struct wthread *t)
{
	unsigned int k = t->idx / 2, g = k / HB_PER_GROUP;
	unsigned int loops = phase ? hb_loops : (hb_loops + 9) / 10;
	unsigned long long want = (unsigned long long)loops * HB_PER_GROUP, got = 0;
	char *buf[64];

	if (!(t->idx & 1)) {
		for (unsigned int l = 0; l < loops; l++)
			for (unsigned int r = 0; r < HB_PER_GROUP; r++) {
				char *m = xalloc(HB_SIZE);

				xwrite(hb_pipes[g * HB_PER_GROUP + r][1], &m, sizeof(m));
			}
		return;
	}
	while (got < want) {
		ssize_t n = read(hb_pipes[k][0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || n % (ssize_t)sizeof(char *))
			fail("pipe read", n < 0 ? strerror(errno) : "short read");
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(char *); i++) {
			if (buf[i][0] != (char)HB_SIZE)
				fail("message", "corrupted");
			wl_free(buf[i]);
		}
		got += (unsigned long long)n / sizeof(char *);
	}
	t->ops = got;
}

static void run_hackbench(const struct point_spec *ps, struct sample *s)
{
	unsigned int nt = row_threads(WL_HACKBENCH, ps->param, child_ncpu);
	unsigned int nr = nt / 2;
	struct wthread *t = team_alloc(nt);
	unsigned long long msgs;

	hb_loops = ps->loops;
	hb_pipes = calloc(nr, sizeof(*hb_pipes));
	if (!hb_pipes)
		fail("pipes", strerror(ENOMEM));
	for (unsigned int i = 0; i < nr; i++) {
		if (pipe(hb_pipes[i]))
			fail("pipe", strerror(errno));
		fcntl(hb_pipes[i][1], F_SETPIPE_SZ, 4096);
	}
	msgs = run_team(t, nt, hb_thread, false, 0, s);
	s->metric = s->secs;
	s->ops = msgs;
	for (unsigned int i = 0; i < nr; i++) {
		close(hb_pipes[i][0]);
		close(hb_pipes[i][1]);
	}
	free(hb_pipes);
	free(t);
}

/* ---- stream -------------------------------------------------------------- */

static size_t stream_size;

static void stream_thread(struct wthread *t)
{
	static char src[16384 + 64], dst[2][16384 + 64];
	struct bq *q = t->arg;
	struct bq_item it;

	if (!t->idx) {
		do {
			char *m = xalloc(stream_size);

			memcpy(m + 1, src, stream_size - 2);
			bq_send(q, (struct bq_item){ m, stream_size });
		} while (!stopping());
		bq_send(q, (struct bq_item){ NULL, 0 });
		return;
	}
	while ((it = bq_recv(q)).p) {
		memcpy(dst[t->ops & 1], it.p, it.v);
		wl_free(it.p);
		t->ops++;
	}
}

static void run_stream(const struct point_spec *ps, struct sample *s)
{
	struct wthread *t = team_alloc(2);
	struct bq *q = aligned_alloc(64, sizeof(*q));
	unsigned long long msgs;

	if (!q)
		fail("queue", strerror(ENOMEM));
	stream_size = ps->param;
	bq_init(q, STREAM_QUEUE);
	t[0].arg = t[1].arg = q;
	t[0].cpu = child_cpus[0];
	t[1].cpu = child_cpus[1 % child_ncpu];
	msgs = run_team(t, 2, stream_thread, true, ps->duration, s);
	s->metric = s->secs > 0 ? (double)msgs * (double)stream_size / s->secs / 1e6 : 0;
	s->ops = msgs;
	free(q);
	free(t);
}

/* ---- fsmark -------------------------------------------------------------- */

static void fs_thread(struct wthread *t)
{
	char **f = t->arg;

	do {
		double t0 = thread_cpu();

		for (unsigned int i = 0; i < FS_BURST; i++) {
			f[2 * i] = xalloc(FS_DENTRY);
			f[2 * i + 1] = xalloc(FS_INODE);
		}
		t->busy += thread_cpu() - t0;
		t->ops += FS_BURST;
		for (unsigned int i = 0; i < 2 * FS_BURST; i++)
			wl_free(f[i]);
	} while (!stopping());
}

static void run_fsmark(const struct point_spec *ps, struct sample *s)
{
	unsigned int nt = row_threads(WL_FSMARK, ps->param, child_ncpu);
	struct wthread *t = team_alloc(nt);
	unsigned long long files;

	for (unsigned int i = 0; i < nt; i++) {
		t[i].arg = malloc(2 * FS_BURST * sizeof(char *));
		if (!t[i].arg)
			fail("fsmark", strerror(ENOMEM));
	}
	files = run_team(t, nt, fs_thread, true, ps->duration, s);
	s->metric = 0;
	for (unsigned int i = 0; i < nt; i++) {
		if (t[i].busy > 0)
			s->metric += (double)t[i].ops / t[i].busy;
		free(t[i].arg);
	}
	s->ops = 2 * files;
	free(t);
}

/* ---- fastpath ------------------------------------------------------------ */

static unsigned int fp_param;

static void fp_thread(struct wthread *t)
{
	size_t size = fp_param & ~FASTPATH_BATCH;
	double t0 = thread_cpu();
	char *p[FP_BATCH];

	do {
		if (fp_param & FASTPATH_BATCH) {
			for (unsigned int i = 0; i < FP_CHECK / FP_BATCH; i++) {
				for (unsigned int j = 0; j < FP_BATCH; j++)
					p[j] = xalloc(size);
				for (unsigned int j = 0; j < FP_BATCH; j++)
					wl_free(p[j]);
			}
		} else {
			for (unsigned int i = 0; i < FP_CHECK; i++) {
				p[0] = xalloc(size);
				__asm__ volatile("" : : "r"(p[0]) : "memory");
				wl_free(p[0]);
			}
		}
		t->ops += FP_CHECK;
	} while (!stopping());
	t->busy = thread_cpu() - t0;
}

static void run_fastpath(const struct point_spec *ps, struct sample *s)
{
	struct wthread *t = team_alloc(1);
	unsigned long long ops;

	fp_param = ps->param;
	t[0].cpu = child_cpus[0];
	ops = run_team(t, 1, fp_thread, true, ps->duration, s);
	s->metric = ops ? t[0].busy * 1e9 / (double)ops : 0;
	s->ops = ops;
	free(t);
}

/* ---- The table ------------------------------------------------------------ */

const struct workload workloads[NR_WL] = {
	[WL_RR] = { "rr", "netperf TCP_RR model: client/server pairs, kmalloc-256 head + "
		    "kmalloc-2048 data per message (futex queue)", "trans/s", true,
		    "1,4,12", "threads (client/server pairs = N x the CPUs, N = -R rr=...)",
		    "kmalloc-256", true, run_rr },
	[WL_HACKBENCH] = { "hackbench", "groups of 20 senders + 20 receivers, 100-byte "
			   "messages in 484-byte skbs (threads, pipes)", "seconds", false,
			   "1,2,4", "groups", "kmalloc-512", true, run_hackbench },
	[WL_TBENCH] = { "tbench", "2 x CPUs client/server pairs, each on one CPU, "
			"1 x kmalloc-4096 request, 4 x reply (futex queue)", "trans/s",
			true, "1,0", "kmalloc-4k order: 1 forced, 0 computed",
			"kmalloc-4k", true, run_tbench },
	[WL_STREAM] = { "stream", "netperf UDP_STREAM model: one sender, one receiver, "
			"256-message queue", "MB/s", true, "64,1024,4096,16384",
			"message bytes", NULL, true, run_stream },
	[WL_FSMARK] = { "fsmark", "zero-sized file creation: bursts of 2048 x (dentry 192 + "
			"inode 704) allocated, then freed", "files/s (thread CPU time)", true, "1,0",
			"threads (0: one per CPU)", "kmalloc-1k", false, run_fsmark },
	[WL_FASTPATH] = { "fastpath", "one thread: alloc/free pairs and batches of 64",
			  "ns/op (thread CPU time)", false, "16,64,256,1024,4096", "object bytes", NULL,
			  false, run_fastpath },
};

unsigned int row_threads(unsigned int wl, unsigned int param, unsigned int ncpus)
{
	switch (wl) {
	case WL_RR:
		return 2 * param * ncpus;
	case WL_HACKBENCH:
		return 2 * HB_PER_GROUP * param;
	case WL_TBENCH:
		return 2 * 2 * ncpus;
	case WL_STREAM:
		return 2;
	case WL_FSMARK:
		return param ? param : ncpus;
	default:
		return 1;
	}
}

void row_label(unsigned int wl, unsigned int param, char *buf, size_t size)
{
	switch (wl) {
	case WL_TBENCH:
		snprintf(buf, size, "%s", param == TBENCH_ORDER1 ? "order-1" : "calc-order");
		break;
	case WL_STREAM:
		snprintf(buf, size, "send-%u", param);
		break;
	case WL_HACKBENCH:
		snprintf(buf, size, "%u", param);
		break;
	case WL_FASTPATH:
		snprintf(buf, size, "%s-%u", param & FASTPATH_BATCH ? "batch" : "pair",
			 param & ~FASTPATH_BATCH);
		break;
	default:
		snprintf(buf, size, "%u", row_threads(wl, param, child_ncpu));
	}
}
