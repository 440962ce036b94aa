// SPDX-License-Identifier: MIT
/*
 * C++ on libslub-malloc, linked statically: operator new and delete are
 * the drop-in's own (malloc_new.c), and what libstdc++ still allocates
 * goes through malloc, aligned_alloc and free, libslub's too. Plain,
 * array, sized, aligned and nothrow new and delete; the new_handler and
 * std::bad_alloc, with failures injected; the containers; objects made in
 * one thread and deleted in another.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <slub.h>

#include "test.h"

static const size_t MiB = 1024 * 1024;

/* Keep the compiler from pairing up or dropping a new and its delete. */
template <typename T> static T *hide(T *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static long long stat_num(const char *cache, const char *file)
{
	char path[128], buf[256];

	snprintf(path, sizeof(path), "slab/%s/%s", cache, file);
	if (slub_sysfs_read(path, buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* Every allocation and free: the sheaves count them when there are any. */
static long long allocs(const char *cache)
{
	if (stat_num(cache, "sheaf_capacity"))
		return stat_num(cache, "alloc_cpu_sheaf");
	return stat_num(cache, "alloc_fastpath") + stat_num(cache, "alloc_slowpath");
}

static long long frees(const char *cache)
{
	if (stat_num(cache, "sheaf_capacity"))
		return stat_num(cache, "free_cpu_sheaf");
	return stat_num(cache, "free_fastpath") + stat_num(cache, "free_slowpath");
}

/* -DSLUB_STATS=OFF builds the counters out: the counted checks go. */
#ifdef SLUB_NO_STATS
static const bool counted = false;
#else
static const bool counted = true;
#endif

static bool aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/* Whether fn lives in this executable (libslub-malloc.a), not in libstdc++. */
static bool in_self(const void *fn)
{
	Dl_info self, info;

	return dladdr(reinterpret_cast<const void *>(&in_self), &self) &&
	       dladdr(fn, &info) && info.dli_fbase == self.dli_fbase;
}

/* Every form of new and delete this program calls is malloc_new.c's. */
static void test_operators_are_slub()
{
	void *(*plain)(std::size_t) = ::operator new;
	void *(*array)(std::size_t) = ::operator new[];
	void *(*nothrow)(std::size_t, const std::nothrow_t &) noexcept = ::operator new;
	void *(*align)(std::size_t, std::align_val_t) = ::operator new;
	void (*del)(void *) noexcept = ::operator delete;
	void (*del_sized)(void *, std::size_t) noexcept = ::operator delete;
	void (*del_array_sized)(void *, std::size_t) noexcept = ::operator delete[];
	void (*del_align)(void *, std::size_t, std::align_val_t) noexcept =
		::operator delete;

	CHECK(in_self(reinterpret_cast<void *>(plain)));
	CHECK(in_self(reinterpret_cast<void *>(array)));
	CHECK(in_self(reinterpret_cast<void *>(nothrow)));
	CHECK(in_self(reinterpret_cast<void *>(align)));
	CHECK(in_self(reinterpret_cast<void *>(del)));
	CHECK(in_self(reinterpret_cast<void *>(del_sized)));
	CHECK(in_self(reinterpret_cast<void *>(del_array_sized)));
	CHECK(in_self(reinterpret_cast<void *>(del_align)));
}

/* new and delete are kmalloc's: counted by the cache of their size. */
static void test_new_is_slub()
{
	long long a = allocs("kmalloc-256"), f = frees("kmalloc-256");
	char *p = hide(new char[240]);	/* kmalloc-256 in either class set */
	int *q;

	if (counted)
		CHECK_EQ(allocs("kmalloc-256") - a, 1);
	CHECK_EQ(ksize(p), 256);
	delete[] hide(p);
	if (counted)
		CHECK_EQ(frees("kmalloc-256") - f, 1);

	q = hide(new int(42));
	CHECK_EQ(ksize(q), 16);
	CHECK_EQ(*q, 42);
	delete hide(q);
}

struct sized {
	char payload[184];	/* kmalloc-192 in either class set */
};

/* 64 news of size: none may be the deleted block p, which is another class's. */
static void check_not_handed_out(const void *p, size_t size)
{
	void *got[64];

	for (void *&g : got) {
		g = ::operator new(size);
		CHECK(g != p);
	}
	for (void *g : got)
		::operator delete(hide(g), size);
}

/* Sized delete (C++14): the size given back is a hint free() can ignore. */
static void test_sized_delete()
{
	long long f = frees("kmalloc-192");
	sized *s = hide(new sized());

	CHECK_EQ(ksize(s), 192);
	for (char c : s->payload)
		CHECK_EQ(c, 0);		/* value-initialised */
	::operator delete(hide(static_cast<void *>(s)), sizeof(sized));
	if (counted)
		CHECK_EQ(frees("kmalloc-192") - f, 1);

	f = frees("kmalloc-1k");
	void *raw = ::operator new(1000);
	CHECK_EQ(ksize(raw), 1024);
	::operator delete(hide(raw), 1000);
	if (counted)
		CHECK_EQ(frees("kmalloc-1k") - f, 1);

	/*
	 * A wrong size names another class's sheaf: the block must go back
	 * to its own class, never be handed out for the size it was given.
	 */
	f = frees("kmalloc-192");
	long long big = frees("kmalloc-1k");
	s = hide(new sized());
	::operator delete(hide(static_cast<void *>(s)), 1000);
	if (counted) {
		CHECK_EQ(frees("kmalloc-192") - f, 1);
		CHECK_EQ(frees("kmalloc-1k") - big, 0);
	}
	check_not_handed_out(s, 1000);
}

struct alignas(64) line {
	char c[64];
};

struct alignas(4096) page_sized {
	char c[100];
};

struct alignas(8 * 1024 * 1024) huge_aligned {
	char c[16];
};

/* Over-aligned types go through operator new(size_t, align_val_t). */
static void test_aligned_new()
{
	std::vector<line *> lines;

	for (int i = 0; i < 1000; i++) {
		line *l = hide(new line());
		CHECK(aligned(l, 64));
		l->c[63] = (char)i;
		lines.push_back(l);
	}
	for (int i = 0; i < 1000; i++) {
		CHECK_EQ(lines[i]->c[63], (char)i);
		delete lines[i];
	}
	page_sized *p = hide(new page_sized[3]);
	CHECK(aligned(p, 4096));
	CHECK(malloc_usable_size(p) >= 3 * sizeof(page_sized));
	delete[] p;
	huge_aligned *h = hide(new huge_aligned());
	CHECK(aligned(h, 8 * MiB));
	h->c[15] = 1;
	delete h;
	void *raw = ::operator new(100, std::align_val_t(256));
	CHECK(aligned(raw, 256));
	::operator delete(raw, 100, std::align_val_t(256));

	/*
	 * The sized aligned delete names the class by the size rounded up to
	 * the alignment: 100 bytes on 64 are kmalloc-128's. A wrong size must
	 * send the block back to its own class all the same.
	 */
	long long f = frees("kmalloc-128"), big = frees("kmalloc-1k");

	raw = ::operator new(100, std::align_val_t(64));
	CHECK_EQ(ksize(raw), 128);
	::operator delete(hide(raw), 100, std::align_val_t(64));
	if (counted)
		CHECK_EQ(frees("kmalloc-128") - f, 1);
	raw = ::operator new[](100, std::align_val_t(64));
	::operator delete[](hide(raw), 1000, std::align_val_t(64));
	if (counted) {
		CHECK_EQ(frees("kmalloc-128") - f, 2);
		CHECK_EQ(frees("kmalloc-1k") - big, 0);
	}
	check_not_handed_out(raw, 1000);
}

static void test_bad_alloc()
{
	volatile size_t huge = SIZE_MAX / 4;
	bool threw = false;

	try {
		char *p = new char[huge];
		p[0] = 1;
		delete[] p;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw);
	char *q = new (std::nothrow) char[huge];
	CHECK(q == nullptr);
	line *l = new (std::nothrow) line[huge / sizeof(line) / 2];
	CHECK(l == nullptr);

	/*
	 * Aligned, at sizes where rounding up to the alignment wraps:
	 * libstdc++'s operator asked aligned_alloc() for 0 bytes and returned
	 * a block (a review's program; so does glibc's malloc under it).
	 */
	for (std::size_t sz : { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 62 }) {
		volatile std::size_t n = sz;

		threw = false;
		try {
			void *a = ::operator new(n, std::align_val_t(64));
			::operator delete(a, std::align_val_t(64));
		} catch (const std::bad_alloc &) {
			threw = true;
		}
		CHECK(threw);
		CHECK(::operator new[](n, std::align_val_t(64), std::nothrow) == nullptr);
	}
}

/* fail/object fails the next `times` small allocations (-1: every one). */
static void fail_objects(const char *times)
{
	CHECK_EQ(slub_sysfs_write("fail/object_times", times), 0);
	CHECK_EQ(slub_sysfs_write("fail/object", "100"), 0);
}

static void fail_none()
{
	CHECK_EQ(slub_sysfs_write("fail/object", "0"), 0);
	CHECK_EQ(slub_sysfs_write("fail/object_times", "-1"), 0);
}

static int handler_calls;

static void counting_handler()
{
	handler_calls++;
}

struct out_of_memory : std::bad_alloc {
};

static void throwing_handler()
{
	throw out_of_memory();
}

/*
 * When the drop-in's operator fails, libstdc++'s takes over: it asks
 * malloc again and calls the new_handler for each further failure, the
 * handler's exception reaches the program through malloc_new.c's frames,
 * and without a handler each form throws std::bad_alloc or, nothrow,
 * returns NULL.
 */
static void test_new_handler()
{
	std::set_new_handler(counting_handler);
	handler_calls = 0;
	fail_objects("3");	/* the operator's try, then malloc's two */
	void *p = hide(::operator new(100));
	fail_none();
	CHECK_EQ(handler_calls, 2);
	CHECK(ksize(p) >= 100);
	::operator delete(p, 100);

	std::set_new_handler(throwing_handler);
	bool caught = false;
	fail_objects("-1");
	try {
		p = hide(new char[100]);
	} catch (const out_of_memory &) {
		caught = true;
	}
	fail_none();
	CHECK(caught);

	std::set_new_handler(nullptr);
	int threw = 0;
	fail_objects("-1");
	try {
		(void)hide(new char[100]);
	} catch (const std::bad_alloc &) {
		threw++;
	}
	try {
		(void)hide(new int(1));
	} catch (const std::bad_alloc &) {
		threw++;
	}
	try {
		(void)hide(new line());
	} catch (const std::bad_alloc &) {
		threw++;
	}
	char *n1 = hide(new (std::nothrow) char[100]);
	line *n2 = hide(new (std::nothrow) line());
	fail_none();
	CHECK_EQ(threw, 3);
	CHECK(n1 == nullptr);
	CHECK(n2 == nullptr);
}

/* The containers, with their contents checked. */
static void test_containers()
{
	std::map<std::string, std::vector<int>> m;
	std::unordered_map<int, std::string> u;

	for (int i = 0; i < 20000; i++) {
		m["key" + std::to_string(i)].assign((size_t)(i % 50), i);
		u[i] = std::string((size_t)(i % 300), (char)('a' + i % 26));
	}
	for (int i = 0; i < 20000; i += 2) {
		m.erase("key" + std::to_string(i));
		u.erase(i);
	}
	size_t bad = 0;
	for (int i = 1; i < 20000; i += 2) {
		const std::vector<int> &v = m["key" + std::to_string(i)];

		bad += v.size() != (size_t)(i % 50) ||
		       std::any_of(v.begin(), v.end(), [i](int x) { return x != i; });
		bad += u[i] != std::string((size_t)(i % 300), (char)('a' + i % 26));
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(m.size(), 10000);
	std::vector<std::string> words;
	for (int i = 0; i < 50000; i++)
		words.push_back(std::to_string((i * 7919) % 50000));
	std::sort(words.begin(), words.end());
	CHECK(std::unique(words.begin(), words.end()) == words.end());
}

/* Made in one thread, deleted in another. */
static void test_cross_thread()
{
	constexpr int nr = 4, per = 20000;
	std::vector<std::vector<std::unique_ptr<std::string>>> made(nr);
	std::vector<std::thread> t;
	size_t bad = 0;

	for (int k = 0; k < nr; k++)
		t.emplace_back([&made, k] {
			for (int i = 0; i < per; i++)
				made[k].push_back(std::make_unique<std::string>(
					(size_t)(i % 200 + 1), (char)('A' + k)));
		});
	for (auto &th : t)
		th.join();
	t.clear();
	for (int k = 0; k < nr; k++)
		for (int i = 0; i < per; i++)
			bad += made[k][i]->size() != (size_t)(i % 200 + 1) ||
			       (*made[k][i])[0] != (char)('A' + k);
	CHECK_EQ(bad, 0);
	/* Thread k frees what thread k + 1 made. */
	for (int k = 0; k < nr; k++)
		t.emplace_back([&made, k] { made[(k + 1) % nr].clear(); });
	for (auto &th : t)
		th.join();
	for (int k = 0; k < nr; k++)
		CHECK(made[k].empty());
}

int main()
{
	/*
	 * Built -static (test_malloc_cxx_fully_static), the program has no
	 * dynamic symbols for dladdr(); the .operators test reads them with
	 * nm instead: the drop-in's are weak, libstdc++.a's strong.
	 */
#ifndef SLUB_FULLY_STATIC
	TEST(test_operators_are_slub);
#else
	(void)test_operators_are_slub;
#endif
	TEST(test_new_is_slub);
	TEST(test_sized_delete);
	TEST(test_aligned_new);
	TEST(test_bad_alloc);
	TEST(test_new_handler);
	TEST(test_containers);
	TEST(test_cross_thread);
	return test_done();
}
