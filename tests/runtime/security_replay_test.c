/*
 * A captured handshake is worthless, and a wrong cookie is refused on
 * both sides.  A relay between the master and a worker records every
 * byte the master sends (its handshake, the settings, two calls); the
 * recording replayed byte for byte to another worker with the same
 * cookie is refused (the proof answers a nonce that worker never drew)
 * and the call in it never runs.  The cookie itself never crosses the
 * wire.  A worker with the wrong cookie refuses the master's proof, a
 * master refuses a worker's wrong proof, each with a logged reason.
 */
#include "runtime/auth.h"
#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "security_util.h"

static char dir[256];
static char prefix[600];

static void
test_replay(void)
{
	static struct su_mgr M = {.relayed = 1};
	int id;
	REQUIRE(su_add(&M, &id) == 1);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(id, "touch", prefix, strlen(prefix), &res,
	                          &n) == DW_OK);
	free(res);
	CHECK(su_exists(prefix, M.w.pid)); /* it ran where it should */
	CHECK(dw_remotecall_fetch(id, "echo", "hello", 5, &res, &n) == DW_OK &&
	      n == 5 && !memcmp(res, "hello", 5));
	free(res);
	/* what the master sent so far: handshake, settings, two calls */
	size_t len = M.relay.n_m2w;
	unsigned char *rec = malloc(len);
	REQUIRE(rec && len > WIRE_HDR + AUTH_HELLO);
	memcpy(rec, M.relay.m2w, len);
	CHECK(rec[4] == WIRE_HELLO); /* the master's first frame */
	CHECK(!memmem(rec, len, rt.cookie, strlen(rt.cookie)));
	CHECK(
	    !memmem(M.relay.w2m, M.relay.n_w2m, rt.cookie, strlen(rt.cookie)));

	struct su_worker v;
	su_worker_start(&v, rt.cookie); /* another worker, same cookie */
	int fd = su_connect(v.port);
	CHECK(send(fd, rec, len, MSG_NOSIGNAL) == (ssize_t)len);
	unsigned char back[4096];
	size_t got = su_read_all(fd, back, sizeof back);
	/* it answers with its own challenge, then closes: nothing else */
	CHECK(got == WIRE_HDR + AUTH_CHALLENGE && back[4] == WIRE_CHALLENGE);
	close(fd);
	char err[4096];
	int st = su_worker_end(&v, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(err, "rejected a connection: wrong cookie (the master's "
	                  "proof does not match)") != NULL);
	CHECK(!su_exists(prefix, v.pid)); /* the replayed call never ran */
	free(rec);
	CHECK(dw_rmprocs(&id, 1, 5000) == DW_OK);
	su_relay_join(&M.relay);
	su_worker_end(&M.w, err, sizeof err);
}

/* A worker with another cookie: it refuses the master's proof. */
static void
test_worker_wrong_cookie(void)
{
	static struct su_mgr M = {.cookie = "not-the-cookie"};
	int id;
	CHECK(su_add(&M, &id) < 0);
	fprintf(stderr, "(expected) master: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "refused") != NULL);
	char err[4096];
	su_worker_end(&M.w, err, sizeof err); /* killed by the manager */
	CHECK(strstr(err, "rejected a connection: wrong cookie") != NULL);
}

/* A worker that answers with a proof made from another cookie: the
 * master refuses it. */
struct bluff {
	int fd;
};

static void *
bluff_worker(void *p)
{
	struct bluff *b = p;
	unsigned char buf[WIRE_HDR + 512];
	struct auth_challenge c = {.vmajor = WIRE_VERSION_MAJOR,
	                           .role = AUTH_WORKER};
	struct auth_hello h;
	struct auth_ack a = {
	    .vmajor = WIRE_VERSION_MAJOR, .role = AUTH_WORKER, .pid = 1};
	REQUIRE(auth_nonce(c.nonce) == 0);
	size_t pl = auth_put_challenge(buf + WIRE_HDR, &c);
	wire_put_hdr(buf, WIRE_CHALLENGE, 0, (uint32_t)pl);
	send(b->fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
	if (recv(b->fd, buf, WIRE_HDR + AUTH_HELLO, MSG_WAITALL) ==
	        (ssize_t)(WIRE_HDR + AUTH_HELLO) &&
	    auth_parse_hello(buf + WIRE_HDR, AUTH_HELLO, &h, NULL, 0) == 0) {
		auth_ack_mac("not-the-cookie", &c, &h, &a, a.mac);
		pl = auth_put_ack(buf + WIRE_HDR, &a);
		wire_put_hdr(buf, WIRE_HELLO_ACK, 0, (uint32_t)pl);
		send(b->fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
	}
	su_read_all(b->fd, buf, sizeof buf);
	close(b->fd);
	return NULL;
}

static struct bluff bl;
static pthread_t bl_t;

static int
bluff_launch(void *self, int n, dw_launch *l)
{
	(void)self;
	(void)n;
	int sp[2];
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	bl.fd = sp[1];
	REQUIRE(pthread_create(&bl_t, NULL, bluff_worker, &bl) == 0);
	dw_worker_config wc = {
	    .id = dw_launch_id(l, 0), .fd = sp[0], .out_fd = -1, .err_fd = -1};
	return dw_launched(l, &wc);
}

static void
test_master_wrong_cookie(void)
{
	dw_manager m = {.name = "bluff", .launch = bluff_launch};
	int id;
	CHECK(dw_addprocs_with(&m, 1, &id) == DW_EAUTH);
	pthread_join(bl_t, NULL);
	fprintf(stderr, "(expected) master: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "presented a wrong cookie") != NULL);
}

int
main(int argc, char **argv)
{
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	REQUIRE(mkdtemp(tu_tmp_template(dir, sizeof dir, "dwork-replay")));
	snprintf(prefix, sizeof prefix, "%s/ran", dir);
	test_replay();
	test_worker_wrong_cookie();
	test_master_wrong_cookie();
	CHECK(dw_nworkers() == 1); /* none of them joined */
	CHECK(dw_finalize() == DW_OK);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("security_replay");
}
