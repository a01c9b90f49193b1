/* SPDX-License-Identifier: MIT */
/* addr - the verbs backend's addresses, one parser for the command line (checked before a
 * run) and rdma_cm (transport/hca_verbs.c):
 *   IP:PORT           "198.18.0.1:29200"
 *   [IPV6]:PORT       "[fe80::1]:4444"
 *   rdma:...          QEMU's migration URI spelling of either ("rdma:198.18.0.1:29200",
 *                     "rdma:[fe80::1]:4444"), as given to `migrate` / `-incoming`
 *   ...@SRC_IP        (where a source address is allowed) the local address to connect from
 * IP is numeric (no host names: nothing is looked up), PORT 1..65535 in decimal digits, the
 * source of the destination's family. */
#ifndef MIGBED_TRANSPORT_ADDR_H
#define MIGBED_TRANSPORT_ADDR_H
#include <stdbool.h>
#include <sys/socket.h>

#define ADDR_MAX 128                 /* longest address text accepted, NUL included */
#define ADDR_URI_PREFIX "rdma:"

struct addr_rdma {
	struct sockaddr_storage dst;  /* with its port */
	struct sockaddr_storage src;  /* port 0; has_src false: none given */
	bool has_src;
};

/* s into *out (zeroed first). allow_src: "@SRC_IP" may follow. 0 or -EINVAL. */
int addr_parse(const char *s, bool allow_src, struct addr_rdma *out);
/* What addr_parse accepts, for messages: "IP:PORT, [IPV6]:PORT or rdma:IP:PORT ...". */
const char *addr_syntax(bool allow_src);

#endif
