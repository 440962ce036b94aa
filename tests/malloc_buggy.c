// SPDX-License-Identifier: MIT
/*
 * A program with heap bugs, for malloc_debug.sh to run under
 * LD_PRELOAD=libslub-malloc.so SLUB_DEBUG=FZPU. It is not linked with
 * libslub: the drop-in malloc is the only way libslub sees it.
 *
 *   malloc_buggy overrun   dup_upper() writes its string's NUL one byte
 *                          past the buffer it allocated
 *   malloc_buggy double    forget_twice() frees a buffer a second time
 *   malloc_buggy uaf       release_node() frees a node that
 *                          count_nodes() then writes to; found when the
 *                          program validates kmalloc-64 through
 *                          libslub's slub_sysfs_write(), if it is there
 *   malloc_buggy unchecked copy_name() writes to what malloc returned
 *                          without looking for NULL: tools/fail-sweep's
 *                          run that fails that malloc crashes there
 *   malloc_buggy checked   the same program with every result checked
 *
 * Each goes on after the bug and prints what it computed: a program
 * under slub_debug keeps running. The functions are not static and the
 * program is linked with -rdynamic, so that the reports can name them.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* libslub-malloc's, where it is linked in; NULL otherwise. */
extern int slub_sysfs_write(const char *path, const char *value) __attribute__((weak));

/* Hide a size from what the compiler knows about malloc. */
static size_t hide(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

/* After a call: not a tail call, so this function shows in the stack. */
#define no_tail_call()	__asm__ volatile("" ::: "memory")

__attribute__((noinline)) char *dup_upper(const char *s)
{
	size_t n = hide(strlen(s));
	char *p = malloc(n);		/* the bug: no room for the NUL */

	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++)
		p[i] = (char)toupper((unsigned char)s[i]);
	p[hide(n)] = '\0';
	return p;
}

__attribute__((noinline)) void forget_twice(char *p)
{
	free(p);
	no_tail_call();
}

struct node {
	struct node *next;
	long value;
	char pad[24];
};

__attribute__((noinline)) void release_node(struct node *n)
{
	free(n);
	no_tail_call();
}

__attribute__((noinline)) long count_nodes(struct node *n)
{
	n->value++;			/* the bug: n was freed */
	return n->value;
}

__attribute__((noinline)) char *copy_name(const char *s)
{
	char *p = malloc(hide(strlen(s) + 1));

	strcpy(p, s);			/* the bug: p may be NULL */
	return p;
}

__attribute__((noinline)) char *copy_name_checked(const char *s)
{
	char *p = malloc(hide(strlen(s) + 1));

	return p ? strcpy(p, s) : NULL;
}

/* A few blocks, each checked, then a name copied by copy(); 1: no memory. */
static int names(char *(*copy)(const char *))
{
	char *block[6], *name;
	int i, ret = 0;

	for (i = 0; i < 6; i++) {
		block[i] = malloc(hide(40 + (size_t)i * 100));
		if (!block[i])
			break;
		memset(block[i], i, 40);
	}
	name = i == 6 ? copy("libslub") : NULL;
	if (name)
		puts(name);
	else
		ret = 1;
	free(name);
	while (i--)
		free(block[i]);
	return ret;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "overrun";

	if (!strcmp(what, "overrun")) {
		char *name = dup_upper("libslub");

		puts(name ? name : "(null)");
		free(name);
	} else if (!strcmp(what, "double")) {
		char *p = malloc(hide(100));

		if (p)
			strcpy(p, "twice");
		forget_twice(p);
		forget_twice(p);
		puts("freed");
	} else if (!strcmp(what, "uaf")) {
		int (*sysfs_write)(const char *, const char *);
		struct node *n = malloc(hide(sizeof(*n)));

		if (!n)
			return 1;
		n->value = 41;
		release_node(n);
		printf("%ld\n", count_nodes(n));
		*(void **)&sysfs_write = dlsym(RTLD_DEFAULT, "slub_sysfs_write");
		if (!sysfs_write)	/* linked -static: no dynamic symbols */
			sysfs_write = slub_sysfs_write;
		if (sysfs_write)
			sysfs_write("slab/kmalloc-64/validate", "1");
	} else if (!strcmp(what, "unchecked")) {
		return names(copy_name);
	} else if (!strcmp(what, "checked")) {
		return names(copy_name_checked);
	} else {
		fprintf(stderr, "usage: malloc_buggy overrun|double|uaf|unchecked|checked\n");
		return 2;
	}
	return 0;
}
