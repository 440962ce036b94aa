// SPDX-License-Identifier: MIT
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "nocancel.h"
#include "report.h"
#include "symbol.h"

extern char *program_invocation_short_name;

static __thread int cached_tid;

int slub_tid(void)
{
	if (unlikely(!cached_tid))
		cached_tid = gettid();
	return cached_tid;
}

void slub_tid_fork_child(void)
{
	cached_tid = 0;
}

const char *slub_comm(void)
{
	return program_invocation_short_name ? program_invocation_short_name : "?";
}

void slub_pr_err(const char *fmt, ...)
{
	char buf[512];
	int saved = errno;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	if (n > 0 && write_nocancel(STDERR_FILENO, buf, (size_t)n) < 0)
		(void)0;	/* nowhere left to report to */
	errno = saved;
}

void slub_pr_caller(const void *ip)
{
	const ElfW(Sym) *sym;
	Dl_info info;

	if (slub_addr_symbol(ip, &info, &sym) && info.dli_sname)
		slub_pr_err("caller: %p (%s+0x%lx)\n", ip, info.dli_sname,
			    (unsigned long)((const char *)ip -
					    (const char *)info.dli_saddr));
	else
		slub_pr_err("caller: %p\n", ip);
}
