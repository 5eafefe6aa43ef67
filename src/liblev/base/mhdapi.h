/*
 * mhdapi.h - libmicrohttpd, opened when `lev serve` or `lev mcp login` starts
 * (dlopen), as libcurl is on first network use (liblev/base/curlapi.h): no other
 * command maps it, nor the nine libraries it brings (GnuTLS, p11-kit,
 * nettle, hogweed, gmp, tasn1, ffi, ...), so `lev sandbox exec`, `lev run`
 * and every daemon worker start without relocating a web server they never
 * run.  Include it after <microhttpd.h>: the MHD_* names its callers use
 * go through the table below, typed as the header declares them.
 */
#pragma once

#include <microhttpd.h>

#include "liblev/base/error.h"

#ifndef LEV_LIBMICROHTTPD_SONAME
#define LEV_LIBMICROHTTPD_SONAME "libmicrohttpd.so.12"
#endif

#define LEV_MHD_FUNCS(X)                       \
	X(start_daemon)                    \
	X(stop_daemon)                     \
	X(get_daemon_info)                 \
	X(add_response_header)             \
	X(create_response_from_buffer)     \
	X(create_response_from_callback)   \
	X(lookup_connection_value)         \
	X(queue_response)                  \
	X(destroy_response)                \
	X(create_response_for_upgrade)     \
	X(upgrade_action)

struct lev_mhdapi {
#define LEV_MHD_FIELD(f) __typeof__(MHD_##f) *f;
	LEV_MHD_FUNCS(LEV_MHD_FIELD)
#undef LEV_MHD_FIELD
};

extern struct lev_mhdapi lev_mhd;

/* Open libmicrohttpd and fill lev_mhd (once); < 0 with ERR when it cannot. */
int lev_mhdapi_load(struct lev_err *err);

#define MHD_start_daemon lev_mhd.start_daemon
#define MHD_stop_daemon lev_mhd.stop_daemon
#define MHD_get_daemon_info lev_mhd.get_daemon_info
#define MHD_add_response_header lev_mhd.add_response_header
#define MHD_create_response_from_buffer lev_mhd.create_response_from_buffer
#define MHD_create_response_from_callback lev_mhd.create_response_from_callback
#define MHD_lookup_connection_value lev_mhd.lookup_connection_value
#define MHD_queue_response lev_mhd.queue_response
#define MHD_destroy_response lev_mhd.destroy_response
#define MHD_create_response_for_upgrade lev_mhd.create_response_for_upgrade
#define MHD_upgrade_action lev_mhd.upgrade_action

/*
 * GnuTLS, which libmicrohttpd maps already (its TLS): the WebSocket
 * handshake's SHA-1 and base64 (serve/ws.c) and the webhooks' HMAC-SHA256
 * (daemon/webhook.c) come from it, opened with it
 * so that no other command maps it either.  lev_mhdapi_load() fills it.
 * Include <gnutls/crypto.h> before this header to use it.
 */
#ifdef GNUTLS_CRYPTO_H
#ifndef LEV_LIBGNUTLS_SONAME
#define LEV_LIBGNUTLS_SONAME "libgnutls.so.30"
#endif
#define LEV_GNUTLS_FUNCS(X) X(hash_fast) X(base64_encode2) X(base64_decode2) X(hmac_fast)
struct lev_gnutlsapi {
#define LEV_GNUTLS_FIELD(f) __typeof__(gnutls_##f) *f;
	LEV_GNUTLS_FUNCS(LEV_GNUTLS_FIELD)
#undef LEV_GNUTLS_FIELD
	gnutls_free_function *free_fn;
};
extern struct lev_gnutlsapi lev_gnutls;
#define gnutls_hash_fast lev_gnutls.hash_fast
#define gnutls_base64_encode2 lev_gnutls.base64_encode2
#define gnutls_base64_decode2 lev_gnutls.base64_decode2
#define gnutls_hmac_fast lev_gnutls.hmac_fast
#undef gnutls_free
#define gnutls_free (*lev_gnutls.free_fn)
#endif
