/*
 * Golden merges: small synthetic traces whose expected .prv, .pcf and
 * .row are written out by hand below.  They cover nested states, several
 * events at one time, user functions, labels, a communication whose
 * receive was recorded before its send (and, after correction, still
 * precedes it), a clock corrected by a sync record, late-joining and
 * early-leaving tasks, a task id that never traced and a thread id gap.
 */
#include <stdlib.h>
#include <time.h>

#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };

/* ---- Trace 1: two hosts, nested states, comms, labels --------------- */

static void
trace1(const char *dir)
{
	ms_proc a, b;
	ms_thread a0, a1, b0;
	const int64_t skew = 1000000; /* b's clock runs 1 ms ahead */

	ms_proc_init(&a, dir, 0xa1, 100, 0);
	ms_label_type(&a, 1000, "Phase");
	ms_label_value(&a, 1000, 0, "none");
	ms_label_value(&a, 1000, 5, "five");
	ms_label_value(&a, 1001, 7, "seven");
	ms_label_state(&a, 40, 0x102030, "Custom");
	ms_label_func(&a, 0x400100, "compute");
	ms_label_thread(&a, 0, "main");
	ms_proc_end(&a, 1950);
	ms_thread_open(&a0, &a, 0);
	ms_push(&a0, 1000, 1);
	ms_event(&a0, 1100, 1000, 5);
	ms_event(&a0, 1100, 1001, 7);
	ms_push(&a0, 1200, 3);
	ms_comm(&a0, 1300, RECV | LOG | PHY, 1, 1, 16, 7);
	ms_pop(&a0, 1400);
	ms_enter(&a0, 1500, 0x400100);
	ms_exit(&a0, 1600, 0x400100);
	ms_pop(&a0, 1700);
	ms_event(&a0, 1800, 1000, 0);
	ms_thread_close(&a0);
	ms_thread_open(&a1, &a, 1);
	ms_push(&a1, 1150, 12);
	ms_comm(&a1, 1250, LOG | PHY, 1, 3, 64, 9);
	ms_pop(&a1, 1350);
	ms_thread_close(&a1);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xb2, 200, 1);
	snprintf(b.host, sizeof b.host, "node-b");
	ms_proc_end(&b, 2000 + skew);
	ms_thread_open(&b0, &b, 0);
	ms_sync(&b0, 1000 + skew, 0, 1000 + skew, -skew, 20);
	ms_push(&b0, 1050 + skew, 1);
	ms_comm(&b0, 1310 + skew, LOG | PHY, 0, 1, 16, 7);
	ms_comm(&b0, 1450 + skew, RECV | LOG | PHY, 0, 3, 64, 9);
	ms_pop(&b0, 1900 + skew);
	ms_thread_close(&b0);
	ms_proc_close(&b);
}

static const char prv1[] =
    "#Paraver (02/01/2024 at 03:04):1000_ns:2(2,1):1:2(2:1,1:2),0\n"
    "1:2:1:1:2:0:150:2\n"
    "1:1:1:1:1:0:200:1\n"
    "1:3:1:2:1:0:50:0\n"
    "1:3:1:2:1:50:900:1\n"
    "2:1:1:1:1:100:1000:5:1001:7\n"
    "1:2:1:1:2:150:350:12\n"
    "1:1:1:1:1:200:400:3\n"
    "3:2:1:1:2:250:250:3:1:2:1:450:450:64:3\n"
    "3:3:1:2:1:310:310:1:1:1:1:311:311:16:1\n"
    "1:2:1:1:2:350:950:0\n"
    "1:1:1:1:1:400:700:1\n"
    "2:1:1:1:1:500:60000019:2:60000119:1\n"
    "2:1:1:1:1:600:60000019:0:60000119:0\n"
    "1:1:1:1:1:700:950:0\n"
    "2:1:1:1:1:800:1000:0\n"
    "1:3:1:2:1:900:1000:0\n"
    "1:1:1:1:1:950:1000:2\n"
    "1:2:1:1:2:950:1000:2\n";

