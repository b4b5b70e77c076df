/* Preloaded into the confined builder's compilers: a path the sandbox forbids reads as a missing one.
 * Landlock answers EACCES for a file outside the builder's rules and the kernel ENOENT for a file that
 * does not exist; a compiler reports the two differently ("Permission denied" / "No such file or
 * directory", and __has_include errors out on the first), so a candidate's #include would tell which
 * hidden paths exist. Every open the compiler makes goes through here and EACCES becomes ENOENT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

static int as_missing(int fd) {
    if (fd < 0 && errno == EACCES) errno = ENOENT;
    return fd;
}

static mode_t mode_of(int flags, va_list args) {
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(args, int) : 0;
}

#define WRAP_OPEN(name)                                                              \
    int name(const char* path, int flags, ...) {                                     \
        static int (*real)(const char*, int, ...);                                   \
        va_list args;                                                                \
        va_start(args, flags);                                                       \
        mode_t mode = mode_of(flags, args);                                          \
        va_end(args);                                                                \
        if (!real) real = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, #name);    \
        return as_missing(real(path, flags, mode));                                  \
    }

#define WRAP_OPENAT(name)                                                            \
    int name(int dir, const char* path, int flags, ...) {                            \
        static int (*real)(int, const char*, int, ...);                              \
        va_list args;                                                                \
        va_start(args, flags);                                                       \
        mode_t mode = mode_of(flags, args);                                          \
        va_end(args);                                                                \
        if (!real) real = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, #name);\
        return as_missing(real(dir, path, flags, mode));                             \
    }

WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

int __open_2(const char* path, int flags) { return open(path, flags); }
int __open64_2(const char* path, int flags) { return open64(path, flags); }
int __openat_2(int dir, const char* path, int flags) { return openat(dir, path, flags); }
int __openat64_2(int dir, const char* path, int flags) { return openat64(dir, path, flags); }

#define WRAP_FOPEN(name)                                                             \
    FILE* name(const char* path, const char* mode) {                                 \
        static FILE* (*real)(const char*, const char*);                              \
        if (!real) real = (FILE * (*)(const char*, const char*))dlsym(RTLD_NEXT, #name);\
        FILE* f = real(path, mode);                                                  \
        if (!f && errno == EACCES) errno = ENOENT;                                   \
        return f;                                                                    \
    }

WRAP_FOPEN(fopen)
WRAP_FOPEN(fopen64)

int access(const char* path, int how) {
    static int (*real)(const char*, int);
    if (!real) real = (int (*)(const char*, int))dlsym(RTLD_NEXT, "access");
    return as_missing(real(path, how));
}
