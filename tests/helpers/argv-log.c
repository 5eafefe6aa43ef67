/*
 * argv-log - a stand-in for every program of the differential shell test
 * (tests/shelldiff): appends its program name (argv[0]'s last component)
 * and arguments to $ARGV_LOG as one record, NUL-separated and closed by an
 * empty string, in one write (O_APPEND), then exits 0.  It never reads its
 * input, so pipelines cannot block on it.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *log = getenv("ARGV_LOG");
	const char *slash;
	size_t len = 1, at = 0;
	char *buf;
	int fd, i;

	if (!log || argc < 1)
		return 0;
	slash = strrchr(argv[0], '/');
	argv[0] = slash ? (char *)slash + 1 : argv[0];
	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	buf = malloc(len);
	if (!buf)
		return 1;
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(buf + at, argv[i], n);
		at += n;
	}
	buf[at++] = '\0';
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 1;
	if (write(fd, buf, at) != (ssize_t)at)
		return 1;
	close(fd);
	free(buf);
	return 0;
}
