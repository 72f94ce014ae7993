/*
 * A fake master learns nothing it can use.  The master listens for
 * dial-in workers, then closes that address; a local user listens there
 * instead, and a late worker dials it.  The worker sends only its
 * challenge (a fresh nonce, no cookie, no proof) and refuses the fake's
 * made-up proof.  The test then tries what the fake got against the
 * real workers -- a worker waiting for its master and a joined worker's
 * listen socket -- and both refuse it; nothing runs anywhere.
 */
#include "runtime/auth.h"
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "security_util.h"

static int
my_addr(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_set(r, rt.my_addr, strlen(rt.my_addr));
}
DW_REGISTER(my_addr)

struct dialer {
	pid_t pid;
	int err;
};

static struct dialer
dial_start(const char *addr, const char *cookie)
{
	int in[2], err[2];
	REQUIRE(pipe2(in, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
	struct dialer d = {fork(), err[0]};
	if (d.pid == 0) {
		dup2(in[0], 0), dup2(err[1], 2);
		execl("/proc/self/exe", "worker", "--dwork-dial", addr,
		      (char *)0);
		_exit(127);
	}
	close(in[0]), close(err[1]);
	REQUIRE(write(in[1], cookie, strlen(cookie)) > 0);
	REQUIRE(write(in[1], "\n", 1) == 1);
	close(in[1]);
	return d;
}

/* The fake's turn: take the worker's opening, answer a made-up proof,
 * keep whatever comes back.  Returns the bytes it got. */
static size_t
fake_master(int lfd, unsigned char *got, size_t cap)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	REQUIRE(fd >= 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	size_t n = 0;
	REQUIRE(recv(fd, got, WIRE_HDR + AUTH_CHALLENGE, MSG_WAITALL) ==
	        (ssize_t)(WIRE_HDR + AUTH_CHALLENGE));
	n = WIRE_HDR + AUTH_CHALLENGE;
	struct auth_hello h = {.vmajor = WIRE_VERSION_MAJOR,
	                       .vminor = WIRE_VERSION_MINOR,
	                       .role = AUTH_MASTER,
	                       .p_id = 1,
	                       .q_id = 2};
	REQUIRE(auth_nonce(h.nonce) == 0 && auth_nonce(h.mac) == 0);
	unsigned char b[WIRE_HDR + AUTH_HELLO];
	wire_put_hdr(b, WIRE_HELLO, 0,
	             (uint32_t)auth_put_hello(b + WIRE_HDR, &h));
	send(fd, b, sizeof b, MSG_NOSIGNAL);
	n += su_read_all(fd, got + n, cap - n);
	close(fd);
	return n;
}

/* Sends the fake's bytes to port as if it were the master (or a peer)
 * and returns 1 when the other side closed without a HELLO_ACK. */
static int
try_against(int port, const unsigned char *b, size_t n)
{
	int fd = su_connect(port);
	send(fd, b, n, MSG_NOSIGNAL);
	unsigned char back[4096];
	size_t k = su_read_all(fd, back, sizeof back);
	close(fd);
	for (size_t o = 0; o + WIRE_HDR <= k;) {
		if (back[o + 4] == WIRE_HELLO_ACK)
			return 0;
		o += WIRE_HDR + wire_get_u32(back + o) - 12;
	}
	return 1;
}

int
main(int argc, char **argv)
{
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	int ids[1];
	REQUIRE(dw_addprocs(1, NULL, ids) == 1);
	char addr[300];
	REQUIRE(dw_listen("127.0.0.1:0", addr, sizeof addr) == DW_OK);
	CHECK(dw_listen_close() == DW_OK);
	int port = atoi(strrchr(addr, ':') + 1);
	int lfd = su_listen(&port); /* the fake takes the address over */

	struct dialer d = dial_start(addr, rt.cookie);
	unsigned char got[8192];
	size_t n = fake_master(lfd, got, sizeof got);
	close(lfd);
	/* all it got: one challenge, and no cookie */
	CHECK(n == WIRE_HDR + AUTH_CHALLENGE && got[4] == WIRE_CHALLENGE);
	CHECK(!memmem(got, n, rt.cookie, strlen(rt.cookie)));
	int st;
	REQUIRE(waitpid(d.pid, &st, 0) == d.pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	char err[4096];
	ssize_t k = read(d.err, err, sizeof err - 1);
	err[k > 0 ? k : 0] = 0;
	close(d.err);
	CHECK(strstr(err, "wrong cookie (the master's proof does not match)"));
	CHECK(strstr(err, "did not accept this worker"));

	/* what it got, tried against a worker waiting for its master ... */
	char dir[256], prefix[600];
	REQUIRE(mkdtemp(tu_tmp_template(dir, sizeof dir, "dwork-fake")));
	snprintf(prefix, sizeof prefix, "%s/ran", dir);
	struct su_worker w;
	su_worker_start(&w, rt.cookie);
	CHECK(try_against(w.port, got, n));
	/* ... and a joined worker's listen socket (for its peers) */
	void *res;
	size_t rn;
	REQUIRE(dw_remotecall_fetch(ids[0], "my_addr", NULL, 0, &res, &rn) ==
	        DW_OK);
	char wa[300];
	snprintf(wa, sizeof wa, "%.*s", (int)rn, (char *)res);
	free(res);
	CHECK(try_against(atoi(strrchr(wa, ':') + 1), got, n));
	/* the joined worker is fine and nothing ran anywhere */
	CHECK(dw_remotecall_fetch(ids[0], "echo", "ok", 2, &res, &rn) ==
	          DW_OK &&
	      rn == 2);
	free(res);
	st = su_worker_end(&w, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(err, "rejected a connection") != NULL);
	CHECK(!su_exists(prefix, w.pid));
	CHECK(dw_nworkers() == 1);
	CHECK(dw_finalize() == DW_OK);
	rmdir(dir);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("security_dialin");
}
