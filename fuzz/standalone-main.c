/*
 * standalone-main.c - replay fuzz inputs without libFuzzer.
 *
 * Linked with a fuzz target (anything defining LLVMFuzzerTestOneInput), this
 * main() feeds it every file named on the command line; a directory stands
 * for every regular file inside it (sorted, not recursive).  With no
 * arguments it feeds standard input.  It prints TAP, one line per input, so
 * `meson test` replays the corpora in every run.  A crash, sanitizer report
 * or abort in the target kills the process, which fails the test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest input replayed (libFuzzer's default -max_len is far below). */
#define REPLAY_MAX_INPUT ((size_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned n_tests, n_failed;

static int read_all(int fd, uint8_t **out, size_t *len_out)
{
	size_t len = 0, alloc = 4096;
	uint8_t *buf = malloc(alloc);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == alloc) {
			uint8_t *nb;
			if (alloc >= REPLAY_MAX_INPUT) {
				free(buf);
				return -EFBIG;
			}
			alloc *= 2;
			nb = realloc(buf, alloc);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, alloc - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			free(buf);
			return e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*len_out = len;
	return 0;
}

static void run_fd(int fd, const char *name)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int r;

	n_tests++;
	r = read_all(fd, &data, &len);
	if (r < 0) {
		n_failed++;
		printf("not ok %u - %s\n# cannot read: %s\n", n_tests, name, strerror(-r));
		return;
	}
	/* libFuzzer hands the target an exactly-sized heap copy; so do we */
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	printf("ok %u - %s\n", n_tests, name);
	fflush(stdout);
}

static void run_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		n_tests++;
		n_failed++;
		printf("not ok %u - %s\n# cannot open: %s\n", n_tests, path, strerror(errno));
		return;
	}
	run_fd(fd, path);
	close(fd);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, alloc = 0, i;
	struct dirent *de;
	unsigned before = n_tests;

	if (!d) {
		n_tests++;
		n_failed++;
		printf("not ok %u - %s\n# cannot open the corpus directory: %s\n", n_tests, dir,
		       strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			names = realloc(names, alloc * sizeof(*names));
			if (!names)
				abort();
		}
		if (asprintf(&names[n], "%s/%s", dir, de->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			run_file(names[i]);
		free(names[i]);
	}
	free(names);
	if (n_tests == before) {
		n_tests++;
		n_failed++;
		printf("not ok %u - %s\n# the corpus directory holds no files\n", n_tests, dir);
	}
}

int main(int argc, char **argv)
{
	int i;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc < 2) {
		run_fd(STDIN_FILENO, "<stdin>");
	} else {
		for (i = 1; i < argc; i++) {
			struct stat st;
			if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
				run_dir(argv[i]);
			else
				run_file(argv[i]);
		}
	}
	printf("1..%u\n", n_tests);
	return n_failed ? 1 : 0;
}
