// SPDX-License-Identifier: MIT
/*
 * kmalloc: size classes on top of kmem_cache (the kernel's
 * mm/slab_common.c). The kernel's classes are kmalloc-8 ... kmalloc-8k by
 * powers of two, plus kmalloc-96 and kmalloc-192. The fine classes
 * (SLUB_KMALLOC_CLASSES=fine, the drop-in malloc's default) add three
 * between each power of two from 128 up and steps of 16 below, as
 * jemalloc's: at most a fifth of an object is rounding, not a half; and
 * kmalloc-4608, for a page and a header.
 * They go on past kmalloc-8k to kmalloc-64k, four to each power of two
 * (the medium classes, below). Anything larger comes straight from the
 * page allocator as a block of 2^order pages.
 */
#include <stdint.h>
#include <string.h>

#include "init.h"
#include "page_alloc.h"
#include "report.h"
#include "slub_internal.h"

struct kmem_cache *kmalloc_caches[KMALLOC_MAX_CLASSES];
unsigned int kmalloc_cache_max = KMALLOC_MAX_CACHE_SIZE;
unsigned int kmalloc_medium_base;
uint8_t kmalloc_class[KMALLOC_MAX_CACHE_SIZE / 8 + 1];
char *kmalloc_sheaf16[KMALLOC_MAX_CACHE_SIZE / 16 + 1];
uint8_t kmalloc_map16[KMALLOC_MAX_CACHE_SIZE / 16 + 1];

static const unsigned int kernel_classes[] = {
	8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
};

static const unsigned int fine_classes[] = {
	8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
	448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072,
	3584, 4096,
	/*
	 * A page and a header: sqlite3 asks for 4104 and 4368 bytes for each
	 * page it caches, and a fifth of each such block was rounding in
	 * kmalloc-5120. With kmalloc-4608 sqlite3's peak in
	 * bench/bench_programs.py fell from 18.8 MB to 17.0, glibc's. (Past
	 * 8 KiB the classes are four to each power of two by arithmetic,
	 * kmalloc_slab_any(); no such class there.)
	 */
	4608, 5120, 6144, 7168, 8192,
	/*
	 * The medium classes. The kernel's kmalloc sends everything past
	 * two pages to the page allocator (kmalloc_large(), Christoph
	 * Lameter's "SLUB: direct pass through of page size or higher
	 * kmalloc requests"): a kernel asks for such blocks rarely, and a
	 * program through malloc all the time (buffers, growing arrays,
	 * strings). As blocks of 2^order pages, a churn of 16..64 KiB ran at
	 * a twentieth of tcmalloc's rate and twice the peak RSS: every block
	 * took the zone lock, a 33 KiB request took 64, and blocks split and
	 * merged at new places touched new pages. As slab objects they come
	 * from the CPU sheaves and stay where they were (docs/malloc.md).
	 */
	10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768, 40960, 49152,
	57344, 65536,
};

/*
 * The kernel's names: kmalloc-1k for 1024, kmalloc-1280 for 1280. Written
 * by hand: snprintf would fault printf's share of libc's text into every
 * process that only preloads the drop-in.
 */
static void class_name(char *buf, unsigned int size)
{
	static const char prefix[] = "kmalloc-";
	char digits[12];
	bool k = size >= 1024 && !(size & (size - 1));
	unsigned int v = k ? size >> 10 : size, n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(buf, prefix, sizeof(prefix) - 1);
	buf += sizeof(prefix) - 1;
	while (n)
		*buf++ = digits[--n];
	if (k)
		*buf++ = 'k';
	*buf = '\0';
}

int kmalloc_init(void)
{
	const unsigned int *sizes = slub_params.kmalloc_fine ? fine_classes : kernel_classes;
	unsigned int nr = slub_params.kmalloc_fine ? ARRAY_SIZE(fine_classes) :
						     ARRAY_SIZE(kernel_classes);
	unsigned int c = 0;
	char name[32];

	for (unsigned int i = 0; i < nr; i++) {
		class_name(name, sizes[i]);
		kmalloc_caches[i] = create_kmalloc_cache(name, sizes[i]);
		if (!kmalloc_caches[i])
			return -ENOMEM;
	}
	/* Every size to the smallest class that holds it. */
	for (unsigned int i = 0; i <= KMALLOC_MAX_CACHE_SIZE / 8; i++) {
		while (sizes[c] < i * 8)
			c++;
		kmalloc_class[i] = (uint8_t)c;
	}
	kmalloc_medium_base = c + 1;
	kmalloc_cache_max = sizes[nr - 1];
	for (unsigned int i = 0; i <= KMALLOC_MAX_CACHE_SIZE / 16; i++) {
		struct kmem_cache *s = kmalloc_slab(i ? i * 16 : 16);

		kmalloc_sheaf16[i] = pcpu_base + s->cpu_sheaves;
		kmalloc_map16[i] = (uint8_t)s->map_id;
	}
	return 0;
}

