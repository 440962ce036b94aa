// SPDX-License-Identifier: MIT
/*
 * fork() in a program one of whose libraries registered fork handlers
 * that malloc, in its constructor, before the drop-in's handlers were
 * registered (under LD_PRELOAD the program's libraries' constructors run
 * first; linked with libslub-malloc.a, shared libraries' run before the
 * program's). Prepare handlers run in the reverse order of registration,
 * the others in order: the library's ran while the allocator held every
 * lock, and each fork waited for ever. The drop-in's __register_atfork()
 * now registers its own first (src/malloc_vfork.c). alarm() turns a hang
 * into a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int atfork_lib_failures(void);

int main(void)
{
	int failed = 0;

	alarm(30);
	free(malloc(10));
	for (int i = 0; i < 20; i++) {
		int status = -1;
		pid_t pid = fork();

		if (pid == 0) {
			free(malloc(1000));
			_exit(atfork_lib_failures() ? 3 : 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed++;
	}
	failed += atfork_lib_failures();
	printf("malloc_atfork: %d forks, %d failed\n", 20, failed);
	return failed ? 1 : 0;
}