static const char pcf1[] = "DEFAULT_OPTIONS\n"
                           "\n"
                           "LEVEL               THREAD\n"
                           "UNITS               NANOSEC\n"
                           "LOOK_BACK           100\n"
                           "SPEED               1\n"
                           "FLAG_ICONS          ENABLED\n"
                           "NUM_OF_STATE_COLORS 1000\n"
                           "YMAX_SCALE          37\n"
                           "\n"
                           "\n"
                           "DEFAULT_SEMANTIC\n"
                           "\n"
                           "THREAD_FUNC          State As Is\n"
                           "\n"
                           "\n"
                           "STATES\n"
                           "0    Idle\n"
                           "1    Running\n"
                           "2    Not created\n"
                           "3    Waiting a message\n"
                           "4    Blocking Send\n"
                           "5    Synchronization\n"
                           "6    Test/Probe\n"
                           "7    Scheduling and Fork/Join\n"
                           "8    Wait/WaitAll\n"
                           "9    Blocked\n"
                           "10   Immediate Send\n"
                           "11   Immediate Receive\n"
                           "12   I/O\n"
                           "13   Group Communication\n"
                           "14   Tracing Disabled\n"
                           "15   Others\n"
                           "16   Send Receive\n"
                           "17   Memory transfer\n"
                           "18   Profiling\n"
                           "19   On-line analysis\n"
                           "20   Remote memory access\n"
                           "21   Atomic memory operation\n"
                           "22   Memory ordering operation\n"
                           "23   Distributed locking\n"
                           "24   Overhead\n"
                           "25   One-sided op\n"
                           "26   Startup latency\n"
                           "27   Waiting links\n"
                           "28   Data copy\n"
                           "29   RTT\n"
                           "30   Allocating memory\n"
                           "31   Freeing memory\n"
                           "32   Configuring accelerator\n"
                           "33   Stream Registration\n"
                           "40   Custom\n"
                           "\n"
                           "\n"
                           "STATES_COLOR\n"
                           "0    {117,195,255}\n"
                           "1    {0,0,255}\n"
                           "2    {255,255,255}\n"
                           "3    {255,0,0}\n"
                           "4    {255,0,174}\n"
                           "5    {179,0,0}\n"
                           "6    {0,255,0}\n"
                           "7    {255,255,0}\n"
                           "8    {235,0,0}\n"
                           "9    {0,162,0}\n"
                           "10   {255,0,255}\n"
                           "11   {100,100,177}\n"
                           "12   {172,174,41}\n"
                           "13   {255,144,26}\n"
                           "14   {2,255,177}\n"
                           "15   {192,224,0}\n"
                           "16   {66,66,66}\n"
                           "17   {255,0,96}\n"
                           "18   {169,169,169}\n"
                           "19   {169,0,0}\n"
                           "20   {0,109,255}\n"
                           "21   {200,61,68}\n"
                           "22   {200,66,0}\n"
                           "23   {0,41,0}\n"
                           "24   {139,121,177}\n"
                           "25   {116,116,116}\n"
                           "26   {200,50,89}\n"
                           "27   {255,171,98}\n"
                           "28   {0,68,189}\n"
                           "29   {52,43,0}\n"
                           "30   {255,46,0}\n"
                           "31   {100,216,32}\n"
                           "32   {118,185,0}\n"
                           "33   {80,185,160}\n"
                           "40   {16,32,48}\n"
                           "\n"
                           "\n"
                           "GRADIENT_COLOR\n"
                           "0    {0,255,2}\n"
                           "1    {0,244,13}\n"
                           "2    {0,232,25}\n"
                           "3    {0,220,37}\n"
                           "4    {0,209,48}\n"
                           "5    {0,197,60}\n"
                           "6    {0,185,72}\n"
                           "7    {0,173,84}\n"
                           "8    {0,162,95}\n"
                           "9    {0,150,107}\n"
                           "10   {0,138,119}\n"
                           "11   {0,127,130}\n"
                           "12   {0,115,142}\n"
                           "13   {0,103,154}\n"
                           "14   {0,91,166}\n"
                           "\n"
                           "\n"
                           "GRADIENT_NAMES\n"
                           "0    Gradient 0\n"
                           "1    Grad. 1/MPI Events\n"
                           "2    Grad. 2/OMP Events\n"
                           "3    Grad. 3/OMP locks\n"
                           "4    Grad. 4/User func\n"
                           "5    Grad. 5/User Events\n"
                           "6    Grad. 6/General Events\n"
                           "7    Grad. 7/Hardware Counters\n"
                           "8    Gradient 8\n"
                           "9    Gradient 9\n"
                           "10   Gradient 10\n"
                           "11   Gradient 11\n"
                           "12   Gradient 12\n"
                           "13   Gradient 13\n"
                           "14   Gradient 14\n"
                           "\n"
                           "\n"
                           "EVENT_TYPE\n"
                           "0    1000       Phase\n"
                           "VALUES\n"
                           "0      none\n"
                           "5      five\n"
                           "\n"
                           "\n"
                           "EVENT_TYPE\n"
                           "0    1001       Event type 1001\n"
                           "VALUES\n"
                           "7      seven\n"
                           "\n"
                           "\n"
                           "EVENT_TYPE\n"
                           "0    60000019   User function\n"
                           "VALUES\n"
                           "0      End\n"
                           "1      ??\n"
                           "2      compute\n"
                           "\n"
                           "\n"
                           "EVENT_TYPE\n"
                           "0    60000119   User function line\n"
                           "VALUES\n"
                           "0      End\n"
                           "1      ??:0 [??:0, ??]\n"
                           "\n"
                           "\n";