/*
 * The block is handed out marked kmalloc's own (the kernel's
 * large_kmalloc page type), so that kfree() takes back only what kmalloc()
 * gave: not a block of __get_free_pages(), a slab or a chunk of the
 * drop-in's runs (PGTY_RUNS). A stale free() of a run at a chunk's start
 * had freed such a chunk as runs_grow() set it up: its pages went to two
 * owners, and the page allocator's free lists broke.
 */
void *kmalloc_pages(unsigned int order, gfp_t gfp)
{
	return alloc_pages_typed(gfp, order, PGTY_LARGE_KMALLOC);
}

static __noinline void *kmalloc_large(size_t size, gfp_t gfp)
{
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER)) {
		errno = ENOMEM;
		return NULL;
	}
	return kmalloc_pages(get_order(size), gfp);
}

static __always_inline void *__kmalloc(size_t size, gfp_t gfp,
				       unsigned long caller)
{
	if (unlikely(!size))
		return ZERO_SIZE_PTR;
	if (unlikely(size > kmalloc_cache_max))
		return kmalloc_large(size, gfp);
	if (unlikely(slab_ready())) {
		errno = ENOMEM;
		return NULL;
	}
	/* The request size matters to debug caches only (kmalloc red zone). */
	return slab_alloc_node(kmalloc_slab_any(size), gfp, (unsigned int)size, caller);
}

static __noinline void *kmalloc_general(size_t size, gfp_t gfp, unsigned long caller)
{
	return __kmalloc(size, gfp, caller);
}

/*
 * The fast path for the kmalloc-8 .. kmalloc-8k classes, which both sets
 * of classes have; the class table is read only once the slab layer is
 * up (the acquire pairs with slab_init_slow()'s release).
 */
void *kmalloc(size_t size, gfp_t gfp)
{
	if (likely(size - 1 < KMALLOC_MAX_CACHE_SIZE) &&
	    likely(__atomic_load_n(&slab_initialised, __ATOMIC_ACQUIRE))) {
		void *object = slab_alloc_fast(kmalloc_slab(size), gfp);

		if (likely(object))
			return object;
	}
	return kmalloc_general(size, gfp, _RET_IP_);
}

void *__kmalloc_cache(struct kmem_cache *s, gfp_t gfp, size_t size)
{
	if (unlikely(!s || !size || size > s->object_size)) {
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, (unsigned int)size, _RET_IP_);
}

void *kzalloc(size_t size, gfp_t gfp)
{
	return __kmalloc(size, gfp | __GFP_ZERO, _RET_IP_);
}

void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return __kmalloc(bytes, gfp | __GFP_ZERO, _RET_IP_);
}

/* A block from kmalloc_large(), or NULL. */
static struct page *large_page(const void *p)
{
	uintptr_t off = (uintptr_t)((const char *)p - zone.arena);
	struct page *page;

	if ((const char *)p < zone.arena || off >= arena_used_bytes() ||
	    off & (PAGE_SIZE - 1))
		return NULL;
	page = virt_to_page(p);
	return PAGE_STATE_TYPE(page_state(page)) == PGTY_LARGE_KMALLOC ? page : NULL;
}

static __noinline void kfree_bad(const void *p, const void *caller)
{
	slub_pr_err("BUG: kfree(): invalid pointer %p: not allocated by "
		    "kmalloc\n", p);
	slub_pr_caller(caller);
}

static __noinline void kfree_general(const void *p, unsigned long caller)
{
	struct kmem_cache *s;
	struct slab *slab;

	if (unlikely(ZERO_OR_NULL_PTR(p)))
		return;
	slab = virt_to_obj_slab(p, &s);
	if (likely(slab)) {
		slab_free(s, slab, (void *)p, caller);
		return;
	}
	if (!kfree_large(p))
		kfree_bad(p, (const void *)caller);
}

void kfree(const void *p)
{
	if (likely(kfree_fast((void *)p)))
		return;
	kfree_general(p, _RET_IP_);
}

