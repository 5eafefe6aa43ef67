/*
 * fuzz-wsframes.c - lev serve's WebSocket loop (lev_ws_follow(), on
 * libwslay) on any bytes a client may send after the handshake, and the
 * handshake's lev_ws_accept() on any key.
 *
 * Besides "no crash, no leak, no UB": the loop ends on its own once the
 * client's bytes are spent (it never waits on a client that said nothing
 * more), and an accepted key gives 28 characters of base64.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "liblev/serve/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static atomic_bool stop;
	char key[25], accept[LEV_WS_ACCEPT_LEN + 1];
	int sv[2];

	memset(key, 0, sizeof(key));
	memcpy(key, data, size < 24 ? size : 24);
	if (lev_ws_accept(key, accept) == 0)
		CHECK(strlen(accept) == LEV_WS_ACCEPT_LEN && accept[27] == '=');
	/* the client's bytes, then its end of the stream: what it sent and no more */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(shutdown(sv[1], SHUT_WR) == 0);
	lev_ws_follow(sv[0], data, size, -1, &stop);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
