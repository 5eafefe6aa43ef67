/*
 * argv-log - a stand-in for every program of the differential shell test
 * (tests/shelldiff): appends its program name (argv[0]'s last component)
 * and arguments to $ARGV_LOG as one record in one write (O_APPEND): the
 * argument count in decimal, then every argument, each closed by a NUL.
 * Then it exits 0.  It never reads its
 * input, so pipelines cannot block on it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *log = getenv("ARGV_LOG");
	const char *slash;
	size_t len = 16, at = 0;
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
	at = (size_t)snprintf(buf, 16, "%d", argc) + 1;
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(buf + at, argv[i], n);
		at += n;
	}
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 1;
	if (write(fd, buf, at) != (ssize_t)at)
		return 1;
	close(fd);
	free(buf);
	return 0;
}