static const char row1[] = "LEVEL CPU SIZE 3\n"
                           "1.node-a\n"
                           "2.node-a\n"
                           "3.node-b\n"
                           "\n"
                           "LEVEL NODE SIZE 2\n"
                           "node-a\n"
                           "node-b\n"
                           "\n"
                           "LEVEL APPL SIZE 1\n"
                           "gold\n"
                           "\n"
                           "LEVEL TASK SIZE 2\n"
                           "task 1 (pid 100 on node-a)\n"
                           "task 2 (pid 200 on node-b)\n"
                           "\n"
                           "LEVEL THREAD SIZE 3\n"
                           "task 1 thread 1 (main)\n"
                           "task 1 thread 2\n"
                           "task 2 thread 1\n"
                           "\n";

static void
test_trace1(void)
{
	const char *dir = tu_tmpdir("golden1");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;

	trace1(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mt_expect(prefix, ".prv", prv1);
	mt_expect(prefix, ".pcf", pcf1);
	mt_expect(prefix, ".row", row1);
	mt_check(prefix, PC_ALL, NULL);
	CHECK_EQ_U64(rep.comms, 2);
	CHECK_EQ_U64(rep.recv_moved, 1);
	CHECK_EQ_U64(rep.recv_max_shift, 11);
	CHECK_EQ_U64(rep.recv_beyond, 1); /* 11 ns > half of 20 ns */
	CHECK_EQ_U64(rep.unmatched_sends + rep.unmatched_recvs, 0);
	CHECK_EQ_U64(rep.records_in, 18);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* ---- Trace 2: late, early, missing task, thread gap ------------------- */

static void
trace2(const char *dir)
{
	ms_proc p0, p1, p3;
	ms_thread t;

	ms_proc_init(&p0, dir, 0x10, 10, 0);
	ms_proc_end(&p0, 1000);
	ms_thread_open(&t, &p0, 0);
	ms_push(&t, 100, 1);
	ms_pop(&t, 900);
	ms_thread_close(&t);
	ms_proc_close(&p0);

	ms_proc_init(&p1, dir, 0x11, 11, 1); /* joins late, leaves early */
	ms_proc_end(&p1, 650);
	ms_thread_open(&t, &p1, 0);
	ms_push(&t, 500, 1);
	ms_event(&t, 550, 1000, 1);
	ms_pop(&t, 600);
	ms_thread_close(&t);
	ms_proc_close(&p1);

	ms_proc_init(&p3, dir, 0x13, 13, 3); /* killed: never ended */
	ms_thread_open(&t, &p3, 0);
	ms_push(&t, 200, 5);
	ms_pop(&t, 300);
	ms_thread_close(&t);
	ms_thread_open(&t, &p3, 2);
	ms_event(&t, 400, 1000, 2);
	ms_event(&t, 400, 1000, 3);
	ms_event(&t, 400, 1001, 4);
	ms_thread_close(&t);
	ms_proc_close(&p3);
}

static const char prv2[] =
    "#Paraver (02/01/2024 at 03:04):900_ns:1(6):1:4(1:1,1:1,1:1,3:1),0\n"
    "1:2:1:2:1:0:400:2\n"
    "1:4:1:4:1:0:100:2\n"
    "1:6:1:4:3:0:300:2\n"
    "1:1:1:1:1:0:800:1\n"
    "1:4:1:4:1:100:200:5\n"
    "1:4:1:4:1:200:900:2\n"
    "2:6:1:4:3:300:1000:2:1000:3:1001:4\n"
    "1:6:1:4:3:300:900:2\n"
    "1:2:1:2:1:400:500:1\n"
    "2:2:1:2:1:450:1000:1\n"
    "1:2:1:2:1:500:550:0\n"
    "1:2:1:2:1:550:900:2\n"
    "1:1:1:1:1:800:900:0\n";

static const char row2[] = "LEVEL CPU SIZE 6\n"
                           "1.node-a\n"
                           "2.node-a\n"
                           "3.node-a\n"
                           "4.node-a\n"
                           "5.node-a\n"
                           "6.node-a\n"
                           "\n"
                           "LEVEL NODE SIZE 1\n"
                           "node-a\n"
                           "\n"
                           "LEVEL APPL SIZE 1\n"
                           "gold\n"
                           "\n"
                           "LEVEL TASK SIZE 4\n"
                           "task 1 (pid 10 on node-a)\n"
                           "task 2 (pid 11 on node-a)\n"
                           "task 3 (not traced)\n"
                           "task 4 (pid 13 on node-a)\n"
                           "\n"
                           "LEVEL THREAD SIZE 6\n"
                           "task 1 thread 1\n"
                           "task 2 thread 1\n"
                           "task 3 thread 1\n"
                           "task 4 thread 1\n"
                           "task 4 thread 2\n"
                           "task 4 thread 3\n"
                           "\n";

static void
test_trace2(void)
{
	const char *dir = tu_tmpdir("golden2");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;

	trace2(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mt_expect(prefix, ".prv", prv2);
	mt_expect(prefix, ".row", row2);
	mt_check(prefix, PC_ALL, NULL);
	CHECK_EQ_U64(rep.tasks, 4);
	CHECK_EQ_U64(rep.threads, 6);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	test_trace1();
	test_trace2();
	return tu_report("merge_golden");
}
