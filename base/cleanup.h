/* Scope-bound cleanup helpers shared by every Cloister component.
 *
 * _cleanup_free_ char *p = NULL;      freed when p goes out of scope
 * _cleanup_close_ int fd = -EBADF;    closed when fd goes out of scope (if >= 0)
 * return TAKE_PTR(p);                 hand ownership over; p becomes NULL
 *
 * Destructors accept NULL / negative fds, so early returns are always safe. */
#ifndef CLOISTER_CLEANUP_H
#define CLOISTER_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void cl_freep(void *p)
{
	free(*(void **)p);
}

static inline void cl_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void cl_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_   _cleanup_(cl_freep)
#define _cleanup_close_  _cleanup_(cl_closep)
#define _cleanup_fclose_ _cleanup_(cl_fclosep)

/* Declare a typed cleanup function NAME##p calling FUNC(*p) when *p is not NULL. */
#define CL_DEFINE_TRIVIAL_CLEANUP(type, func) \
	static inline void func##p(type *p)   \
	{                                     \
		if (*p)                       \
			func(*p);             \
	}

/* Return the pointer and set the variable to NULL, so its cleanup does nothing. */
#define TAKE_PTR(ptr)                         \
	({                                    \
		__typeof__(ptr) _tp_ = (ptr); \
		(ptr) = NULL;                 \
		_tp_;                         \
	})

/* Return the fd and set the variable to -EBADF, so its cleanup does nothing. */
#define TAKE_FD(fd)              \
	({                       \
		int _tf_ = (fd); \
		(fd) = -EBADF;   \
		_tf_;            \
	})

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#endif