/*
 * Back to an allocated block, then to the page allocator: of two frees
 * that race, one changes the type and the other finds none to change.
 */
bool kfree_large(const void *p)
{
	struct page *page = large_page(p);
	uint32_t s;

	if (!page)
		return false;
	s = page_state(page);
	if (PAGE_STATE_TYPE(s) != PGTY_LARGE_KMALLOC ||
	    !__atomic_compare_exchange_n(&page->state, &s,
					 PAGE_STATE(PGTY_ALLOC, PAGE_STATE_ORDER(s)),
					 false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return false;
	free_pages((void *)p, PAGE_STATE_ORDER(s));
	return true;
}

size_t __ksize(const void *p)
{
	struct kmem_cache *s;
	struct slab *slab;
	struct page *page;

	if (ZERO_OR_NULL_PTR(p))
		return 0;
	/*
	 * An object's start only: the kernel's callers pass nothing else, but
	 * krealloc() and the drop-in's realloc() would copy, or zero, from an
	 * object's inside into its neighbour.
	 */
	slab = virt_to_obj_slab(p, &s);
	if (slab) {
		if (!object_start_fast(&s->check, p) && !object_start(s, slab, p))
			return 0;
		return s->object_size;
	}
	page = large_page(p);
	return page ? PAGE_SIZE << PAGE_STATE_ORDER(page_state(page)) : 0;
}

bool report_inside_object(const void *p, const void *caller)
{
	struct kmem_cache *s;

	if (!virt_to_obj_slab(p, &s))
		return false;
	report_invalid_pointer(s, p, caller);
	return true;
}

/*
 * The caller may use every byte ksize() returns: a debug cache stops
 * checking the kmalloc red zone of this object (the kernel's
 * skip_orig_size_check()).
 */
size_t ksize(const void *p)
{
	size_t size = __ksize(p);
	struct kmem_cache *s;

	if (size && virt_to_obj_slab(p, &s) && unlikely(slub_debug_orig_size(s)))
		skip_orig_size_check(s, p);
	return size;
}

bool kmalloc_resize(const void *p, size_t new_size, gfp_t gfp, const void *caller)
{
	struct kmem_cache *s;
	struct slab *slab = virt_to_obj_slab(p, &s);
	size_t ks;

	if (!slab)
		return true;
	if (kmem_cache_debug(s))
		return kmalloc_debug_resize(s, slab, (void *)p, new_size, gfp);
	/* The free fast paths' cheap double-free look; debug caches look at all. */
	if (unlikely(last_freed_here(s, p))) {
		report_resize_free(s, p, caller);
		return false;
	}
	ks = s->object_size;
	if ((gfp & __GFP_ZERO) && new_size < ks)
		memset((char *)p + new_size, 0, ks - new_size);
	return true;
}

/*
 * The kernel's krealloc(): the object stays where it is when new_size
 * fits in it; __GFP_ZERO zeroes what the request grew or shrank by (from
 * the previous request size, which debug caches keep), and a debug cache
 * makes the rest of the object its kmalloc red zone again.
 */
void *krealloc(const void *p, size_t new_size, gfp_t gfp)
{
	struct kmem_cache *s = NULL;
	struct slab *slab;
	size_t ks, copy;
	void *n;

	if (unlikely(!new_size)) {
		kfree(p);
		return ZERO_SIZE_PTR;
	}
	if (ZERO_OR_NULL_PTR(p))
		return __kmalloc(new_size, gfp, _RET_IP_);
	ks = __ksize(p);
	if (!ks) {
		if (!report_inside_object(p, __builtin_return_address(0)))
			kfree_bad(p, __builtin_return_address(0));
		errno = EINVAL;
		return NULL;
	}
	slab = virt_to_obj_slab(p, &s);
	if (new_size <= ks) {
		if (slab && !kmalloc_resize(p, new_size, gfp, __builtin_return_address(0))) {
			errno = EINVAL;
			return NULL;
		}
		if (!slab && (gfp & __GFP_ZERO))
			memset((char *)p + new_size, 0, ks - new_size);
		return (void *)p;
	}
	n = __kmalloc(new_size, gfp, _RET_IP_);
	if (!n)
		return NULL;
	copy = slab ? get_orig_size(s, (void *)p) : ks;
	if (copy > ks)
		copy = ks;
	memcpy(n, p, copy);
	kfree(p);
	return n;
}
