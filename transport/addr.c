/* SPDX-License-Identifier: MIT */
/* addr - the verbs backend's addresses (see addr.h). */
#include "transport/addr.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* "1.2.3.4" or "[v6]" into ss (port 0). */
static int parse_ip(const char *s, struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN + 1];
	size_t n = strlen(s);

	memset(ss, 0, sizeof(*ss));
	if (n > 2 && s[0] == '[' && s[n - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (n - 2 >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
		s6->sin6_family = AF_INET6;
		return inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	return inet_pton(AF_INET, s, &s4->sin_addr) == 1 ? 0 : -EINVAL;
}

/* Decimal 1..65535, digits only. */
static int parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* "IP:PORT" or "[V6]:PORT"; s is modified. */
static int parse_hostport(char *s, struct sockaddr_storage *ss)
{
	char *sep;
	uint16_t port;

	if (s[0] == '[') {
		char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		sep = close + 1;
	} else {
		sep = strchr(s, ':');
		if (!sep || strrchr(s, ':') != sep)
			return -EINVAL;
	}
	*sep = '\0';
	if (parse_port(sep + 1, &port) < 0 || parse_ip(s, ss) < 0)
		return -EINVAL;
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	return 0;
}

int addr_parse(const char *addr, bool allow_src, struct addr_rdma *out)
{
	char buf[ADDR_MAX];
	char *at;

	memset(out, 0, sizeof(*out));
	if (!addr || strlen(addr) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, addr);
	if (!strncmp(buf, ADDR_URI_PREFIX, strlen(ADDR_URI_PREFIX)))   /* QEMU's URI: the rest is the same */
		memmove(buf, buf + strlen(ADDR_URI_PREFIX), strlen(buf) - strlen(ADDR_URI_PREFIX) + 1);
	at = strchr(buf, '@');
	if (at) {
		if (!allow_src || strchr(at + 1, '@'))
			return -EINVAL;
		*at = '\0';
		if (parse_ip(at + 1, &out->src) < 0)
			return -EINVAL;
		out->has_src = true;
	}
	if (parse_hostport(buf, &out->dst) < 0)
		return -EINVAL;
	if (out->has_src && out->src.ss_family != out->dst.ss_family)
		return -EINVAL;
	return 0;
}

const char *addr_syntax(bool allow_src)
{
	return allow_src ? "IP:PORT, [IPV6]:PORT or QEMU's rdma:IP:PORT, optionally @SRC_IP (numeric addresses)"
			 : "IP:PORT, [IPV6]:PORT or QEMU's rdma:IP:PORT (a numeric address)";
}
